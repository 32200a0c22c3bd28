/**
 * Capture is called from browsers on any site (posthog-js), so it answers CORS the way PostHog does:
 * the caller's origin mirrored, credentials allowed. The management API sends no CORS headers.
 */
export function captureCorsHeaders(origin: string | undefined): Record<string, string> {
  if (!origin) return {};
  return { 'Access-Control-Allow-Origin': origin, 'Access-Control-Allow-Credentials': 'true', Vary: 'Origin' };
}

/**
 * Remote config and the SDK's scripts are the same for every site and cached (CloudFront, browsers):
 * `*`, as PostHog's asset CDN answers, so a cached copy never carries another site's origin. The SDK
 * loads them without credentials (a script tag with crossorigin="anonymous", a plain fetch).
 */
export const PUBLIC_ASSET_CORS_HEADERS: Readonly<Record<string, string>> = { 'Access-Control-Allow-Origin': '*' };

export function capturePreflightHeaders(
  origin: string | undefined,
  requestedHeaders: string | undefined,
): Record<string, string> {
  return {
    ...captureCorsHeaders(origin ?? '*'),
    'Access-Control-Allow-Methods': 'GET, POST, OPTIONS',
    'Access-Control-Allow-Headers': requestedHeaders ?? 'content-type, content-encoding',
    'Access-Control-Max-Age': '86400',
  };
}
