// The config file: policy for editor ports, timeouts, capacity, extension groups, workspace
// sources, clients, access, the API's origins, persistence and where editors run. Its shape (Config), the built-in
// defaults (DEFAULT_CONFIG, which the shipped devbox.config.yaml repeats), and reading a file:
// YAML or JSON, validated against schemas/config.schema.json, laid over the defaults, every
// problem placed at its line. Environment variables are src/config/settings.ts's.
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Ajv, type ErrorObject } from 'ajv';
import { formatProblem, parseYamlLocated, type FileProblem } from '../core/yaml-problems.ts';
import { readProjectJson } from '../core/project.ts';
import { DEFAULT_RUNTIME_CONFIG, runtimeConfigOver, runtimeConfigProblems, type RuntimeConfig } from './runtime-config.ts';

export interface Config {
  ports: { min: number; max: number };
  editor: {
    startTimeoutSeconds: number;
    readyTimeoutSeconds: number;
    stopGraceSeconds: number;
    maxRestartBackoffSeconds: number;
    crashLoopRestarts: number;
    /** An editor with no activity (a person's input or a terminal's output through the proxy: docs/idle.md) this long is stopped (IdleTimeout); 0: never. spec.idleTimeoutSeconds overrides it. */
    idleTimeoutSeconds: number;
  };
  /**
   * How many editors may run at once, and how much memory they may use together; a start beyond
   * either is refused (409), or with whenFull `stopIdlest` the least recently active idle editor
   * is stopped first. maxRunning 0: no limit; maxMemoryMb `auto`: this machine's memory less room
   * for the service, 0: no limit.
   */
  capacity: {
    maxRunning: number;
    maxMemoryMb: number | 'auto';
    whenFull: 'refuse' | 'stopIdlest';
    /** An editor with no activity this long counts as idle, so whenFull `stopIdlest` may stop it. */
    idleAfterSeconds: number;
  };
  controller: { workers: number; resyncSeconds: number; statsIntervalSeconds: number; orphanGraceSeconds: number };
  extensionGroups: Record<string, ExtensionGroup>;
  /** Workspace sources: git URL schemes (unset: defaultGitSchemes), clone timeout, ZIP upload limit. */
  workspace: { gitSchemes?: string[]; cloneTimeoutSeconds: number; maxUploadMb: number };
  /** For clients (GET /config ui): the title to show and the groups a new server starts with. */
  ui: { title: string; defaultExtensionGroups: string[] };
  /** Passed to clients unchanged (GET /config packaged_assets); the service reads nothing in it. */
  packagedAssets: Record<string, unknown>;
  /** Who sees and drives which server (src/api/access.ts): everyone (`shared`), or each user their own (`owner`). */
  access: 'shared' | 'owner';
  /** Users (emails or user ids, any case) who see and drive every server under `access: owner`. */
  admins: string[];
  /** The API's cross-origin policy (src/api/cors.ts): the origins whose pages may call it; `*`: every one. */
  api: { allowedOrigins: string[] };
  /** Work kept across restarts (src/persistence): where, how often, what is left out, how long a deleted server is kept. */
  persistence: PersistenceConfig;
  /** Where editors run: local processes, or Pods in a Kubernetes cluster (src/config/runtime-config.ts). */
  runtime: RuntimeConfig;
}

/** The config's `persistence` block; without a target (here or DEVBOX_PERSIST_TO) nothing is kept. */
export interface PersistenceConfig {
  /** An absolute folder, or dbfs:/Volumes/<catalog>/<schema>/<volume>/<prefix>; DEVBOX_PERSIST_TO wins. Read at start-up only. */
  target?: string;
  /** A running server is snapshotted this often when something changed. */
  intervalSeconds: number;
  /** gitignore patterns left out of snapshots, after the built-in ones (node_modules/, .venv/ …); `!` keeps one again. */
  exclude: string[];
  /** A deleted server's snapshots are kept this long, so the delete can be undone. */
  retainDeletedDays: number;
  /** A workspace whose kept files add up to more is not snapshotted (its previous snapshot stays). */
  maxWorkspaceMb: number;
}

/**
 * A named set of extensions and the user settings that go with them (spec.extensionGroups).
 * The config file may also give a group as a bare list of extension ids (the older form).
 */
export interface ExtensionGroup {
  name: string;
  description: string;
  extensions: string[];
  /** Merged into the editor's User/settings.json, under spec.settings. */
  user_settings: Record<string, unknown>;
}

/** The default `ports` with the Kubernetes runtime: route numbers only, 50,000 servers. */
export const KUBERNETES_ROUTE_NUMBERS = { min: 10000, max: 59999 } as const;

