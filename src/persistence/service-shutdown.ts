// The last work at shutdown, in parallel: every server's declared state still to be written, the
// deletion marks still owed, and the final snapshot of each server named; what it did, for the one line the log gets.
import type { DeclaredFlush } from './service-declared.ts';
import { describeError, type ShutdownSummary } from './service-types.ts';
import type { SnapshotInfo } from './types.ts';

export interface FinalWork {
  names: string[];
  /** One server's snapshot; undefined when there is nothing to take it of. */
  take: (name: string) => Promise<{ snapshot: SnapshotInfo; unchanged: boolean } | undefined>;
  /** Writes every declared state that is behind (undefined: nothing can be written yet). */
  declared: () => Promise<DeclaredFlush> | undefined;
  /** Writes the deletion marks still owed; each failure in words. */
  marks: () => Promise<Array<string | undefined>>;
  /** performance.now() when the shutdown began. */
  began: number;
  /** Aborted (ending the work under way) when the deadline passes. */
  lifetime: AbortController;
  deadlineMs: number;
}

export async function finalSnapshots(work: FinalWork): Promise<ShutdownSummary> {
  const deadline = setTimeout(() => work.lifetime.abort(new Error(`the shutdown's ${work.deadlineMs / 1000} s were up`)), work.deadlineMs);
  const summary: ShutdownSummary = { servers: work.names.length, saved: 0, unchanged: 0, failed: [], uploadedBytes: 0, seconds: 0, declared: 0 };
  const declared = (async () => {
    const flushed = await work.declared();
    if (!flushed) return;
    summary.declared = flushed.written;
    summary.failed.push(...flushed.failed.map((f) => `declared state of ${f}`));
  })();
  const marks = work.marks().then((failures) => summary.failed.push(...failures.filter((f) => f !== undefined)));
  await Promise.all([declared, marks, ...work.names.map(async (name) => {
    try {
      const result = await work.take(name);
      if (result?.unchanged) summary.unchanged++;
      else if (result) {
        summary.saved++;
        summary.uploadedBytes += result.snapshot.uploadedBytes;
      }
    } catch (error) {
      summary.failed.push(`${name} (${describeError(error)})`);
    }
  })]).finally(() => clearTimeout(deadline));
  summary.seconds = (performance.now() - work.began) / 1000;
  return summary;
}
