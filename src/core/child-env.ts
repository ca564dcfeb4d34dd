// The environment of a process the service launches (an editor, code-server's CLI installing
// extensions, the assistant router): the service's own, without its secrets and its own settings.

/** The variable launch() sets to the server's name in every editor's environment (how /proc tells an editor's server). */
export const SERVER_NAME_VARIABLE = 'DEVBOX_SERVER_NAME';

/** Variables an editor never sees: the service's secrets. */
const SECRET = /SECRET|TOKEN|PASSWORD|^DATABRICKS_CLIENT_ID$|^AWS_|^AZURE_CLIENT/i;

/**
 * The service's own runtime tuning (see `npm start`), not meant for the editors' Node.js; and
 * PORT, which code-server obeys over its --bind-addr (a shell or platform that sets it would send
 * every editor to that one port).
 */
const SERVICE_TUNING = new Set(['NODE_OPTIONS', 'MALLOC_ARENA_MAX', 'PORT']);

/** `env` without secrets, npm's and DEVBOX_ variables and the service's tuning; with SERVER_NAME_VARIABLE=`name` when a name is given. */
export function editorEnvironment(env: NodeJS.ProcessEnv, name?: string): NodeJS.ProcessEnv {
  const clean: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(env)) {
    if (!SECRET.test(key) && !key.startsWith('npm_') && !key.startsWith('DEVBOX_') && !SERVICE_TUNING.has(key)) clean[key] = value;
  }
  if (name !== undefined) clean[SERVER_NAME_VARIABLE] = name;
  return clean;
}
