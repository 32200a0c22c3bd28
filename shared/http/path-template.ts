/**
 * The route table's path templates (`/api/projects/:project_id/persons/:id`), read in one place. A
 * parameter is a whole segment `:name`; every other segment is literal. API Gateway route keys and
 * OpenAPI paths spell parameters `{name}` (bracedPath); the local server and the deployed fallback
 * match request paths against the template (matchPath, through shared/http/router.ts).
 */
const PARAM = /^:([A-Za-z0-9_]+)$/;

const paramOf = (segment: string) => PARAM.exec(segment)?.[1];

/** `/api/organizations/:id` -> `/api/organizations/{id}` (API Gateway and OpenAPI). */
export function bracedPath(template: string): string {
  return template
    .split('/')
    .map((segment) => {
      const name = paramOf(segment);
      return name === undefined ? segment : `{${name}}`;
    })
    .join('/');
}

/** Parameter names in path order: `/api/projects/:project_id/persons/:id` -> `['project_id', 'id']`. */
export function pathParamNames(template: string): string[] {
  return template.split('/').flatMap((segment) => paramOf(segment) ?? []);
}

/**
 * The parameters of `path` under `template` (URL-decoded), or undefined when it does not match: same
 * number of segments, literals equal, every parameter segment non-empty and validly percent-encoded.
 */
export function matchPath(template: string, path: string): Record<string, string> | undefined {
  const want = template.split('/');
  const got = path.split('/');
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i += 1) {
    const name = paramOf(want[i]!);
    const segment = got[i]!;
    if (name === undefined) {
      if (want[i] !== segment) return undefined;
      continue;
    }
    if (segment === '') return undefined;
    try {
      params[name] = decodeURIComponent(segment);
    } catch {
      return undefined;
    }
  }
  return params;
}
