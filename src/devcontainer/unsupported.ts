// The fields of devcontainer.json that need what this service does not have (a container engine
// building or running the container, the person's own machine), each with why, so a file that asks
// for them gets a warning on its server instead of being half-honoured in silence.

/** Fields the reference defines that are honoured (parse.ts), or that only describe the file. */
const HONOURED = new Set([
  '$schema', 'name', 'image', 'forwardPorts', 'portsAttributes', 'containerEnv', 'remoteEnv', 'customizations', 'hostRequirements',
  'onCreateCommand', 'updateContentCommand', 'postCreateCommand', 'postStartCommand', 'postAttachCommand', 'waitFor',
]);

/** Fields the reference defines that are not honoured here, and why. */
const NOT_HONOURED: Record<string, string> = {
  build: 'building an image needs a container engine; give a prebuilt `image` instead (honoured on Kubernetes)',
  dockerFile: 'building an image needs a container engine; give a prebuilt `image` instead (honoured on Kubernetes)',
  context: 'it belongs to an image build, which needs a container engine',
  dockerComposeFile: 'Docker Compose needs a container engine: the editor runs alone, without the other services',
  service: 'it names a Docker Compose service, and Compose needs a container engine',
  runServices: 'it names Docker Compose services, and Compose needs a container engine',
  runArgs: 'they are arguments of `docker run`, and no container engine runs the editor',
  mounts: 'mounts are made by a container engine; the editor sees its own workspace and the machine it runs on',
  workspaceMount: 'the workspace is the server\'s own (its folder or volume), not a mount',
  workspaceFolder: 'the editor opens the server\'s own workspace, whose path the runtime chooses (${containerWorkspaceFolder} gives it)',
  features: 'features are installed into an image by a container engine; install the tools in the image (Kubernetes) or with a lifecycle command',
  overrideFeatureInstallOrder: 'features are installed by a container engine, which is not run here',
  appPort: 'it publishes ports of a container engine; use `forwardPorts`, which the proxy honours',
  initializeCommand: 'it runs on the machine of the person who opens the folder; a repository never runs a command on the service\'s machine',
  remoteUser: 'the editor runs as the runtime\'s user (the service\'s on one machine, the image\'s or the Pod\'s on Kubernetes)',
  containerUser: 'the editor runs as the runtime\'s user (the service\'s on one machine, the image\'s or the Pod\'s on Kubernetes)',
  updateRemoteUserUID: 'no container user is changed: the editor runs as the runtime\'s user',
  userEnvProbe: 'the environment is the editor\'s own and containerEnv/remoteEnv, not probed from a login shell',
  overrideCommand: 'the editor\'s command is code-server, started by the runtime',
  shutdownAction: 'the editor stops when its server is stopped (or idle), not when a window closes',
  init: 'no container init process is added by a container engine',
  privileged: 'privileges are given by a container engine, which is not run here',
  capAdd: 'capabilities are given by a container engine, which is not run here',
  securityOpt: 'security options are given by a container engine, which is not run here',
  otherPortsAttributes: 'only the ports listed in forwardPorts are described',
};

/** One warning for each field of `value` that is not honoured: the reference's with its reason, and unknown ones. */
export function unsupportedWarnings(value: Record<string, unknown>): string[] {
  const warnings: string[] = [];
  for (const field of Object.keys(value)) {
    if (HONOURED.has(field)) continue;
    const why = NOT_HONOURED[field];
    warnings.push(why ? `${field}: not honoured: ${why}` : `${field}: not a field of the devcontainer.json reference; ignored`);
  }
  return warnings;
}
