import { ParseError } from '../errors.ts';

/** Parts one form may have: a cohort upload has a handful of fields and one file. */
export const MAX_MULTIPART_PARTS = 50;

/**
 * A multipart/form-data body (RFC 7578) as `{field: text}`: file parts are read as UTF-8 text like
 * the other fields (the API's one upload is a CSV). The body is already within the pipeline's size cap;
 * a field given twice keeps its last value. Hand-written: one bounded loop, no new dependency.
 */
export function parseMultipart(body: Buffer, contentType: string): Record<string, string> {
  const boundary = /boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType);
  const b = boundary?.[1] ?? boundary?.[2];
  if (!b) throw new ParseError('Multipart form parse error - Invalid boundary in multipart: None');
  const delimiter = Buffer.from(`--${b}`);
  const fields: Record<string, string> = {};
  let at = body.indexOf(delimiter);
  if (at < 0) throw new ParseError('Multipart form parse error - no parts.');
  for (let parts = 0; ; parts++) {
    at += delimiter.length;
    // `--` after a delimiter closes the form.
    if (body[at] === 0x2d && body[at + 1] === 0x2d) return fields;
    if (parts >= MAX_MULTIPART_PARTS)
      throw new ParseError(`Multipart form parse error - more than ${MAX_MULTIPART_PARTS} parts.`);
    const headersEnd = body.indexOf('\r\n\r\n', at);
    const next = body.indexOf(delimiter, at);
    if (headersEnd < 0 || next < 0 || headersEnd > next)
      throw new ParseError('Multipart form parse error - a part is not terminated.');
    const headers = body.subarray(at, headersEnd).toString('utf8');
    const name = /content-disposition:[^\r\n]*\bname="([^"]*)"/i.exec(headers)?.[1];
    // The part's content ends with the CRLF that precedes the next delimiter.
    const end = body[next - 2] === 0x0d && body[next - 1] === 0x0a ? next - 2 : next;
    if (name !== undefined) fields[name] = body.subarray(headersEnd + 4, end).toString('utf8');
    at = next;
  }
}
