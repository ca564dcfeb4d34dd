// The response shapes of capacity and the limits per person (capacity.perPerson): GET /health's
// `capacity` section, and the details of a 409 QUOTA_EXCEEDED. Spread into SCHEMAS (shapes.ts).

type Schema = Record<string, unknown>;

const object = (properties: Record<string, Schema>, required: string[] = Object.keys(properties), more: Schema = {}): Schema =>
  ({ type: 'object', required, properties, ...more });
const limit = (what: string, type = 'integer'): Schema => ({ type: [type, 'null'], description: `${what}; null: no limit.` });
const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

export const QUOTA_SCHEMAS: Record<string, Schema> = {
  CapacityHealth: object({
    running: { type: 'integer', description: 'Editors running now.' },
    starting: { type: 'integer', description: 'Starts admitted whose editor does not run yet.' },
    max_running: limit('capacity.maxRunning'),
    memory_used_mb: { type: 'number' },
    memory_limit_mb: limit('capacity.maxMemoryMb, as it applies here', 'number'),
    memory_free_mb: { type: ['number', 'null'] },
    memory_limit_source: { type: 'string', description: 'Where the memory limit comes from, or why none applies.' },
    editor_estimate_mb: { type: 'integer', description: 'What one more editor is counted at.' },
    when_full: { enum: ['refuse', 'stopIdlest'] },
    idle_after_seconds: { type: 'integer' },
    waiting: { type: 'array', items: { type: 'string' }, description: 'Manifest names of the servers waiting for room (or for their owner\'s use to drop below a limit per person).' },
    per_person: ref('PerPersonUse'),
  }, ['running', 'starting', 'max_running', 'memory_used_mb', 'memory_limit_mb', 'memory_free_mb', 'memory_limit_source', 'editor_estimate_mb', 'when_full', 'idle_after_seconds', 'waiting'], {
    description: 'GET /health `capacity`: the fleet\'s limits and use, and each person\'s.',
  }),

  PerPersonUse: object({
    limits: object({
      running_editors: limit('capacity.perPerson.runningEditors'),
      servers: limit('capacity.perPerson.servers'),
      memory_mb: limit('capacity.perPerson.memoryMb'),
    }),
    people: { type: 'array', items: ref('PersonUse'), description: 'People with at least one server, those running the most first (then memory, servers, name); at most 100.' },
    people_total: { type: 'integer', description: 'How many people have servers (the list may be cut).' },
  }, undefined, { description: 'The limits per person (the owner of a server) and each person\'s use. The config\'s admins are listed, marked exempt.' }),

  PersonUse: object({
    person: { type: 'string', description: 'The owner (devbox.dev/owner), in lower case.' },
    running: { type: 'integer', description: 'Their editors running or starting.' },
    servers: { type: 'integer', description: 'Their servers.' },
    memory_mb: { type: 'integer', description: 'Resident memory of their running editors at the last sample (an unsampled one at the estimate).' },
    exempt: { type: 'boolean', description: 'An admin: no limit per person applies.' },
  }),

  QuotaRefusal: object({
    limit: { enum: ['capacity.perPerson.runningEditors', 'capacity.perPerson.servers', 'capacity.perPerson.memoryMb'] },
    person: { type: 'string' },
    allowed: { type: 'integer', description: 'The limit\'s value (MB for memoryMb).' },
    used: { type: 'integer', description: 'What the person uses now (MB for memoryMb).' },
    servers: {
      type: 'array', description: 'The person\'s servers that use the limit (at most 20).',
      items: object({ id: { type: 'string' }, manifest: { type: 'string' }, name: { type: 'string' } }, ['manifest', 'name']),
    },
    total: { type: 'integer', description: 'How many servers use it in all.' },
  }, undefined, { description: 'The `details` of a 409 QUOTA_EXCEEDED.' }),
};
