// The error catalogue (src/core/error-catalogue.ts) is the one place an error code is defined:
// each code once, with a status HTTP has, raised as the HttpError the wire has always carried;
// no literal code is raised anywhere else in src/; and every code the OpenAPI document names is
// one of the catalogue's, under the status the catalogue gives it.
import { readdirSync, readFileSync } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../../src/api/openapi/index.ts';
import { apiError, ERRORS, errorClass, notFound, statusOf, type ErrorCode } from '../../src/core/error-catalogue.ts';
import { HttpError } from '../../src/core/errors.ts';
import { projectFile } from '../../src/core/project.ts';
import { ConflictError } from '../../src/manifests/store.ts';

const SRC = projectFile('src');
const CATALOGUE_FILE = 'src/core/error-catalogue.ts';
const CODES = Object.keys(ERRORS) as ErrorCode[];

/** Where an error is made with a literal code, or an HttpError is made outside the catalogue. */
const LITERAL_SITES: Array<[what: string, pattern: RegExp]> = [
  ['new HttpError(…) outside the catalogue', /\bnew\s+HttpError\s*\(/g],
  ['writeError/writeRawError with a literal code', /\bwrite(?:Raw)?Error\s*\(\s*[^,()]+,\s*[^,]+,\s*['"`][A-Z][A-Z0-9_]*['"`]/g],
  ['writeError/writeRawError with a literal status', /\bwrite(?:Raw)?Error\s*\(\s*[^,()]+,\s*\d{3}\s*,/g],
  ['errorBody with a literal code', /\berrorBody\s*\(\s*['"`][A-Z][A-Z0-9_]*['"`]/g],
  ['a [status, \'CODE\'] tuple', /\[\s*\d{3}\s*,\s*['"`][A-Z][A-Z0-9_]*['"`]/g],
  ['super(status, \'CODE\')', /\bsuper\s*\(\s*\d{3}\s*,\s*['"`][A-Z][A-Z0-9_]*['"`]/g],
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** `file:line what` for every literal site in a file; comment lines are skipped. */
function literalSites(file: string, text: string): string[] {
  const code = text.replace(/^[ \t]*\/\/.*$/gm, '').replace(/^[ \t]*\/?\*.*$/gm, (line) => line.replace(/[^\n]/g, ' '));
  const sites: string[] = [];
  for (const [what, pattern] of LITERAL_SITES) {
    for (const match of code.matchAll(pattern)) sites.push(`${file}:${code.slice(0, match.index).split('\n').length} ${what}`);
  }
  return sites;
}

const isErrorStatus = (status: number) => Number.isInteger(status) && status >= 400 && status <= 599 && STATUS_CODES[status] !== undefined;

describe('the error catalogue', () => {
  it('defines each code once, as its own wire string', () => {
    const text = readFileSync(projectFile(CATALOGUE_FILE), 'utf8');
    const defined = [...text.matchAll(/^ {2}([A-Z][A-Z0-9_]*): \{/gm)].map((m) => m[1]);
    expect(defined.length).toBeGreaterThan(50);
    expect(new Set(defined).size).toBe(defined.length);
    expect(defined.sort()).toEqual([...CODES].sort());
    for (const code of CODES) expect(code).toMatch(/^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$/);
  });

  it('gives every code an HTTP error status, and its other statuses too', () => {
    for (const code of CODES) {
      const definition: { status: number; alsoStatus?: readonly number[] | string } = ERRORS[code];
      expect(isErrorStatus(definition.status), `${code}: ${definition.status}`).toBe(true);
      expect(statusOf(code)).toBe(definition.status);
      const also = definition.alsoStatus;
      if (Array.isArray(also)) {
        for (const status of also) expect(isErrorStatus(status) && status !== definition.status, `${code}: ${status}`).toBe(true);
      } else if (also !== undefined) {
        expect(also).toBe('client error');
      }
    }
    // Only the two codes that carry a status someone else chose (ws, express) have another one.
    expect(CODES.filter((code) => 'alsoStatus' in ERRORS[code]).sort()).toEqual(['BAD_HANDSHAKE', 'BAD_REQUEST']);
  });

  it('gives every code a message, fixed or filled from a template', () => {
    for (const code of CODES) {
      const { message } = ERRORS[code];
      if (typeof message === 'string') expect(message.length, code).toBeGreaterThan(10);
      else expect(typeof message, code).toBe('function');
    }
  });
});

describe('apiError', () => {
  it('makes the HttpError a site made before: status, code, message and details', () => {
    const error = apiError('NO_FREE_PORT', { min: 9000, max: 9099 });
    expect(error).toBeInstanceOf(HttpError);
    expect(error).toMatchObject({ status: 409, code: 'NO_FREE_PORT', message: 'no free port left in 9000-9099: delete a server, or widen ports in the config' });
    expect(error.details).toBeUndefined();

    const invalid = apiError('INVALID_BODY', 'name: is required', { details: { problems: ['name: is required'] } });
    expect(invalid).toMatchObject({ status: 400, code: 'INVALID_BODY', message: 'name: is required', details: { problems: ['name: is required'] } });

    expect(notFound('abc')).toMatchObject({ status: 404, code: 'SERVER_NOT_FOUND', message: 'no server has the id "abc": list the servers with GET /servers' });
    expect(apiError('INTERNAL').message).toBe('the service failed to handle this request; its log has the details');
    expect(apiError('INVALID_TAIL', { value: 'x', min: 0, max: 1000, defaultValue: 100 }).message)
      .toBe('"tail" must be a whole number from 0 to 1000, not "x": change ?tail= or leave it out for the default of 100');
  });

  it('uses the fixed text when the site gives none', () => {
    for (const code of CODES) {
      const { message, status } = ERRORS[code];
      if (typeof message !== 'string') continue;
      const error = (apiError as (code: ErrorCode) => HttpError)(code);
      expect(error).toMatchObject({ status, code, message });
    }
  });

  it('answers another status only where the catalogue allows one', () => {
    expect(apiError('BAD_HANDSHAKE', { problem: 'Invalid HTTP method' }, { status: 405 }).status).toBe(405);
    expect(apiError('BAD_HANDSHAKE', { problem: 'Missing key' }).status).toBe(400);
    expect(apiError('BAD_REQUEST', 'unsupported charset "X"', { status: 415 }).status).toBe(415);
    expect(() => apiError('BAD_HANDSHAKE', { problem: 'x' }, { status: 404 as 405 })).toThrow(/BAD_HANDSHAKE is answered with 400, not 404/);
    expect(() => apiError('BAD_REQUEST', 'x', { status: 500 })).toThrow(/BAD_REQUEST/);
    expect(() => (apiError as (code: string, m: string, o: object) => HttpError)('INVALID_BODY', 'x', { status: 422 })).toThrow(/INVALID_BODY/);
  });

  it('makes a class of its own for a layer that tells its error apart (ConflictError)', () => {
    const error = new ConflictError('a.yaml kept changing');
    expect(error).toBeInstanceOf(ConflictError);
    expect(error).toBeInstanceOf(HttpError);
    expect(error).toMatchObject({ name: 'ConflictError', status: 409, code: 'CONFLICT', message: 'a.yaml kept changing' });
    const Restoring = errorClass('SERVER_RESTORING');
    expect(new Restoring()).toMatchObject({ status: 409, code: 'SERVER_RESTORING', message: ERRORS.SERVER_RESTORING.message });
  });
});

describe('src/ raises errors through the catalogue', () => {
  const files = sourceFiles(SRC).map((path) => ({ path, file: relative(projectFile('.'), path).split('\\').join('/') }));

  it('has no literal error code outside the catalogue, but in the files the lead converts', () => {
    const found = files
      .filter(({ file }) => file !== CATALOGUE_FILE && file !== 'src/core/errors.ts')
      .flatMap(({ path, file }) => literalSites(file, readFileSync(path, 'utf8')));
    expect(found, 'raise these with apiError(code, …) from src/core/error-catalogue.ts (add the code there if it is new)').toEqual([]);
  });

  it('lets the wake page\'s script (which runs in the browser) match only codes of the catalogue', () => {
    const text = readFileSync(projectFile('src/proxy/wake-page.ts'), 'utf8');
    const matched = [...text.matchAll(/\.code === '([A-Z][A-Z0-9_]*)'/g)].map((m) => m[1]);
    expect(matched).toEqual(['EDITOR_UNAVAILABLE', 'EDITOR_NOT_FOUND']);
    for (const code of matched) expect(ERRORS).toHaveProperty(code);
  });

  it('would find each kind of literal site', () => {
    const sample = [
      "throw new HttpError(400, 'INVALID_BODY', 'x');",
      "writeError(res, 404, 'NOT_FOUND', 'x');",
      "writeRawError(socket, req.method === 'GET' ? 400 : 405, 'BAD_HANDSHAKE', 'x');",
      "const body = errorBody('EDITOR_FAILED', message);",
      "return [431, 'HEADERS_TOO_LARGE', 'x'];",
      "super(409, 'CONFLICT', message);",
      'new HttpError(400, `INVALID_${name.toUpperCase()}`, message);',
      "writeError(res, apiError('EDITOR_NOT_FOUND', { port }));",
      '// new HttpError(400, \'IN_A_COMMENT\', \'x\')',
    ].join('\n');
    expect(literalSites('sample.ts', sample).map((site) => site.split(' ')[0])).toEqual([
      'sample.ts:1', 'sample.ts:7', // new HttpError
      'sample.ts:2', 'sample.ts:3', // literal code
      'sample.ts:2', // literal status
      'sample.ts:4', 'sample.ts:5', 'sample.ts:6',
    ]);
  });
});

describe('the OpenAPI document', () => {
  /** Backquoted words in capitals that are not codes. */
  const HTTP_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH']);

  /** Every `CODE` a description names, with the response status it is under (undefined outside a response). */
  function namedCodes(node: unknown, status?: string, found: Array<{ code: string; status?: string }> = []) {
    if (Array.isArray(node)) {
      for (const item of node) namedCodes(item, status, found);
    } else if (node && typeof node === 'object') {
      for (const [key, value] of Object.entries(node)) {
        if (key === 'responses' && value && typeof value === 'object') {
          for (const [responseStatus, response] of Object.entries(value)) namedCodes(response, responseStatus, found);
        } else if (key === 'description' && typeof value === 'string') {
          for (const match of value.matchAll(/`([A-Z][A-Z0-9_]*)`/g)) {
            if (!HTTP_METHODS.has(match[1])) found.push({ code: match[1], status });
          }
        } else {
          namedCodes(value, status, found);
        }
      }
    }
    return found;
  }

  it('names only codes of the catalogue, each under a status the catalogue gives it', () => {
    const named = namedCodes(openApiDocument());
    expect(named.length).toBeGreaterThan(40);
    const unknown = named.filter(({ code }) => !(code in ERRORS)).map(({ code }) => code);
    expect(unknown, 'codes the OpenAPI document names that src/core/error-catalogue.ts does not define').toEqual([]);
    const misplaced = named.filter(({ code, status }) => {
      if (status === undefined || !/^\d{3}$/.test(status)) return false;
      const definition: { status: number; alsoStatus?: readonly number[] | string } = ERRORS[code as ErrorCode];
      const also = definition.alsoStatus;
      return Number(status) !== definition.status && !(Array.isArray(also) && also.includes(Number(status)))
        && !(also === 'client error' && status.startsWith('4'));
    });
    expect(misplaced, 'codes documented under another status than the catalogue gives them').toEqual([]);
  });
});