export const DEFAULT_CONFIG: Config = {
  ports: { min: 8010, max: 8100 },
  editor: { startTimeoutSeconds: 30, readyTimeoutSeconds: 120, stopGraceSeconds: 5, maxRestartBackoffSeconds: 60, crashLoopRestarts: 5, idleTimeoutSeconds: 3600 },
  capacity: { maxRunning: 0, maxMemoryMb: 'auto', whenFull: 'refuse', idleAfterSeconds: 60 },
  controller: { workers: 8, resyncSeconds: 3600, statsIntervalSeconds: 2, orphanGraceSeconds: 30 },
  extensionGroups: {
    python: {
      name: 'python', description: 'Python: language support, debugging, Ruff for linting and formatting',
      extensions: ['ms-python.python', 'ms-python.debugpy', 'charliermarsh.ruff'],
      user_settings: { '[python]': { 'editor.defaultFormatter': 'charliermarsh.ruff', 'editor.formatOnSave': true }, 'python.terminal.activateEnvironment': true },
    },
    jupyter: {
      name: 'jupyter', description: 'Jupyter notebooks (with Python)',
      extensions: ['ms-python.python', 'ms-toolsai.jupyter'],
      user_settings: { 'notebook.lineNumbers': 'on', 'jupyter.askForKernelRestart': false },
    },
    databricks: {
      name: 'databricks', description: 'Databricks: workspace sync, clusters and jobs, notebooks, SQL',
      extensions: ['databricks.databricks', 'ms-python.python'],
      user_settings: { 'databricks.python.envFile': '${workspaceFolder}/.env' },
    },
    'claude-code': {
      name: 'claude-code', description: "Claude Code, Anthropic's coding agent, in the editor",
      extensions: ['anthropic.claude-code'],
      user_settings: {},
    },
    git: {
      name: 'git', description: 'Git history, blame and branches (GitLens)',
      extensions: ['eamodio.gitlens'],
      user_settings: { 'git.autofetch': true },
    },
  },
  workspace: { cloneTimeoutSeconds: 600, maxUploadMb: 100 },
  ui: { title: 'devbox-controller', defaultExtensionGroups: ['python'] },
  packagedAssets: {},
  access: 'shared',
  admins: [],
  api: { allowedOrigins: ['*'] },
  persistence: { intervalSeconds: 300, exclude: [], retainDeletedDays: 7, maxWorkspaceMb: 2048 },
  runtime: DEFAULT_RUNTIME_CONFIG,
};

