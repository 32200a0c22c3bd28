/**
 * Capture is called from browsers on any site (posthog-js), so it answers CORS the way PostHog does:
 * the caller's origin mirrored, credentials allowed. The management API sends no CORS headers.
 */
export function captureCorsHeaders(origin: string | undefined): Record<string, string> {
  if (!origin) return {};
  return { 'Access-Control-Allow-Origin': origin, 'Access-Control-Allow-Credentials': 'true', Vary: 'Origin' };
}

export function capturePreflightHeaders(origin: string | undefined, requestedHeaders: string | undefined): Record<string, string> {
  return {
    ...captureCorsHeaders(origin ?? '*'),
    'Access-Control-Allow-Methods': 'POST, OPTIONS',
    'Access-Control-Allow-Headers': requestedHeaders ?? 'content-type, content-encoding',
    'Access-Control-Max-Age': '86400',
  };
}
