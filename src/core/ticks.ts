// The service's periodic work, woken together. On the machines this runs on (virtual machines
// whose host takes back memory a guest has not touched for a while), a wake-up of an idle process
// costs far more than the little work it does: the pages it touches have gone cold, and touching
// a page left alone for 100 ms costs 30–100 µs here. A bare Node.js process with a timer that
// does nothing once a second uses about 1 % of a core (docs/sizing.md). So periodic jobs of the
// same period share one timer and run at the same wake-up, and the service's background checks
// share one period (BACKGROUND_MS): at rest it wakes about once every two seconds, not once for
// each job.

/** The period of the service's background checks (folders, log polls, adopted editors, heartbeat schedule, usage samples). */
export const BACKGROUND_MS = 2000;

interface Group {
  readonly timer: NodeJS.Timeout;
  readonly jobs: Set<() => void>;
}

const groups = new Map<number, Group>();

/** A periodic job; stop() takes it off its timer. */
export interface Periodic {
  stop(): void;
}

/**
 * Runs `run` every `ms`, on the timer every other job of that period runs on. The timer never keeps
 * the process alive; `run` handles its own errors (an exception would crash the process, as it
 * would from a timer of its own).
 */
export function every(ms: number, run: () => void): Periodic {
  const period = Math.max(1, ms);
  let group = groups.get(period);
  if (!group) {
    const jobs = new Set<() => void>();
    const timer = setInterval(() => {
      for (const job of jobs) job();
    }, period);
    timer.unref();
    group = { timer, jobs };
    groups.set(period, group);
  }
  const owner = group;
  const job = () => run(); // its own identity, so one function can run on a timer twice
  owner.jobs.add(job);
  return {
    stop() {
      if (!owner.jobs.delete(job) || owner.jobs.size > 0) return;
      clearInterval(owner.timer);
      if (groups.get(period) === owner) groups.delete(period);
    },
  };
}
