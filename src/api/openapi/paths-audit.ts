// The audit trail's routes (src/audit/routes.ts) and shapes, spread into PATHS and SCHEMAS (so
// this file imports neither: shapes.ts reads AUDIT_SCHEMAS from here).
type Json = Record<string, unknown>;

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Json, description: string): Json => ({ description, content: { 'application/json': { schema } } });
const BAD_QUERY = json(ref('Error'), 'A filter or page parameter is not valid (`INVALID_PAGE`: the message names it and what to give).');

const QUERY: Json[] = [
  { name: 'server', in: 'query', schema: { type: 'string' }, description: 'Only entries of this server: its id, or its manifest name.' },
  { name: 'actor', in: 'query', schema: { type: 'string' }, description: 'Only entries by this person (their signed-in identity), or `local`, `controller`, `file`, `cluster`.' },
  { name: 'action', in: 'query', schema: { type: 'string' }, description: 'Only these actions, separated by commas (create, edit, start, stop, restart, delete, undelete, snapshot, snapshot-restore, share, revoke, idle-stop, capacity-stop, restore).' },
  { name: 'door', in: 'query', schema: { enum: ['api', 'dashboard', 'proxy', 'manifest', 'cluster', 'controller'] }, description: 'Only entries that came through this door.' },
  { name: 'since', in: 'query', schema: { type: 'string', format: 'date-time' }, description: 'Only entries at or after this time.' },
  { name: 'until', in: 'query', schema: { type: 'string', format: 'date-time' }, description: 'Only entries at or before this time.' },
  { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 500, default: 50 }, description: 'At most this many entries, newest first.' },
  { name: 'cursor', in: 'query', schema: { type: 'string' }, description: 'The `next_cursor` of the previous page: the next page holds older entries only, whatever was appended meanwhile.' },
];

const page = (what: string): Json => json(ref('AuditPage'), what);

export const AUDIT_PATHS: Record<string, Json> = {
  '/audit': {
    get: {
      tags: ['audit'], operationId: 'listAudit', summary: 'The audit trail: who changed what, when, through which door, and how it ended',
      description: 'Newest first, a page at a time. Admins, a run without sign-on and `access: shared` see every entry; a signed-in person sees the entries of the servers they may see, and their own.',
      parameters: QUERY,
      responses: { 200: page('A page of entries, with the trail\'s newest seq and hash.'), 400: BAD_QUERY },
    },
  },
  '/audit/verify': {
    get: {
      tags: ['audit'], operationId: 'verifyAudit', summary: 'Walk the audit trail\'s hash chain and report the first broken entry',
      responses: { 200: json(ref('AuditVerification'), '`ok`, or `broken` naming the file, line, seq and what is wrong.') },
    },
  },
  '/servers/{id}/audit': {
    get: {
      tags: ['audit'], operationId: 'listServerAudit', summary: 'A server\'s history from the audit trail',
      parameters: [{ $ref: '#/components/parameters/ServerId' }, ...QUERY.filter((p) => p.name !== 'server')],
      responses: {
        200: page('A page of the server\'s entries, newest first.'),
        400: BAD_QUERY,
        404: json(ref('Error'), 'No server has this id, or the requester may not see it (`SERVER_NOT_FOUND`).'),
      },
    },
  },
};

const nullableString = { type: ['string', 'null'] };

export const AUDIT_SCHEMAS: Record<string, Json> = {
  AuditEntry: {
    type: 'object',
    required: ['seq', 'time', 'actor', 'door', 'action', 'server_id', 'server_name', 'outcome', 'prev', 'hash'],
    properties: {
      seq: { type: 'integer', minimum: 1, description: 'Its place in the chain, from 1, across rotated files.' },
      time: { type: 'string', format: 'date-time' },
      actor: { type: 'string', description: 'The signed-in identity; `local` without sign-on; `controller` for its own acts; `file` (manifests folder) or `cluster` for the other doors.' },
      door: { enum: ['api', 'dashboard', 'proxy', 'manifest', 'cluster', 'controller'] },
      action: { type: 'string', description: 'create, edit, start, stop, restart, delete, undelete, snapshot, snapshot-restore, share, revoke, idle-stop, capacity-stop, restore, audit-recovered.' },
      server_id: nullableString,
      server_name: { ...nullableString, description: 'The server\'s manifest name.' },
      outcome: { enum: ['ok', 'refused', 'failed'] },
      code: { type: 'string', description: 'The error code of a refusal or failure.' },
      detail: { type: 'string', description: 'What changed (spec field names, the snapshot put back …); never secrets or file contents.' },
      prev: { type: 'string', description: 'The hash of the entry before (64 zeros for the first).' },
      hash: { type: 'string', description: 'SHA-256 (hex) of the canonical JSON of the entry without `hash`.' },
    },
  },
  AuditPage: {
    type: 'object',
    required: ['entries', 'next_cursor', 'last_seq', 'last_hash'],
    properties: {
      entries: { type: 'array', items: ref('AuditEntry') },
      next_cursor: { ...nullableString, description: 'Give as `cursor` for older entries; null at the oldest.' },
      last_seq: { type: 'integer', description: 'The newest entry\'s seq in the whole trail (0 when empty).' },
      last_hash: { type: 'string', description: 'The newest entry\'s hash: keep it elsewhere to detect a later cut of the trail\'s end.' },
    },
  },
  AuditVerification: {
    type: 'object',
    required: ['ok', 'files', 'entries', 'first_seq', 'last_seq', 'last_hash'],
    properties: {
      ok: { type: 'boolean' },
      files: { type: 'integer' },
      entries: { type: 'integer', description: 'Entries checked before the first break (all of them when ok).' },
      first_seq: { type: ['integer', 'null'] },
      last_seq: { type: ['integer', 'null'] },
      last_hash: nullableString,
      anchored_at: {
        type: 'object', required: ['file', 'seq', 'prev'],
        properties: { file: { type: 'string' }, seq: { type: 'integer' }, prev: { type: 'string' } },
        description: 'Present when older files were rotated away: the oldest kept entry\'s prev is taken on trust.',
      },
      broken: {
        type: 'object', required: ['file', 'line', 'seq', 'problem'],
        properties: { file: { type: 'string' }, line: { type: 'integer' }, seq: { type: ['integer', 'null'] }, problem: { type: 'string' } },
        description: 'The first entry that breaks the chain.',
      },
    },
  },
};
