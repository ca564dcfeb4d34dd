// node:http through require rather than an ESM import. An ESM import of a built-in module reads
// every export to build its namespace, and node:http's exports include lazy getters (WebSocket,
// CloseEvent, MessageEvent) that load Node's bundled undici with its WebAssembly parser: about
// 10 MB of resident memory (RSS of bare node 46.2 → 56.7 MB) the service never uses.
// One ESM `import … from 'node:http'` anywhere in the process costs it, so every module takes
// node:http from here; `import type` from 'node:http' is erased and costs nothing.
import { createRequire } from 'node:module';

// `import * as http from './core/http.ts'` reads like the module itself: http.Agent is a type and a value.
const http = createRequire(import.meta.url)('node:http') as typeof import('node:http');

export const { Agent, createServer, maxHeaderSize, request, STATUS_CODES } = http;
export type Agent = import('node:http').Agent;
// The module's types too (IncomingMessage, IncomingHttpHeaders…): type-only, erased.
export type * from 'node:http';
