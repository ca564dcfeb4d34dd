// The controller's own record of each server: status, and the generation counter of its spec.
// It lives in the data folder (`<data>/status/<name>.yaml`), not in the manifest, so the
// manifest file has writers that are people and the API only, never the controller.
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { writeFileAtomic } from '../core/atomic-write.ts';
import type { EditorServerSpec, EditorServerStatus, RuntimeRef } from './types.ts';

export interface StatusRecord {
  /** Moves by one whenever the spec's canonical hash changes, whoever changed it. */
  generation: number;
  specHash: string;
  uid?: string;
  status?: EditorServerStatus;
}

const HEADER = '# Written by devbox-controller: the status of one server. Edit its manifest, not this file.\n';

/** A hash of the spec that ignores key order, comments and formatting. */
export function specHash(spec: EditorServerSpec): string {
  return createHash('sha256').update(canonicalJSON(spec)).digest('hex').slice(0, 32);
}

function canonicalJSON(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJSON).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJSON(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/**
 * A status as this version keeps it. An older record's `pid` and `pidStartTicks` become
 * `runtimeRef` ({kind: process}), taken over once: the next write has only the reference. A
 * `runtimeRef` that is not an object of strings and numbers with a `kind` is dropped. Whatever
 * it names is still used only after its runtime says it is this server's editor.
 */
export function currentStatus(value: unknown): EditorServerStatus | undefined {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const { pid, pidStartTicks, runtimeRef, ...rest } = value as Record<string, unknown>;
  const status = rest as unknown as EditorServerStatus;
  const ref = runtimeRefOf(runtimeRef) ?? legacyProcessRef(pid, pidStartTicks);
  if (ref) status.runtimeRef = ref;
  else if (runtimeRef === null || pid === null) status.runtimeRef = null;
  return status;
}

function runtimeRefOf(value: unknown): RuntimeRef | undefined {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const entries = Object.entries(value as Record<string, unknown>);
  const plain = entries.length <= 16 && entries.every(([, v]) => (typeof v === 'string' && v.length <= 512) || (typeof v === 'number' && Number.isFinite(v)));
  return plain && typeof (value as RuntimeRef).kind === 'string' ? { ...(value as RuntimeRef) } : undefined;
}

function legacyProcessRef(pid: unknown, startTicks: unknown): RuntimeRef | undefined {
  return Number.isSafeInteger(pid) && (pid as number) > 0 && Number.isSafeInteger(startTicks) && (startTicks as number) >= 0
    ? { kind: 'process', pid: pid as number, startTicks: startTicks as number }
    : undefined;
}

/** A word or path that reads as itself in YAML (no quotes needed): letters, digits, `_ . / -`, single spaces. */
const PLAIN = /^[A-Za-z/][\w./-]*(?: [\w./-]+)*$/;
/** Words some YAML readers take for booleans or null. */
const RESERVED = /^(?:true|false|null|yes|no|on|off|y|n)$/i;

/**
 * The record as block YAML, as the `yaml` package writes it but for strings that need quotes,
 * which are JSON strings (a JSON string is a YAML double-quoted one). Several times faster than
 * the package's stringify, which was a good part of what a new server costs at first sight.
 */
export function recordYaml(value: unknown, indent = ''): string {
  let out = '';
  if (Array.isArray(value)) {
    for (const item of value) out += `${indent}-${nested(item, `${indent}  `, true)}`;
    return out;
  }
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
    if (item !== undefined) out += `${indent}${scalar(key)}:${nested(item, `${indent}  `, false)}`;
  }
  return out;
}

/** What follows `key:` or `-`: a scalar on the same line, or a block below. */
function nested(value: unknown, indent: string, inSequence: boolean): string {
  if (value === null || typeof value !== 'object') return ` ${scalar(value)}\n`;
  const empty = Array.isArray(value) ? value.length === 0 : Object.values(value).every((v) => v === undefined);
  if (empty) return Array.isArray(value) ? ' []\n' : ' {}\n';
  // An item of a sequence starts on the dash's line, as the package writes it.
  return inSequence ? ` ${recordYaml(value, indent).slice(indent.length)}` : `\n${recordYaml(value, indent)}`;
}

function scalar(value: unknown): string {
  if (typeof value === 'string') return PLAIN.test(value) && !RESERVED.test(value) ? value : JSON.stringify(value);
  if (typeof value === 'number' && !Number.isFinite(value)) return 'null';
  return value === undefined ? 'null' : JSON.stringify(value);
}

