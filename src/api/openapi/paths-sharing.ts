// The sharing routes (src/api/routes/sharing.ts) as OpenAPI path items, and the shape they answer
// with; paths.ts and shapes.ts spread them into the document.

type Json = Record<string, unknown>;

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Json, description: string): Json => ({ description, content: { 'application/json': { schema } } });
const error = (description: string): Json => json(ref('Error'), description);
const serverId = { $ref: '#/components/parameters/ServerId' };

const ANSWER = json(ref('AccessEnvelope'), 'Who has access now, as the service reads the manifest it wrote.');
const NO_SERVER = error('No server has this id, or the requester may not see it (`SERVER_NOT_FOUND`).');
const CHANGE_REFUSED = {
  403: error('Only the server\'s owner and the admins change who has access (`OWNER_ONLY`).'),
  404: NO_SERVER,
  409: error('No one signs in on this run, so there is nobody to share with (`SHARING_NEEDS_SIGN_ON`); or the manifest cannot be changed now (`MANIFEST_INVALID`, `MANAGED_BY_GIT`, `CONFLICT`).'),
};
const BAD_PEOPLE = error('A person is not an email address or user id, is the owner, or the list would pass 100 people (`INVALID_BODY`): the message names the field.');

const op = (operationId: string, summary: string, responses: Record<string, Json>, more: Json = {}): Json =>
  ({ tags: ['servers'], operationId, summary, ...more, responses });

export const SHARING_PATHS: Record<string, Json> = {
  '/me': {
    get: op('getMe', 'Who the requester is, as the access checks see them', {
      200: json(ref('Me'), 'The signed-in user (null where no one signs in), whether they are an admin, and the policy in force.'),
    }, { tags: ['service'] }),
  },
  '/servers/{id}/access': {
    get: op('getServerAccess', 'Who may open and use a server besides its owner', {
      200: ANSWER, 404: NO_SERVER,
    }, { parameters: [serverId] }),
    post: op('shareServer', 'Share a server with one more person', { 200: ANSWER, 400: BAD_PEOPLE, ...CHANGE_REFUSED }, {
      parameters: [serverId],
      description: 'Adds the person to spec.access.sharedWith. Under `access: owner` they may then see the server, open its editor, read its logs and events, start, stop, restart and edit it; only the owner and the admins delete it or change who has access.',
    }),
    put: op('replaceServerAccess', 'Replace the list of people a server is shared with', { 200: ANSWER, 400: BAD_PEOPLE, ...CHANGE_REFUSED }, {
      parameters: [serverId],
    }),
  },
  '/servers/{id}/access/{person}': {
    delete: op('revokeServerAccess', 'Revoke one person\'s access to a server', { 200: ANSWER, ...CHANGE_REFUSED }, {
      parameters: [serverId, { name: 'person', in: 'path', required: true, schema: { type: 'string' }, description: 'The email address or user id, in any case.' }],
      description: 'From the answer on, the person\'s requests, editor pages and log streams of the server are refused as an unknown server\'s; an editor WebSocket they opened before is closed.',
    }),
  },
};

export const SHARING_SCHEMAS: Record<string, Json> = {
  Me: {
    type: 'object',
    required: ['status', 'data'],
    properties: {
      status: { const: 'success' },
      data: {
        type: 'object',
        required: ['user', 'admin', 'policy', 'sign_on'],
        properties: {
          user: { type: ['string', 'null'], description: 'The signed-in user, lower case, as owner and shared_with name people; null where no one signs in.' },
          admin: { type: 'boolean', description: 'One of the config\'s admins.' },
          policy: { enum: ['shared', 'owner'], description: 'The config\'s access policy in force.' },
          sign_on: { type: 'boolean', description: 'Requests name who sends them here (deployed, or DEVBOX_REQUIRE_IDENTITY=1); without it sharing has no effect.' },
        },
      },
    },
  },
  AccessEnvelope: {
    type: 'object',
    required: ['status', 'data'],
    properties: {
      status: { const: 'success' },
      message: { type: 'string' },
      data: {
        type: 'object',
        required: ['owner', 'shared_with', 'shared', 'can_change', 'effective', 'warning'],
        properties: {
          owner: { type: ['string', 'null'], description: 'Who created it (devbox.dev/owner); null when nobody signed in did.' },
          shared_with: { type: 'array', items: { type: 'string' }, description: 'spec.access.sharedWith, lower case.' },
          shared: { type: 'boolean', description: 'The requester reaches it because it is shared with them (not their own, and not as an admin).' },
          can_change: { type: 'boolean', description: 'The requester may change the list (its owner, or an admin, whatever the policy).' },
          effective: { type: 'boolean', description: 'The list takes effect here: people sign in and the config says access: owner.' },
          warning: { type: ['string', 'null'], description: 'Why the list has no effect here, and what would give it one; null when it does.' },
        },
      },
    },
  },
};
