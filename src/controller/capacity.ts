// Capacity: how many editors may run at once and how much memory they may use together (the
// config's `capacity`, read at every decision). One decision shared by the API (a clear 409
// before anything is written) and the controller (before it spawns, whoever asked: the API, a
// hand edit, GitOps, the service's own start-up). Race-free: admit() is synchronous and an
// admitted start holds its slot until its editor runs or the start gives up.
import type { Config } from '../config/settings.ts';
import type { MachineMemory } from '../runtime/interface.ts';

export type { MachineMemory };
import type { Admission, CapacityGate, CapacityLimit } from '../index/commands.ts';
import type { PersonQuotas, PersonUse } from './person-quotas.ts';

// The decision's answer is what the API reads through the index's CapacityGate, so it is defined there.
export type { Admission, CapacityLimit };

/** What a code-server takes when idle (the issue's figure): the least a new editor is counted at. */
export const MIN_EDITOR_MB = 200;
/** A slot held for a start that neither ran nor gave up is freed after this long (a lost start). */
const RESERVATION_MS = 120_000;

export interface CapacityDeps {
  /** The config's `capacity` in use now. */
  config: () => Config['capacity'];
  /** Names of the servers whose editor runs (launched or adopted by this service, checked in /proc). */
  running: () => Iterable<string>;
  /** Resident memory of the server's editor (its whole process group) at the last stats sample, in MB. */
  memoryOf: (name: string) => number | undefined;
  /** When the server was last used (ms since the epoch), or when its editor started if never since. */
  lastUsed: (name: string) => number | undefined;
  /** Queues the name for a reconcile. */
  enqueue: (name: string) => void;
  now?: () => number;
  /** The memory the editors share, by the runtime's word (undefined: none to offer, `auto` sets no limit); read once, at the first decision that needs it. */
  machine?: () => MachineMemory | undefined;
  /** The per-person limits (capacity.perPerson), asked before the fleet's; without it, none. */
  quotas?: PersonQuotas;
}


/** `auto`: the machine's memory less room for the service itself, the larger of 1 GB and 20 %. */
export function autoMemoryLimit(machine: MachineMemory): { limitMb: number; source: string } {
  const keptMb = Math.max(1024, Math.round(machine.totalMb * 0.2));
  return {
    limitMb: Math.max(0, machine.totalMb - keptMb),
    source: `auto: ${machine.totalMb} MB (${machine.source}) less ${keptMb} MB kept for the service (the larger of 1 GB and 20 %)`,
  };
}

export class Capacity implements CapacityGate {
  readonly #deps: CapacityDeps;
  readonly #now: () => number;
  #machine: MachineMemory | undefined | null;
  /** Starts admitted and not yet running, by name: until when the slot is held. */
  readonly #reserved = new Map<string, number>();
  /** Idle editors being stopped to make room, and for whom. */
  readonly #evicting = new Map<string, string>();
  /** Servers the controller refused, woken when room may have freed. */
  readonly #waiting = new Set<string>();
  /** The running set last seen, to notice an editor leaving it. */
  #lastRunning = new Set<string>();

  constructor(deps: CapacityDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? Date.now;
  }

