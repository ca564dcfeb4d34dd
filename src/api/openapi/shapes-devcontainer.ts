// The response shapes of what a server took from its workspace's devcontainer.json: the server
// record's `devcontainer` (status.devcontainer, src/devcontainer/types.ts). Spread into SCHEMAS (shapes.ts).

type Schema = Record<string, unknown>;

const object = (properties: Record<string, Schema>, required: string[] = Object.keys(properties), more: Schema = {}): Schema =>
  ({ type: 'object', required, properties, ...more });
const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const strings: Schema = { type: 'array', items: { type: 'string' } };
const LIFECYCLE = ['onCreateCommand', 'updateContentCommand', 'postCreateCommand', 'postStartCommand', 'postAttachCommand'];
/** One property per lifecycle command, each optional. */
const byStep = (schema: Schema): Record<string, Schema> => Object.fromEntries(LIFECYCLE.map((name) => [name, schema]));
const commandLine: Schema = {
  oneOf: [
    object({ shell: { type: 'string', description: 'Run by /bin/sh -c.' } }),
    object({ argv: { ...strings, description: 'A program and its arguments, no shell.' } }),
  ],
};

export const DEVCONTAINER_SCHEMAS: Record<string, Schema> = {
  Devcontainer: object({
    state: {
      enum: ['applied', 'ignored', 'none', 'invalid'],
      description: '`applied`: the plan is in effect; `ignored`: spec.devcontainer says ignore; `none`: no file in the workspace; `invalid`: the file could not be read (message says where and why).',
    },
    message: { type: 'string' },
    plan: ref('DevcontainerPlan'),
    lifecycle: object(byStep(ref('DevcontainerLifecycleState')), [], { description: 'Where each lifecycle command stands for this server.' }),
    readAfter: { type: 'string', description: 'The WorkspaceReady transition the file was read after.' },
    startedWith: { type: 'string', description: 'What the running editor was started with of the plan, as a key.' },
    workspaceKey: { type: 'string', description: 'The workspace the once-per-workspace commands ran for.' },
  }, ['state'], { description: 'What was honoured of the workspace\'s devcontainer.json (status.devcontainer); docs/devcontainer.md says what is and is not.' }),

  DevcontainerPlan: object({
    path: { type: 'string', description: 'The file, relative to the workspace.' },
    sha256: { type: 'string', description: 'The hash of its bytes.' },
    extensions: { ...strings, description: 'customizations.vscode.extensions, installed like spec.extensions (the manifest\'s win for the same extension).' },
    settings: { type: 'object', description: 'customizations.vscode.settings, under spec.settings.' },
    containerEnv: { type: 'object', additionalProperties: { type: 'string' } },
    remoteEnv: { type: 'object', additionalProperties: { type: ['string', 'null'] } },
    lifecycle: object(byStep(object({
      name: { enum: LIFECYCLE },
      commands: { type: 'array', items: object({ label: { type: 'string' }, command: commandLine }, ['command']) },
    })), [], { description: 'The lifecycle commands given, by name (the object form\'s commands run in parallel).' }),
    waitFor: { enum: LIFECYCLE, description: 'The last lifecycle command the editor waits for before it starts.' },
    forwardPorts: {
      type: 'array',
      items: object({
        port: { type: 'integer' },
        label: { type: 'string' },
        protocol: { enum: ['http', 'https'] },
        onAutoForward: { type: 'string' },
      }, ['port']),
    },
    hostRequirements: object({
      cpus: { type: 'number' },
      memoryBytes: { type: 'integer' },
      storageBytes: { type: 'integer' },
    }, []),
    image: { type: 'string', description: 'The editor\'s image on a runtime that runs images (Kubernetes).' },
    warnings: { ...strings, description: 'Each field not honoured, and why.' },
  }, ['path', 'sha256', 'extensions', 'settings', 'containerEnv', 'remoteEnv', 'lifecycle', 'waitFor', 'forwardPorts', 'warnings']),

  DevcontainerLifecycleState: object({
    state: { enum: ['Running', 'Succeeded', 'Failed', 'Skipped'] },
    exitCode: { type: ['integer', 'null'] },
    message: { type: 'string' },
    at: { type: 'string', format: 'date-time' },
  }, ['state', 'at']),
};