/** What a user is, in `admins` and in the identity headers: an email address or user id, in lower case. */
export const USER_SHAPE = /^[\p{L}\p{N}._%+'@-]{1,254}$/u;

export class SettingsError extends Error {}

/** The names that `groups` (the config's extensionGroups) does not define, in the order given. */
export function unknownExtensionGroups(groups: Record<string, unknown>, names: string[] | undefined): string[] {
  return (names ?? []).filter((name) => !Object.hasOwn(groups, name));
}

const schema = readProjectJson('schemas/config.schema.json');
const validateConfig = new Ajv({ allErrors: true, strict: true }).compile(schema);

/** The config file the service reads: DEVBOX_CONFIG, else ./devbox.config.yaml when it exists, else none (the defaults). */
export function configFileFrom(env: NodeJS.ProcessEnv, cwd = process.cwd()): string | undefined {
  if (env.DEVBOX_CONFIG) return resolve(cwd, env.DEVBOX_CONFIG);
  const shipped = resolve(cwd, 'devbox.config.yaml');
  return existsSync(shipped) ? shipped : undefined;
}

/**
 * Reads a config file's text (YAML or JSON) and lays it over the defaults: the config, or every
 * problem with its line and column (syntax, schema, and the checks JSON Schema cannot make).
 */
export function parseConfig(file: string, text: string): { config: Config; problems?: undefined } | { problems: FileProblem[] } {
  const parsed = parseYamlLocated(file, text);
  if (parsed.problems) return { problems: parsed.problems };
  if (!validateConfig(parsed.value)) return { problems: parsed.locate(validateConfig.errors) };
  const { $schema: _editorsOnly, ...given } = parsed.value as Partial<Config> & { $schema?: string };
  const config: Config = {
    ...structuredClone(DEFAULT_CONFIG),
    ...given,
    editor: { ...DEFAULT_CONFIG.editor, ...given.editor },
    capacity: { ...DEFAULT_CONFIG.capacity, ...given.capacity },
    controller: { ...DEFAULT_CONFIG.controller, ...given.controller },
    workspace: { ...DEFAULT_CONFIG.workspace, ...given.workspace },
    ui: { ...structuredClone(DEFAULT_CONFIG.ui), ...given.ui },
    api: { ...structuredClone(DEFAULT_CONFIG.api), ...given.api },
    persistence: { ...structuredClone(DEFAULT_CONFIG.persistence), ...given.persistence },
    runtime: runtimeConfigOver(given.runtime),
  };
  // On a cluster a server's port is only its route number (/p/{port}/): nothing is bound on this
  // machine, so the default range holds a fleet rather than the process runtime's 91 ports.
  if (given.ports === undefined && config.runtime.kind === 'kubernetes') config.ports = { ...KUBERNETES_ROUTE_NUMBERS };
  // Beyond JSON Schema: each placed at the field to change.
  const found: ErrorObject[] = [];
  const problem = (path: (string | number)[], message: string) =>
    found.push({ keyword: 'devbox', instancePath: path.map((p) => `/${String(p).replaceAll('~', '~0').replaceAll('/', '~1')}`).join(''), schemaPath: '', params: {}, message });
  if (given.extensionGroups) config.extensionGroups = groupsFrom(given.extensionGroups as Record<string, unknown>, problem);
  if (config.ports.min > config.ports.max) {
    problem(['ports', 'min'], `${config.ports.min} must not exceed ports.max (${config.ports.max}): swap them, or widen the range`);
  }
  config.admins.forEach((admin, i) => {
    if (!USER_SHAPE.test(admin.trim().toLowerCase())) {
      problem(['admins', i], `"${admin}" is not an email address or user id (letters, digits and . _ % + - ' @): write it as the platform forwards it, for example ada@example.com`);
    }
  });
  config.api.allowedOrigins.forEach((origin, i) => {
    if (origin !== '*' && !isOrigin(origin)) {
      problem(['api', 'allowedOrigins', i], `"${origin}" is not an origin: write the scheme, host and port a page is served from, without a path (for example https://portal.example.com), or "*" for every origin`);
    }
  });
  runtimeConfigProblems(config.runtime, problem);
  // The default ones only while their groups are there (a file may replace all the groups).
  if (!given.ui?.defaultExtensionGroups) config.ui.defaultExtensionGroups = config.ui.defaultExtensionGroups.filter((name) => Object.hasOwn(config.extensionGroups, name));
  config.ui.defaultExtensionGroups.forEach((name, i) => {
    if (!Object.hasOwn(config.extensionGroups, name)) {
      problem(['ui', 'defaultExtensionGroups', i], `"${name}" is not a group of extensionGroups (${Object.keys(config.extensionGroups).join(', ') || 'none'}): name one of them, or add the group`);
    }
  });
  return found.length > 0 ? { problems: parsed.locate(found) } : { config };
}

/** Reads a YAML or JSON config file and lays it over the defaults; a SettingsError lists every problem, each with its line. */
export function loadConfig(file: string | undefined): Config {
  if (!file) return structuredClone(DEFAULT_CONFIG);
  if (!existsSync(file)) throw new SettingsError(`DEVBOX_CONFIG points at ${file}, which does not exist`);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new SettingsError(`the config file ${file} cannot be read: ${(error as Error).message}`);
  }
  const read = parseConfig(file, text);
  if (read.problems) {
    throw new SettingsError(`the config file ${file} is not valid; fix ${read.problems.length === 1 ? 'this' : `these ${read.problems.length} problems`} and start again:\n  ${read.problems.map(formatProblem).join('\n  ')}`);
  }
  return read.config;
}

/** An origin as browsers send it: http(s), a host, maybe a port, nothing after. */
function isOrigin(text: string): boolean {
  if (!URL.canParse(text)) return false;
  const url = new URL(text);
  return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === text.toLowerCase().replace(/\/$/, '');
}

/** Each group as an object; a bare list of ids (the older form) becomes one without settings. */
function groupsFrom(given: Record<string, unknown>, problem: (path: string[], message: string) => void): Record<string, ExtensionGroup> {
  const groups: Record<string, ExtensionGroup> = {};
  for (const [key, value] of Object.entries(given)) {
    if (Array.isArray(value)) {
      groups[key] = { name: key, description: '', extensions: value as string[], user_settings: {} };
      continue;
    }
    const group = value as Partial<ExtensionGroup>;
    if (group.name !== undefined && group.name !== key) {
      problem(['extensionGroups', key, 'name'], `is "${group.name}": make it "${key}" or leave it out (the key names the group)`);
    }
    groups[key] = { name: key, description: group.description ?? '', extensions: group.extensions ?? [], user_settings: group.user_settings ?? {} };
  }
  return groups;
}