  /**
   * Decides whether the server's editor may start now, and holds its slot when it may. A server
   * whose slot is held already, or whose editor runs (a restart), is admitted as it is.
   */
  admit(name: string): Admission {
    this.#expire();
    const victim = [...this.#evicting].find(([, starter]) => starter === name)?.[0];
    if (victim !== undefined) {
      if (this.#runningSet().has(victim)) {
        return { kind: 'makingRoom', victim, limit: 'capacity.maxRunning', message: `waiting for "${victim}" to stop to make room` };
      }
      // The editor stopped for it is gone: decide again, from what runs now.
      this.#evicting.delete(victim);
      this.#reserved.delete(name);
    }
    if (this.#reserved.has(name) || this.#runningSet().has(name)) return this.#hold(name);
    // A person over their own quota waits for their own editors: no one else's is stopped for it.
    const quota = this.#quotaFor(name);
    if (quota) return { kind: 'refused', limit: quota.limit, message: quota.message, quota };
    const full = this.#fullFor(name);
    if (!full) return this.#hold(name);
    const config = this.#deps.config();
    if (config.whenFull === 'stopIdlest') {
      const idlest = this.#idlest(name);
      if (idlest !== undefined) {
        this.#evicting.set(idlest, name);
        this.#hold(name);
        this.#deps.enqueue(idlest);
        return { kind: 'makingRoom', victim: idlest, limit: full.limit, message: `${full.figures}: stopping "${idlest}", the least recently active idle editor, to make room` };
      }
      return { kind: 'refused', limit: full.limit, message: `${full.figures}, and no editor has been idle for capacity.idleAfterSeconds (${config.idleAfterSeconds} s) to stop instead: ${full.advice}` };
    }
    return { kind: 'refused', limit: full.limit, message: `${full.figures}: ${full.advice}` };
  }

  /** The start gave up or its editor runs now: its slot is no longer held for it. */
  release(name: string): void {
    this.#reserved.delete(name);
    for (const [victim, starter] of this.#evicting) if (starter === name) this.#evicting.delete(victim);
  }

  /** The server for which this editor is being stopped to make room, if it is. */
  evictionOf(name: string): string | undefined {
    return this.#evicting.get(name);
  }

  /** The controller refused the server: it is reconciled again when room may have freed. */
  wait(name: string): void {
    this.#waiting.add(name);
  }

  /** The server no longer wants to start (stopped on request, deleted). */
  forget(name: string): void {
    this.release(name);
    this.#waiting.delete(name);
    if (this.#evicting.has(name)) this.#finishEviction(name);
  }

  /**
   * A server's record changed (or it was deleted): an editor that left the running set frees its
   * slot for the start it was stopped for, or for the servers waiting.
   */
  noticeChange(): void {
    const now = this.#runningSet();
    let freed = false;
    for (const name of this.#lastRunning) {
      if (now.has(name)) continue;
      freed = true;
      if (this.#evicting.has(name)) this.#finishEviction(name);
    }
    this.#lastRunning = now;
    if (freed) this.wake();
  }

  /** After a stats sample: memory an editor gave back may make room for one waiting. */
  noticeSample(): void {
    if (this.#waiting.size === 0) return;
    for (const name of this.#waiting) {
      if (!this.#quotaFor(name) && !this.#fullFor(name)) return this.wake();
    }
  }

  /** Reconciles every waiting server again (room freed, or the limits changed). */
  wake(): void {
    const names = [...this.#waiting];
    this.#waiting.clear();
    for (const name of names) this.#deps.enqueue(name);
  }

  /** Figures for GET /health. */
  read(): Record<string, unknown> {
    this.#expire();
    const config = this.#deps.config();
    const running = this.#runningSet();
    const starting = [...this.#reserved.keys()].filter((n) => !running.has(n));
    const memory = this.#memoryLimit();
    const used = Math.round(this.#memoryUsed(undefined));
    return {
      running: running.size,
      starting: starting.length,
      max_running: config.maxRunning === 0 ? null : config.maxRunning,
      memory_used_mb: used,
      memory_limit_mb: memory?.limitMb ?? null,
      memory_free_mb: memory ? Math.max(0, memory.limitMb - used) : null,
      memory_limit_source: memory?.source ?? this.#noMemoryLimit(),
      editor_estimate_mb: Math.round(this.#estimate()),
      when_full: config.whenFull,
      idle_after_seconds: config.idleAfterSeconds,
      waiting: [...this.#waiting].sort(),
      ...(this.#deps.quotas ? { per_person: this.#perPerson() } : {}),
    };
  }

  /** The memory all editors together may use (capacity.maxMemoryMb, or what auto leaves of the machine), or undefined when none is set. */
  memoryLimit(): { limitMb: number; source: string } | undefined {
    return this.#memoryLimit();
  }

  /** What each person with a server uses now (running editors and starts holding a slot, their memory, their servers). */
  people(): { people: PersonUse[]; total: number } {
    const estimate = this.#estimate();
    return this.#deps.quotas?.use(this.#occupants(undefined), (n) => this.#deps.memoryOf(n) ?? estimate) ?? { people: [], total: 0 };
  }

  /** GET /health's capacity.per_person: the limits (null: none) and each person's use. */
  #perPerson(): Record<string, unknown> {
    const limits = this.#deps.config().perPerson;
    const { people, total } = this.people();
    return {
      limits: { running_editors: limits.runningEditors || null, servers: limits.servers || null, memory_mb: limits.memoryMb || null },
      people,
      people_total: total,
    };
  }

  /** The per-person limit one more editor for `name` would pass, if any. */
  #quotaFor(name: string) {
    const quotas = this.#deps.quotas;
    if (!quotas) return undefined;
    const estimate = this.#estimate();
    return quotas.refusal(name, this.#occupants(name), (n) => this.#deps.memoryOf(n) ?? estimate, estimate);
  }

  #hold(name: string): Admission {
    this.#reserved.set(name, this.#now() + RESERVATION_MS);
    return { kind: 'admitted' };
  }

  /** The editor stopped for a start is gone: that start decides again (see admit), its slot held meanwhile. */
  #finishEviction(victim: string): void {
    const starter = this.#evicting.get(victim);
    if (starter !== undefined) this.#deps.enqueue(starter);
  }

  #expire(): void {
    const now = this.#now();
    for (const [name, until] of this.#reserved) if (until <= now) this.release(name);
  }

  #runningSet(): Set<string> {
    return new Set(this.#deps.running());
  }

  /**
   * Names that take room now, the candidate left out: editors running and starts holding a slot;
   * a start waiting for an editor to stop for it takes that editor's room, so counts once.
   */
  #occupants(except: string | undefined): Set<string> {
    const names = this.#runningSet();
    const waitingFor = new Set([...this.#evicting].flatMap(([victim, starter]) => (names.has(victim) ? [starter] : [])));
    for (const name of this.#reserved.keys()) if (!waitingFor.has(name)) names.add(name);
    if (except !== undefined) names.delete(except);
    return names;
  }

  /** The limit one more editor would pass, with the figures and what to do; undefined when there is room. */
  #fullFor(name: string): { limit: CapacityLimit; figures: string; advice: string } | undefined {
    const config = this.#deps.config();
    const occupants = this.#occupants(name);
    if (config.maxRunning > 0 && occupants.size + 1 > config.maxRunning) {
      const starting = [...occupants].filter((n) => !this.#runningSet().has(n)).length;
      return {
        limit: 'capacity.maxRunning',
        figures: `${occupants.size} of ${config.maxRunning} editors are running${starting > 0 ? ` or starting` : ''} (capacity.maxRunning)`,
        advice: 'stop one, or raise capacity.maxRunning in the config',
      };
    }
    const memory = this.#memoryLimit();
    if (!memory) return undefined;
    const used = this.#memoryUsed(name);
    const need = this.#estimate();
    if (used + need <= memory.limitMb) return undefined;
    const where = config.maxMemoryMb === 'auto' ? `capacity.maxMemoryMb ${memory.source}` : 'capacity.maxMemoryMb';
    return {
      limit: 'capacity.maxMemoryMb',
      figures: `the running editors use ${Math.round(used)} MB of ${memory.limitMb} MB (${where}) and one more needs about ${Math.round(need)} MB`,
      advice: 'stop one, or raise capacity.maxMemoryMb in the config',
    };
  }

  /** Why no memory limit applies: none was asked for, or `auto` where the runtime has no memory of its own to share. */
  #noMemoryLimit(): string {
    return this.#deps.config().maxMemoryMb === 0
      ? 'capacity.maxMemoryMb is 0: no limit'
      : 'capacity.maxMemoryMb is auto and the runtime has no memory of its own to share (a cluster\'s scheduler places each editor by its requests): no limit of ours';
  }

  #memoryLimit(): { limitMb: number; source: string } | undefined {
    const given = this.#deps.config().maxMemoryMb;
    if (given === 0) return undefined;
    if (given !== 'auto') return { limitMb: given, source: 'capacity.maxMemoryMb' };
    this.#machine ??= this.#deps.machine?.() ?? null;
    return this.#machine ? autoMemoryLimit(this.#machine) : undefined;
  }

  /** Resident memory of the editors that take room (an editor not sampled yet counts at the estimate). */
  #memoryUsed(except: string | undefined): number {
    const estimate = this.#estimate();
    let used = 0;
    for (const name of this.#occupants(except)) used += this.#deps.memoryOf(name) ?? estimate;
    return used;
  }

  /** What one more editor is counted at: the mean of the sampled running editors, at least MIN_EDITOR_MB. */
  #estimate(): number {
    const samples = [...this.#runningSet()].flatMap((n) => {
      const mb = this.#deps.memoryOf(n);
      return mb === undefined ? [] : [mb];
    });
    const mean = samples.length === 0 ? 0 : samples.reduce((a, b) => a + b, 0) / samples.length;
    return Math.max(MIN_EDITOR_MB, mean);
  }

  /**
   * The running editor, other than `starter`, that was used least recently and not for at least
   * capacity.idleAfterSeconds; editors starting or already being stopped are left alone.
   */
  #idlest(starter: string): string | undefined {
    const idleMs = this.#deps.config().idleAfterSeconds * 1000;
    const now = this.#now();
    let best: { name: string; at: number } | undefined;
    for (const name of this.#runningSet()) {
      if (name === starter || this.#reserved.has(name) || this.#evicting.has(name)) continue;
      const at = this.#deps.lastUsed(name);
      if (at === undefined || now - at < idleMs) continue;
      if (!best || at < best.at) best = { name, at };
    }
    return best?.name;
  }
}
