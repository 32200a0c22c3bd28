// CloudFront Function (viewer request, cloudfront-js-2.0). Plain script, no imports or exports:
// CloudFront runs the file as-is; test/infra evaluates the same file with node:vm.
//
// API Gateway HTTP APIs route `/path/` and `/path` differently and CDK refuses routes ending in
// `/`, while PostHog clients call both forms. Stripping one slash here lets one route serve both.
function handler(event) {
  var request = event.request;
  var uri = request.uri;
  if (uri.length > 1 && uri.charAt(uri.length - 1) === '/') {
    request.uri = uri.slice(0, -1);
  }
  // The origin request policy replaces Host with the API Gateway domain (API Gateway rejects any
  // other), so hand the viewer's host on separately: the API builds absolute `next`/`previous`
  // links from it. Always overwritten, so a client cannot choose the host of those links.
  var host = request.headers.host;
  if (host) {
    request.headers['x-forwarded-host'] = { value: host.value };
  } else {
    delete request.headers['x-forwarded-host'];
  }
  return request;
}