/**
 * Status records, one file per server name; only this process writes them. Each record read or
 * written is remembered, so a reconcile that reads a server's record again (every one does, to
 * compare) costs no file read: only this instance writes them (a restore writes through it too).
 */
export class StatusFiles {
  readonly dir: string;
  readonly #known = new Map<string, StatusRecord>();
  /** Whether the folder is known to exist (made once, not before every write). */
  #made = false;
  /** Whether every record on disk is in #known (loadAll ran): only this process writes them. */
  #loaded = false;
  /**
   * The manifest version (its file's identity, size and times) each record was last observed
   * with, so the status write that ends a reconcile (ManifestStore.writeStatus: is the manifest
   * still there and valid?) looks at the file's stats instead of reading and parsing it again.
   */
  readonly #seen = new Map<string, string>();

  constructor(dir: string) {
    this.dir = dir;
  }

  fileOf(name: string): string {
    return join(this.dir, `${name}.yaml`);
  }

  /**
   * Reads every record in the folder (at start-up, before any other read), and returns the uid
   * each one gives its server. From then on a name without a record is known to have none: a
   * server seen for the first time costs no read here.
   */
  async loadAll(): Promise<Map<string, string>> {
    const entries = await fs.readdir(this.dir).catch(() => [] as string[]);
    const names = entries.filter((e) => e.endsWith('.yaml')).map((e) => e.slice(0, -'.yaml'.length));
    await Promise.all(names.map(async (name) => {
      const record = await this.#readFile(name);
      if (record) this.#known.set(name, record);
    }));
    this.#loaded = true;
    return new Map([...this.#known].flatMap(([name, record]) => (record.uid !== undefined ? [[name, record.uid] as const] : [])));
  }

  /** The record, or undefined when there is none (or it is not one: it is then rebuilt). A copy: the caller may change it. */
  async read(name: string): Promise<StatusRecord | undefined> {
    const known = this.#known.get(name);
    if (known) return structuredClone(known);
    if (this.#loaded) return undefined;
    const record = await this.#readFile(name);
    if (record) this.#known.set(name, structuredClone(record));
    return record;
  }

  async #readFile(name: string): Promise<StatusRecord | undefined> {
    const text = await fs.readFile(this.fileOf(name), 'utf8').catch((error) => {
      if (error.code === 'ENOENT') return undefined;
      throw error;
    });
    if (text === undefined) return undefined;
    let value: unknown;
    try {
      value = parse(text);
    } catch {
      return undefined;
    }
    const record = value as Partial<StatusRecord> | null;
    if (!record || typeof record !== 'object' || !Number.isInteger(record.generation) || typeof record.specHash !== 'string') return undefined;
    if (record.status !== undefined) record.status = currentStatus(record.status);
    return record as StatusRecord;
  }

  /**
   * Holds a record in memory only: a server seen for the first time, whose first status commit
   * (in the same reconcile) writes it. Until then a restart sees it for the first time again.
   */
  remember(name: string, record: StatusRecord): void {
    this.#known.set(name, structuredClone(record));
  }

  /** Replaces the record whole and durably (writeFileAtomic), so a crash leaves the old record or the new. */
  async write(name: string, record: StatusRecord): Promise<void> {
    if (!this.#made) {
      await fs.mkdir(this.dir, { recursive: true });
      this.#made = true;
    }
    await writeFileAtomic(this.fileOf(name), HEADER + recordYaml(record), {
      durable: true,
      // The folder went since it was made (a data folder emptied by hand): made again.
      makeFolder: (dir) => fs.mkdir(dir, { recursive: true }),
    });
    this.#known.set(name, structuredClone(record));
  }

  /** Notes the manifest version the name's record was just observed with (the manifest was valid). */
  seen(name: string, version: string): void {
    this.#seen.set(name, version);
  }

  /** The manifest version the name's record was last observed with; undefined without a record, or when read from no file. */
  seenVersion(name: string): string | undefined {
    return this.#known.has(name) ? this.#seen.get(name) : undefined;
  }

  async remove(name: string): Promise<void> {
    this.#known.delete(name);
    this.#seen.delete(name);
    await fs.rm(this.fileOf(name), { force: true });
  }
}
