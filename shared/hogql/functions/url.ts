/**
 * URL functions as ClickHouse's: they cut the text without decoding it, and give '' when the part
 * is absent. A URL without a scheme (`example.com/a`) still has a domain, as in ClickHouse.
 */
import { toText } from '../convert.ts';
import type { HogValue } from '../values.ts';
import { type ScalarFunction, scalar } from './types.ts';

const SCHEME = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//;

export function protocol(url: string): string {
  return SCHEME.exec(url)?.[1] ?? '';
}

/** Where the host starts and ends (after `scheme://` and `user@`, before `:port`, `/`, `?`, `#`). */
function hostRange(url: string): [number, number] | null {
  const scheme = SCHEME.exec(url);
  let start = scheme ? scheme[0].length : url.startsWith('//') ? 2 : 0;
  let end = start;
  while (end < url.length && !'/?#'.includes(url[end] as string)) end++;
  const authority = url.slice(start, end);
  const at = authority.lastIndexOf('@');
  if (at >= 0) start += at + 1;
  let hostEnd = start;
  while (hostEnd < end && url[hostEnd] !== ':') hostEnd++;
  if (hostEnd === start) return null;
  const host = url.slice(start, hostEnd);
  if (!/^[A-Za-z0-9._~%!$&'()*+,;=\-[\]]+$/.test(host)) return null;
  // Without a scheme, text that is not a host name (a path, a word) has no domain.
  if (!scheme && !host.includes('.')) return null;
  return [start, hostEnd];
}

export function domain(url: string): string {
  const r = hostRange(url);
  return r ? url.slice(r[0], r[1]) : '';
}

export function topLevelDomain(url: string): string {
  const host = domain(url).replace(/\.$/, '');
  const dot = host.lastIndexOf('.');
  if (dot < 0) return '';
  const tld = host.slice(dot + 1);
  return /^[0-9]+$/.test(tld) ? '' : tld;
}

/** The path without query string and fragment; '' when the URL has none. */
export function path(url: string): string {
  const scheme = SCHEME.exec(url);
  let i = scheme ? scheme[0].length : url.startsWith('//') ? 2 : 0;
  if (scheme || i === 2) while (i < url.length && !'/?#'.includes(url[i] as string)) i++;
  else {
    const r = hostRange(url);
    if (r) i = r[1];
    while (i < url.length && !'/?#'.includes(url[i] as string)) i++;
  }
  if (url[i] !== '/') return '';
  let end = i;
  while (end < url.length && url[end] !== '?' && url[end] !== '#') end++;
  return url.slice(i, end);
}

/** Drops `?query` (the question mark too) and keeps a `#fragment`. */
export function cutQueryString(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const hash = url.indexOf('#', q);
  return url.slice(0, q) + (hash < 0 ? '' : url.slice(hash));
}

/** The first `name=value` after `?` (or `#`), undecoded; '' when absent. */
export function extractURLParameter(url: string, name: string): string {
  let i = url.search(/[?#]/);
  if (i < 0 || name === '') return '';
  while (i < url.length) {
    const start = i + 1;
    let end = start;
    while (end < url.length && url[end] !== '&' && url[end] !== '#' && url[end] !== '?') end++;
    const pair = url.slice(start, end);
    if (pair.startsWith(`${name}=`)) return pair.slice(name.length + 1);
    if (pair === name) return '';
    i = end;
  }
  return '';
}

const str = (v: HogValue | undefined) => toText(v ?? null);

export const URLS: ScalarFunction[] = [
  scalar('protocol', 1, 1, ([u]) => protocol(str(u))),
  scalar('domain', 1, 1, ([u]) => domain(str(u))),
  scalar('topLevelDomain', 1, 1, ([u]) => topLevelDomain(str(u))),
  scalar('path', 1, 1, ([u]) => path(str(u))),
  scalar('cutQueryString', 1, 1, ([u]) => cutQueryString(str(u))),
  scalar('extractURLParameter', 2, 2, ([u, n]) => extractURLParameter(str(u), str(n))),
];
