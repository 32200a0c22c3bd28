import { publicHandler } from '#shared/http/handler.ts';
import { ok } from '#shared/http/responses.ts';
import { openApiDocument } from '#shared/domain/api-document.ts';
import { route } from '../routes.ts';

export const handler = publicHandler(route('schema'), async () => ok(openApiDocument()));
