// GET /openapi.json: the service described in OpenAPI 3.1 (document.ts), serialised once.
import { Router } from 'express';
import { openApiDocument } from './document.ts';

export { buildOpenApiDocument, openApiDocument } from './document.ts';

export function openApiRouter(): Router {
  let text: string | undefined;
  return Router().get('/openapi.json', (_req, res) => {
    text ??= JSON.stringify(openApiDocument());
    res.type('application/json').send(text);
  });
}
