// Every running editor's /healthz, read in the background: the running editor's health probe.
// Its `lastHeartbeat` is not activity: code-server beats each minute while any connection stays
// open, so a tab left open with nobody at it would keep its editor forever (docs/idle.md); what
// a person does is read at the proxy instead.
import { checkHealth, type HealthResult } from '../runtime/health.ts';
import type { EditorEndpoint } from '../runtime/interface.ts';
import { BACKGROUND_MS, every, type Periodic } from '../core/ticks.ts';

export interface HeartbeatReaderOptions {
  /** The running editors: name and where each answers. */
  running: () => Iterable<[string, EditorEndpoint]>;
  /** Whether the name still runs (a heartbeat read while it was deleted is dropped). */
  stillRunning: (name: string) => boolean;
  /** What each read saw of the editor's health: answered or not (the running editor's probe). */
  onHealth?: (name: string, answered: boolean) => void;
  /** The wait before the next round, asked before each (it follows the config). */
  intervalMs: () => number;
  /** Asks an editor's /healthz (tests pass a fake). */
  health?: (endpoint: EditorEndpoint) => Promise<HealthResult>;
}

const TICK_MS = BACKGROUND_MS;
/** Editors asked at once in a round. */
const READS_AT_ONCE = 16;
/** Reads in a row an editor leaves unanswered before it counts as not answering (one slow answer is not a failure). */
export const UNANSWERED_READS = 3;

/** How often the running editors' health is read: a quarter of the shortest idle timeout in force, from 1 s to 30 s. */
export function heartbeatIntervalMs(idleTimeoutsSeconds: Iterable<number>): number {
  let shortest = Infinity;
  for (const seconds of idleTimeoutsSeconds) if (seconds > 0 && seconds < shortest) shortest = seconds;
  return Math.min(30_000, Math.max(1000, (shortest * 1000) / 4));
}

/** Reads every running editor's health, a few at a time, round after round, until disposed. */
export class HeartbeatReader {
  readonly #options: HeartbeatReaderOptions;
  readonly #health: (endpoint: EditorEndpoint) => Promise<HealthResult>;
  #timer: Periodic | undefined;
  /** The round under way, if any. */
  #round: Promise<void> | undefined;
  #disposed = false;
  #lastRound = 0;
  /** Reads in a row each editor left unanswered. */
  readonly #unanswered = new Map<string, number>();

  constructor(options: HeartbeatReaderOptions) {
    this.#options = options;
    this.#health = options.health ?? ((endpoint) => checkHealth(endpoint, 1000));
  }

  start(): void {
    this.#schedule();
  }

  /** One round: each running editor's /healthz. */
  async readOnce(): Promise<void> {
    const editors = [...this.#options.running()];
    // A few at a time, so their answers come back together: each wake-up of the service costs
    // more than the question (src/core/ticks.ts), and one at a time made three a question.
    for (let at = 0; at < editors.length && !this.#disposed; at += READS_AT_ONCE) {
      await Promise.all(editors.slice(at, at + READS_AT_ONCE).map(([name, endpoint]) => this.#read(name, endpoint)));
    }
  }

  async #read(name: string, endpoint: EditorEndpoint): Promise<void> {
    const { ok } = await this.#health(endpoint);
    if (this.#disposed) return;
    if (!this.#options.stillRunning(name)) {
      this.#unanswered.delete(name);
      return;
    }
    const missed = ok ? 0 : (this.#unanswered.get(name) ?? 0) + 1;
    if (missed === 0) this.#unanswered.delete(name);
    else this.#unanswered.set(name, missed);
    if (ok || missed >= UNANSWERED_READS) this.#options.onHealth?.(name, ok);
  }

  /** Stops the rounds and waits for the one under way. */
  async dispose(): Promise<void> {
    this.#disposed = true;
    this.#timer?.stop();
    await this.#round;
  }

  // Checked at every background tick (src/core/ticks.ts), so a shorter timeout (a new server's, a
  // config edit) takes effect at once rather than after the wait the previous one set.
  #schedule(): void {
    if (this.#disposed || this.#timer) return;
    this.#timer = every(TICK_MS, () => {
      if (this.#disposed || this.#round || Date.now() - this.#lastRound < this.#options.intervalMs()) return;
      this.#lastRound = Date.now();
      this.#round = this.readOnce().catch(() => undefined).finally(() => {
        this.#round = undefined;
      });
    });
  }
}
