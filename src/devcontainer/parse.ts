// devcontainer.json's text → the plan the controller honours (types.ts). The file is JSON with
// comments and trailing commas, as the containers.dev reference and VS Code read it (jsonc-parser,
// the parser VS Code itself uses, so a file VS Code accepts is accepted here, and a problem is
// given at its line and column). Every field of the reference is either honoured, or named in a
// warning that says why it is not: nothing is ignored silently. A field of the wrong type is a
// warning too, naming what it should be; only a file that is not JSON, or not an object, is refused.
import { parse, printParseErrorCode, type ParseError } from 'jsonc-parser';
import { unsupportedWarnings } from './unsupported.ts';
import {
  LIFECYCLE_ORDER, type CommandLine, type DevcontainerPlan, type ForwardedPort, type HostRequirements, type LifecycleName, type LifecycleStep,
} from './types.ts';

/** An extension id as code-server installs it: publisher.name, optionally @version. */
const EXTENSION_ID = /^[A-Za-z0-9][A-Za-z0-9-]*\.[A-Za-z0-9][A-Za-z0-9._-]*(@[0-9A-Za-z.+-]+)?$/;
/** An environment variable's name. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/**
 * Variables a workspace may not set: code-server listens where PORT says (over its own
 * --bind-addr) and takes PASSWORD and HASHED_PASSWORD as its login; DEVBOX_ ones are the service's.
 */
const RESERVED_ENV = /^(PORT|PASSWORD|HASHED_PASSWORD|DEVBOX_\w*)$/;
/** A size as the reference writes it: 4gb, 512mb, 1.5tb (1 kb = 1024 bytes). */
const SIZE = /^(\d+(?:\.\d+)?)\s*(tb|gb|mb|kb)?$/i;
const UNITS: Record<string, number> = { kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3, tb: 1024 ** 4 };
/** An image reference: no spaces, no control characters, of a sane length. */
const IMAGE = /^[A-Za-z0-9][A-Za-z0-9._\-/:@+]*$/;
const MAX_COMMANDS = 50;
const MAX_PORTS = 100;

export type ParseResult = { plan: DevcontainerPlan } | { error: string };

/**
 * The plan of one devcontainer.json. `path` names the file in messages (relative to the
 * workspace), `sha256` is the hash of its bytes (kept, so a change is seen).
 */
export function parseDevcontainer(text: string, path: string, sha256: string): ParseResult {
  const errors: ParseError[] = [];
  const value: unknown = parse(text, errors, { allowTrailingComma: true, disallowComments: false, allowEmptyContent: false });
  if (errors.length > 0) {
    const first = errors[0];
    const { line, column } = position(text, first.offset);
    return { error: `${path}:${line}:${column}: ${describeError(printParseErrorCode(first.error))}` };
  }
  if (!isObject(value)) return { error: `${path}: must be a JSON object ({ … }), as the devcontainer.json reference has it` };
  const warnings: string[] = [];
  const warn = (message: string) => warnings.push(message);
  const vscode = vscodeCustomizations(value.customizations, warn);
  const plan: DevcontainerPlan = {
    path,
    sha256,
    extensions: vscode.extensions,
    settings: vscode.settings,
    containerEnv: envObject(value.containerEnv, 'containerEnv', false, warn) as Record<string, string>,
    remoteEnv: envObject(value.remoteEnv, 'remoteEnv', true, warn),
    lifecycle: lifecycleSteps(value, warn),
    waitFor: waitForOf(value.waitFor, warn),
    forwardPorts: forwardPorts(value.forwardPorts, value.portsAttributes, warn),
    warnings,
  };
  const requirements = hostRequirements(value.hostRequirements, warn);
  if (requirements) plan.hostRequirements = requirements;
  if (value.image !== undefined) {
    if (typeof value.image === 'string' && IMAGE.test(value.image) && value.image.length <= 512) plan.image = value.image;
    else warn(`image: must be an image reference such as "mcr.microsoft.com/devcontainers/python:3.12"; not used`);
  }
  warnings.push(...unsupportedWarnings(value));
  return { plan };
}

/** 1-based line and column of an offset. */
function position(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text[i] === '\n') {
      line++;
      start = i + 1;
    }
  }
  return { line, column: offset - start + 1 };
}

