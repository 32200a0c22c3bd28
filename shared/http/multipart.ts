import type { Busboy } from '@fastify/busboy';
import { ParseError } from '../errors.ts';

/** Parts one form may have: a cohort upload has a handful of fields and one file. */
export const MAX_MULTIPART_PARTS = 50;

/**
 * A multipart/form-data body (RFC 7578) as `{field: text}`, read by @fastify/busboy (the parser under
 * @middy/http-multipart-body-parser, used directly: that middleware answers every malformed form with
 * a 415 and lets busboy drop the parts over its limit silently). File parts are read as UTF-8 text
 * like the other fields (the API's one upload is a CSV). The body is already within the pipeline's
 * size cap, so no field is cut short below it; a field given twice keeps its last value. What busboy
 * refuses, a form of more than MAX_MULTIPART_PARTS parts, or one that ends inside a part, is a 400
 * `parse_error` in DRF's wording.
 */
export async function parseMultipart(body: Buffer, contentType: string): Promise<Record<string, string>> {
  // Loaded when a form arrives (a cohort's upload), not at every function's init.
  const { Busboy } = await import('@fastify/busboy');
  const fail = (why: string) => new ParseError(`Multipart form parse error - ${why}`);
  let busboy: Busboy;
  try {
    busboy = Busboy({
      headers: { 'content-type': contentType },
      limits: { parts: MAX_MULTIPART_PARTS, fieldSize: body.length, fileSize: body.length },
    });
  } catch {
    throw fail('Invalid boundary in multipart: None');
  }
  return new Promise((resolve, reject) => {
    const fields: Record<string, string> = {};
    let settled = false;
    const refuse = (error: ParseError) => {
      if (settled) return;
      settled = true;
      reject(error);
    };
    busboy
      .on('field', (name, value) => {
        fields[name] = value;
      })
      .on('file', (name, stream) => {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          fields[name] = Buffer.concat(chunks).toString('utf8');
        });
      })
      .on('partsLimit', () => refuse(fail(`more than ${MAX_MULTIPART_PARTS} parts.`)))
      .on('error', (error: Error) => refuse(fail(`${error.message}.`)))
      .on('finish', () => {
        if (settled) return;
        settled = true;
        resolve(fields);
      });
    busboy.end(body);
  });
}
