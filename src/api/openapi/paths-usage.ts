// The usage routes (src/api/routes/usage.ts) and their answers' shapes, for paths.ts and
// shapes.ts to spread in. Self-contained (references are written out) so that neither of those
// files needs the other's helpers before they are defined.

type Json = Record<string, unknown>;

const schema = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
const answer = (name: string, description: string): Json => ({ description, content: { 'application/json': { schema: schema(name) } } });

const WINDOW: Json = {
  name: 'window', in: 'query',
  schema: { type: 'string', pattern: '^[0-9]{1,7}[smhd]?$' },
  description: 'How far back: `90s`, `30m`, `2h`, `1d`, or a bare number of seconds; from one bucket (`controller.usageBucketSeconds`) to the whole history kept (`controller.usageHistoryMinutes`), which is the default.',
};
const BAD_WINDOW = answer('Error', '`window` is not a duration within the history kept (`INVALID_WINDOW`): the message gives the range.');

export const USAGE_PATHS: Record<string, Json> = {
  '/servers/{id}/usage': {
    get: {
      tags: ['servers'], operationId: 'getServerUsage', summary: 'A server\'s CPU and memory over time',
      description: 'One point per bucket in which the stats sampler saw the server\'s editor run (the minimum, average and maximum of its samples there); a bucket with no sample (the editor stopped) has no point. Kept in the service\'s memory: the history starts empty when the service starts.',
      parameters: [{ $ref: '#/components/parameters/ServerId' }, WINDOW],
      responses: {
        200: answer('ServerUsage', 'The points within the window, oldest first.'),
        400: BAD_WINDOW,
        404: answer('Error', 'No server has this id, or the requester may not see it (`SERVER_NOT_FOUND`).'),
      },
    },
  },
  '/usage': {
    get: {
      tags: ['service'], operationId: 'getFleetUsage', summary: 'The fleet over time: running editors, their memory, idle stops',
      description: 'One point per bucket: how many editors ran and their memory together (the minimum, average and maximum of the samples there), and how many editors were stopped for idleness in it. Totals only, as GET /health\'s capacity section gives them: no server is named.',
      parameters: [WINDOW],
      responses: { 200: answer('FleetUsage', 'The points within the window, oldest first.'), 400: BAD_WINDOW },
    },
  },
};

const number: Json = { type: 'number' };
const spread = (unit: string): Json => ({
  type: 'object', required: ['min', 'avg', 'max'], properties: { min: number, avg: number, max: number },
  description: `The least, the average and the most of the samples in the bucket, in ${unit}.`,
});
const nullableSpread = (unit: string): Json => ({ anyOf: [spread(unit), { type: 'null' }], description: 'null when no sample fell in the bucket (the service was not running).' });
const time = (description: string): Json => ({ type: 'string', format: 'date-time', description });
const envelope = (data: Json, description: string): Json => ({
  type: 'object', required: ['status', 'data'], description, properties: { status: { const: 'success' }, data },
});
const window = (points: Json, more: Record<string, Json> = {}): Json => ({
  type: 'object',
  required: ['window_seconds', 'bucket_seconds', 'from', 'to', ...Object.keys(more), 'points'],
  properties: {
    window_seconds: { type: 'number', description: 'The window read (the one asked for, or the whole history kept).' },
    bucket_seconds: { type: 'number', description: 'The width of one point.' },
    from: time('The start of the window.'),
    to: time('The end of the window: now.'),
    ...more,
    points: { type: 'array', items: points, description: 'Oldest first; buckets with nothing in them are left out, so a gap means no sample.' },
  },
});
const point = (properties: Record<string, Json>): Json => ({
  type: 'object',
  required: ['time', 'samples', ...Object.keys(properties)],
  properties: { time: time('The start of the bucket.'), samples: { type: 'integer', description: 'How many samples fell in the bucket.' }, ...properties },
});

export const USAGE_SCHEMAS: Record<string, Json> = {
  ServerUsage: envelope(window(point({ cpu_percent: spread('percent of one core'), memory_mb: spread('MB (resident memory of the editor\'s processes)') })),
    'A server\'s CPU and memory over time (GET /servers/{id}/usage).'),
  FleetUsage: envelope(window(point({
    running: nullableSpread('editors running'),
    memory_mb: nullableSpread('MB (the running editors\' resident memory together)'),
    idle_stops: { type: 'integer', description: 'Editors stopped for idleness (reason IdleTimeout) in the bucket.' },
  }), { idle_stops: { type: 'integer', description: 'Editors stopped for idleness within the window.' } }),
  'The fleet over time (GET /usage).'),
};