/** jsonc-parser's error names (InvalidSymbol, CommaExpected…) in words. */
function describeError(code: string): string {
  return code.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** customizations.vscode: extensions (ids; `-id` leaves one out, as the reference allows) and settings. */
function vscodeCustomizations(customizations: unknown, warn: (m: string) => void): { extensions: string[]; settings: Record<string, unknown> } {
  const out = { extensions: [] as string[], settings: {} as Record<string, unknown> };
  if (customizations === undefined) return out;
  if (!isObject(customizations)) {
    warn('customizations: must be an object of tools ({ "vscode": { … } }); not used');
    return out;
  }
  const vscode = customizations.vscode;
  if (vscode === undefined) return out;
  if (!isObject(vscode)) {
    warn('customizations.vscode: must be an object ({ "extensions": [...], "settings": {...} }); not used');
    return out;
  }
  if (vscode.extensions !== undefined) {
    if (!Array.isArray(vscode.extensions)) warn('customizations.vscode.extensions: must be an array of extension ids ("publisher.name"); not used');
    else {
      const seen = new Set<string>();
      for (const entry of vscode.extensions) {
        if (typeof entry === 'string' && entry.startsWith('-')) continue; // "-id": leave out an extension a feature would add
        if (typeof entry !== 'string' || !EXTENSION_ID.test(entry) || entry.length > 200) {
          warn(`customizations.vscode.extensions: ${JSON.stringify(entry)} is not an extension id ("publisher.name" or "publisher.name@1.2.3"); left out`);
          continue;
        }
        const id = entry.toLowerCase();
        if (!seen.has(id.split('@')[0])) out.extensions.push(id);
        seen.add(id.split('@')[0]);
      }
    }
  }
  if (vscode.settings !== undefined) {
    if (isObject(vscode.settings)) out.settings = vscode.settings;
    else warn('customizations.vscode.settings: must be an object of settings ({ "editor.tabSize": 2 }); not used');
  }
  return out;
}

/** containerEnv (strings) or remoteEnv (strings, or null to remove a variable). */
function envObject(value: unknown, field: string, nullable: boolean, warn: (m: string) => void): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  if (value === undefined) return out;
  if (!isObject(value)) {
    warn(`${field}: must be an object of variables ({ "NAME": "value" }); not used`);
    return out;
  }
  for (const [name, v] of Object.entries(value)) {
    if (!ENV_NAME.test(name)) warn(`${field}.${name}: not a variable name (letters, digits and _, not starting with a digit); left out`);
    else if (RESERVED_ENV.test(name)) warn(`${field}.${name}: not set: ${name.startsWith('DEVBOX_') ? 'DEVBOX_ variables are the service\'s own' : 'code-server itself reads it (its port or its login)'}; give your program another name for it`);
    else if (typeof v === 'string' && !v.includes('\0')) out[name] = v;
    else if (nullable && v === null) out[name] = null;
    else warn(`${field}.${name}: must be a string${nullable ? ' (or null, to remove the variable)' : ''}; left out`);
  }
  return out;
}

/** One lifecycle command in any of the reference's three forms; undefined (with a warning) when malformed, or when empty. */
function lifecycleStep(name: LifecycleName, value: unknown, warn: (m: string) => void): LifecycleStep | undefined {
  const bad = () => warn(`${name}: must be a string (run by a shell), an array (a program and its arguments) or an object of those (run in parallel); not run`);
  const one = (v: unknown): CommandLine | undefined | 'bad' => {
    if (typeof v === 'string') return v.trim() === '' ? undefined : v.includes('\0') ? 'bad' : { shell: v };
    if (Array.isArray(v) && v.every((a) => typeof a === 'string' && !a.includes('\0'))) return v.length === 0 ? undefined : { argv: v as string[] };
    return 'bad';
  };
  if (isObject(value)) {
    const commands: LifecycleStep['commands'] = [];
    for (const [label, v] of Object.entries(value)) {
      const command = one(v);
      if (command === 'bad') {
        warn(`${name}.${label}: must be a string or an array of strings; not run`);
        continue;
      }
      if (command) commands.push({ label, command });
    }
    if (commands.length > MAX_COMMANDS) {
      warn(`${name}: more than ${MAX_COMMANDS} commands; only the first ${MAX_COMMANDS} run`);
      commands.length = MAX_COMMANDS;
    }
    return commands.length > 0 ? { name, commands } : undefined;
  }
  const command = one(value);
  if (command === 'bad') {
    bad();
    return undefined;
  }
  return command ? { name, commands: [{ command }] } : undefined;
}

function lifecycleSteps(value: Record<string, unknown>, warn: (m: string) => void): DevcontainerPlan['lifecycle'] {
  const steps: DevcontainerPlan['lifecycle'] = {};
  for (const name of LIFECYCLE_ORDER) {
    if (value[name] === undefined) continue;
    const step = lifecycleStep(name, value[name], warn);
    if (step) steps[name] = step;
  }
  return steps;
}

