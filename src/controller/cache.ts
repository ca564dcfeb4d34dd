// The controller's memory of each server: the last manifest read (the record, which the API and
// the proxy read) and the facts that live only in memory (the live editor, probes, crashes).
import type { ServerRecord } from '../index/records.ts';
import type { EditorEndpoint, ExitInfo, RuntimeRef } from '../runtime/interface.ts';

// The record is what the index serves (src/index/), so it is defined there.
export type { ServerRecord };

/** Facts about a server that live only in memory. */
export interface Live {
  /** The runtime's reference to the live editor. */
  ref?: RuntimeRef;
  /** Taken over at start-up and not looked at since: its first look asks /healthz at once. */
  adopted?: boolean;
  /** Where the live editor answers (from its launch, or its command line when adopted). */
  endpoint?: EditorEndpoint;
  /** The manifests folder (device and inode) the file was last read from. */
  seenIn?: string;
  /** Since when the file has been missing from the folder it was in. */
  missingSince?: number;
  healthy: boolean;
  probe?: symbol;
  probeFailed?: string;
  lastExit?: ExitInfo;
  crashTimes: number[];
  nextRestartAt?: number;
  /** When the editor was first seen dead with its exit not yet reported. */
  exitWaitSince?: number;
  /** The workspace path the runtime gave once the server's storage was prepared (prepared again before every start). */
  workspacePath?: string;
  /** The desired settings (groups' user_settings and spec.settings, as JSON) last applied to settings.json. */
  settingsText?: string;
  /** Extension groups the spec names that the config lacks, already reported. */
  unknownGroups?: string[];
  /** Failed attempts to apply the workspace source in a row, and when the next may start. */
  sourceFailures?: number;
  sourceRetryAt?: number;
  /** The spec (and restart request) a terminal error was recorded for: not acted on again. */
  terminal?: string;
  /** An idle-stopped server was asked to start (API start, its editor opened): its next reconcile lifts the idle stop. */
  wakeRequested?: boolean;
  /** Woken and not yet answering: the proxy shows the starting page instead of routing. */
  waking?: boolean;
  /** The fresh heartbeat read before an idle stop got no answer once: the stop waits for one more try. */
  idleReadMissed?: boolean;
  /**
   * The wanted extensions (as JSON) last found all in place before a start. A start the platform
   * has not placed is asked again with them as they were: no editor has used the volume since,
   * and reading it on a cluster means a helper Pod on the node at every try.
   */
  extensionsReady?: string;
  /** Reconciles in a row that found the server's storage out of reach (StorageUnavailable). */
  storageTries?: number;
  /** The platform took the last start but has not placed the editor (EditorNotPlaced): how many tries so far. */
  notPlaced?: { attempts: number };
  /** What the runtime last said keeps the live editor from serving, and whether it had been Running when it came. */
  problem?: { reason: string; message: string; whileRunning: boolean };
}

/** Forgets the editor a server had, after a stop: whatever stopped it, its live facts go the same way. */
export function forgetEditor(live: Live): void {
  live.ref = undefined;
  live.endpoint = undefined;
  live.probe = undefined;
  live.healthy = false;
  live.lastExit = undefined;
  live.probeFailed = undefined;
  live.notPlaced = undefined;
  live.problem = undefined;
}

/**
 * A server's Live, one class so every server's facts share one shape (an object literal with its
 * own accessor closures gave each of ten thousand servers a shape of its own, and every read of
 * one through a shared line of code a slow lookup). Its `ref` keeps the cache's map of what runs
 * in step wherever a step sets or clears it.
 */
class LiveFacts implements Live {
  readonly #name: string;
  readonly #running: Map<string, RuntimeRef>;
  #ref: RuntimeRef | undefined = undefined;
  adopted?: boolean = undefined;
  endpoint?: EditorEndpoint = undefined;
  seenIn?: string = undefined;
  missingSince?: number = undefined;
  healthy = false;
  probe?: symbol = undefined;
  probeFailed?: string = undefined;
  lastExit?: ExitInfo = undefined;
  crashTimes: number[] = [];
  nextRestartAt?: number = undefined;
  exitWaitSince?: number = undefined;
  workspacePath?: string = undefined;
  settingsText?: string = undefined;
  unknownGroups?: string[] = undefined;
  sourceFailures?: number = undefined;
  sourceRetryAt?: number = undefined;
  terminal?: string = undefined;
  wakeRequested?: boolean = undefined;
  waking?: boolean = undefined;
  idleReadMissed?: boolean = undefined;
  extensionsReady?: string = undefined;
  storageTries?: number = undefined;
  notPlaced?: { attempts: number } = undefined;
  problem?: { reason: string; message: string; whileRunning: boolean } = undefined;

  constructor(name: string, running: Map<string, RuntimeRef>) {
    this.#name = name;
    this.#running = running;
  }

  get ref(): RuntimeRef | undefined {
    return this.#ref;
  }

  set ref(value: RuntimeRef | undefined) {
    this.#ref = value;
    if (value) this.#running.set(this.#name, value);
    else this.#running.delete(this.#name);
  }
}

/**
 * The records by name, counting every set and delete: every change to a record (a manifest read,
 * a status written, a manifest found invalid) ends in a set, so while the count stays the same no
 * record was touched, and GET /servers' kept list need not look at ten thousand of them to know.
 */
export class CountedRecords extends Map<string, ServerRecord> {
  changes = 0;

  override set(name: string, record: ServerRecord): this {
    this.changes++;
    return super.set(name, record);
  }

  override delete(name: string): boolean {
    this.changes++;
    return super.delete(name);
  }

  override clear(): void {
    this.changes++;
    super.clear();
  }
}

export class ServerCache {
  readonly records = new CountedRecords();
  readonly lives = new Map<string, Live>();
  /** Names whose deletion was asked for while their file is missing or invalid (it cannot carry the mark). */
  readonly deletions = new Set<string>();
  /** Servers seen but not yet told to readers: their first status commit tells them. */
  readonly unannounced = new Set<string>();
  /** Editors stopped because their file stayed missing: a status naming one, when the file is back, is stale. */
  readonly stoppedWhileMissing = new Map<string, RuntimeRef>();

  /** Each `live.ref` that is set, by name: what runs, known without walking every server. */
  readonly #withRef = new Map<string, RuntimeRef>();

  /** The name's in-memory facts, made on first use. */
  live(name: string): Live {
    let live = this.lives.get(name);
    if (!live) {
      live = new LiveFacts(name, this.#withRef);
      this.lives.set(name, live);
    }
    return live;
  }

  /** The runtime's reference of each live editor, by name: O(running), however many servers are declared. */
  refs(): Map<string, RuntimeRef> {
    return new Map(this.#withRef);
  }

  /** Stores a freshly read manifest in the name's record (kept, with its warnings, if there is one). */
  setRecord(record: ServerRecord): ServerRecord {
    const existing = this.records.get(record.name);
    const next = existing ?? record;
    next.server = record.server;
    next.problems = undefined;
    this.records.set(record.name, next);
    return next;
  }

  drop(name: string): void {
    this.unannounced.delete(name);
    this.records.delete(name);
    this.lives.delete(name);
    this.#withRef.delete(name);
  }
}
