/**
 * `npm run openapi`: writes docs/openapi.json, the OpenAPI 3.1 document `GET /api/schema` serves.
 *
 * Imports every handler module the route table names and reads the route and valibot schemas the
 * handler factory attached to it, so the document describes exactly what the handlers validate.
 * Built here rather than in the Lambda, which would otherwise bundle every handler; a test fails
 * when the committed file is stale.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { projectLevelPath, routes, type Route } from '#functions/routes.ts';
import type { Schemas } from '#shared/http/handler.ts';
import { buildOpenApi, serializeOpenApi, type OpenApiDocument } from '#infra/openapi/document.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const OPENAPI_FILE = join(ROOT, 'docs', 'openapi.json');

interface HandlerModule {
  handler?: { route?: unknown; schemas?: Schemas };
}

/**
 * The operationId of an environment-level operation at its /api/projects path: PostHog names the two
 * paths' operations apart too (`persons_list`, `environments_persons_list`).
 */
export const projectLevelOperationId = (operationId: string) => `projects_${operationId}`;

/** The document for the current route table and handlers. */
export async function generateOpenApi(): Promise<OpenApiDocument> {
  const entries = [];
  for (const route of routes as readonly Route[]) {
    const module = (await import(pathToFileURL(join(ROOT, 'functions', `${route.handler}.ts`)).href)) as HandlerModule;
    const handler = module.handler;
    if (!handler?.schemas)
      throw new Error(
        `functions/${route.handler}.ts: its handler carries no schemas (build it with apiHandler or publicHandler)`,
      );
    if (handler.route !== route)
      throw new Error(
        `functions/${route.handler}.ts: its handler was built for another route than ${route.operationId}`,
      );
    entries.push({ route, schemas: handler.schemas });
    const projectLevel = projectLevelPath(route.path);
    if (projectLevel)
      entries.push({
        route: {
          ...route,
          path: projectLevel,
          operationId: projectLevelOperationId(route.operationId),
          aliasOf: { operationId: route.operationId, path: route.path },
        },
        schemas: handler.schemas,
      });
  }
  const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
  return buildOpenApi(entries, { title: 'Analytics API', version });
}

export async function writeOpenApi(file = OPENAPI_FILE): Promise<OpenApiDocument> {
  const document = await generateOpenApi();
  await writeFile(file, serializeOpenApi(document));
  return document;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const document = await writeOpenApi();
  const operations = Object.values(document.paths as Record<string, Record<string, unknown>>).reduce(
    (n, item) => n + Object.keys(item).filter((k) => k !== '$ref').length,
    0,
  );
  console.log(`wrote ${OPENAPI_FILE}: ${operations} operations, ${Object.keys(document.paths as object).length} paths`);
}