function waitForOf(value: unknown, warn: (m: string) => void): LifecycleName {
  if (value === undefined) return 'updateContentCommand';
  if (value === 'initializeCommand') return 'onCreateCommand';
  if (value === 'postAttachCommand') {
    warn('waitFor: postAttachCommand runs when a person opens the editor, which cannot wait for it; the editor waits for postStartCommand instead');
    return 'postStartCommand';
  }
  if (typeof value === 'string' && (LIFECYCLE_ORDER as readonly string[]).includes(value)) return value as LifecycleName;
  warn(`waitFor: must be one of ${LIFECYCLE_ORDER.slice(0, 4).join(', ')}; updateContentCommand (the default) is used`);
  return 'updateContentCommand';
}

/** forwardPorts (numbers, or "localhost:3000") with the portsAttributes of each. */
function forwardPorts(value: unknown, attributes: unknown, warn: (m: string) => void): ForwardedPort[] {
  const ports: ForwardedPort[] = [];
  if (value === undefined) return ports;
  if (!Array.isArray(value)) {
    warn('forwardPorts: must be an array of ports (3000, or "localhost:3000"); not used');
    return ports;
  }
  const attrs = isObject(attributes) ? attributes : {};
  if (attributes !== undefined && !isObject(attributes)) warn('portsAttributes: must be an object by port ({ "3000": { "label": "App" } }); not used');
  for (const entry of value) {
    const port = typeof entry === 'number' ? entry : typeof entry === 'string' ? localPort(entry) : undefined;
    if (port === undefined || !Number.isInteger(port) || port < 1 || port > 65535) {
      warn(`forwardPorts: ${JSON.stringify(entry)} is not a port of the editor's own (1-65535, or "localhost:<port>"); another container's port needs Docker Compose, which is not run here`);
      continue;
    }
    if (ports.some((p) => p.port === port)) continue;
    if (ports.length >= MAX_PORTS) {
      warn(`forwardPorts: more than ${MAX_PORTS} ports; only the first ${MAX_PORTS} are listed`);
      break;
    }
    ports.push({ port, ...portAttributes(attrs[String(port)], port, warn) });
  }
  return ports;
}

function localPort(entry: string): number | undefined {
  const match = /^(?:(localhost|127\.0\.0\.1):)?(\d{1,5})$/.exec(entry.trim());
  return match ? Number(match[2]) : undefined;
}

function portAttributes(value: unknown, port: number, warn: (m: string) => void): Omit<ForwardedPort, 'port'> {
  if (value === undefined) return {};
  if (!isObject(value)) {
    warn(`portsAttributes.${port}: must be an object ({ "label": "App", "protocol": "http" }); not used`);
    return {};
  }
  const out: Omit<ForwardedPort, 'port'> = {};
  if (typeof value.label === 'string') out.label = value.label.slice(0, 200);
  if (value.protocol === 'http' || value.protocol === 'https') out.protocol = value.protocol;
  else if (value.protocol !== undefined) warn(`portsAttributes.${port}.protocol: must be "http" or "https"; http is used`);
  if (typeof value.onAutoForward === 'string') out.onAutoForward = value.onAutoForward;
  return out;
}

/** hostRequirements: cpus, memory and storage; gpu cannot be given to a process or asked of a Pod in a portable way. */
function hostRequirements(value: unknown, warn: (m: string) => void): HostRequirements | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value)) {
    warn('hostRequirements: must be an object ({ "cpus": 2, "memory": "4gb", "storage": "32gb" }); not used');
    return undefined;
  }
  const out: HostRequirements = {};
  if (value.cpus !== undefined) {
    if (typeof value.cpus === 'number' && value.cpus > 0 && value.cpus <= 1024) out.cpus = value.cpus;
    else warn('hostRequirements.cpus: must be a number of cores above 0 (2, or 0.5); not used');
  }
  for (const field of ['memory', 'storage'] as const) {
    if (value[field] === undefined) continue;
    const bytes = typeof value[field] === 'string' ? sizeBytes(value[field]) : undefined;
    if (bytes === undefined) warn(`hostRequirements.${field}: must be a size such as "4gb", "512mb" (kb, mb, gb, tb); not used`);
    else out[field === 'memory' ? 'memoryBytes' : 'storageBytes'] = bytes;
  }
  if (value.gpu !== undefined && value.gpu !== false) warn('hostRequirements.gpu: a GPU is not asked for or checked here (no portable way to give one to an editor); not used');
  return Object.keys(out).length > 0 ? out : undefined;
}

/** Bytes of "4gb", "512mb", "1.5tb" (1024-based), or undefined. */
export function sizeBytes(text: string): number | undefined {
  const match = SIZE.exec(text.trim());
  if (!match) return undefined;
  const bytes = Math.round(Number(match[1]) * (match[2] ? UNITS[match[2].toLowerCase()] : 1));
  return bytes > 0 && Number.isSafeInteger(bytes) ? bytes : undefined;
}
