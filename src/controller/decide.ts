// The reconcile decision, as a pure function of what reconcile observed. Reconciler.reconcile
// first does the steps every server goes through (its port, a restore, its workspace, its
// settings, the editor's state as the runtime reports it), then gathers an Observed, asks
// decide() what to do, and executes the Action. Nothing here reads a clock, a file, a process
// or the runtime: `now` comes in, and the editor is known only as alive or not and by the port
// it answers on, so the same table holds for a local process and for a Kubernetes Pod.
//
// The table. Rules are tried in this order and the first that holds decides (the order is part
// of the rule: a stop on request wins over everything, a restart over a port move, and so on):
//
//   1. spec.running is false                          → stop: stop the editor if it is alive, forget
//      an idle stop, crashes and the back-off, honour a pending restart stamp (a restart of a
//      stopped server only marks it seen), follow the extensions, record Stopped.
//   2. a restart stamp not yet honoured                → restart: stop the editor if it is alive,
//      honour the stamp, count a restart, forget failed extensions, crashes, the back-off and the
//      last exit; then start.
//   3. alive, on a port other than the one it is to run on (a new spec.port, a replaced manifest)
//                                                      → move: stop it; then start on the new port.
//   4. alive, and capacity stops it so that another server can start (whenFull stopIdlest)
//                                                      → evict: stop it for that server.
//   5. alive                                           → supervise: follow the extensions, watch
//      its health, stop it when it has been idle for its timeout.
//   From here on the editor does not run.
//   6. an idle stop holds it and no wake was asked     → hold (idle-stop): record Stopped.
//      A wake that was asked lifts the idle stop, which also clears the recorded reason, so that
//      rules 8 and 9 cannot hold it again; the rules below go on, with `wake` set.
//   7. the last status recorded a running editor       → record-crash: it exited or crashed;
//      restartPolicy decides between Failed and a back-off.
//   8. Failed because it Crashed or Exited             → hold (failed): restartPolicy said no; it
//      stays so until someone starts it again.
//   9. Stopped for capacity                            → hold (stopped-for-capacity): it stays so
//      until someone starts it again.
//  10. a restart back-off that has not ended (now < nextRestartAt)
//                                                      → wait until it ends.
//  11. otherwise                                       → start: follow the extensions, get room
//      from capacity, launch.
//
// "start" is also what follows restart (2) and move (3): the loop runs the same start path.
import { heldForCapacity, type Phase } from '../manifests/types.ts';

/** Where an idle stop stands: none, holding the server stopped, or asked to wake (an open, an API start). */
export type IdleStop = 'none' | 'holding' | 'woken';

/** What reconcile observed, as plain data (JSON-serialisable). */
export interface Observed {
  /** spec.running: the editor is wanted. */
  wantRunning: boolean;
  /** The restart stamp asked for (the restartedAt annotation), if any. */
  restartAt?: string;
  /** The last restart stamp honoured (status.observedRestartedAt). */
  restartHonoured?: string;
  /** Whether the server's editor is alive now, by the runtime's word. */
  alive: boolean;
  /** The port the server is to run on. */
  port: number;
  /** The port the live editor answers on, else the one its last status recorded. */
  editorPort?: number;
  /** The server whose start capacity stops this editor for (whenFull stopIdlest), if it does. */
  evictedFor?: string;
  idleStop: IdleStop;
  /** The last status recorded a running editor (today: it names a pid). */
  recordedRunning: boolean;
  /** The phase and reason the status records. */
  phase: Phase;
  reason?: string;
  /** When the restart back-off ends, ms since the epoch, if one runs. */
  nextRestartAt?: number;
  /** Now, ms since the epoch, on the clock nextRestartAt was set by. */
  now: number;
}

/** Why a server whose spec says running is left as it is. */
export type HoldReason = 'idle-stop' | 'failed' | 'stopped-for-capacity';

/**
 * What the loop does. `stopEditor`: the editor is alive and is stopped first. `honourRestart`:
 * the restart stamp to record as honoured. `wake`: an idle stop was woken and is lifted first.
 */
export type Action =
  | { kind: 'stop'; stopEditor: boolean; honourRestart?: string }
  | { kind: 'restart'; stopEditor: boolean; honourRestart: string }
  | { kind: 'move'; from: number; to: number }
  | { kind: 'evict'; for: string }
  | { kind: 'supervise' }
  | { kind: 'hold'; reason: HoldReason }
  | { kind: 'record-crash'; wake: boolean }
  | { kind: 'wait'; untilMs: number; wake: boolean }
  | { kind: 'start'; wake: boolean };

/** The action for what was observed; see the table at the top of this file. */
export function decide(o: Observed): Action {
  const restartRequested = o.restartAt !== undefined && o.restartAt !== o.restartHonoured;
  if (!o.wantRunning) {
    return restartRequested ? { kind: 'stop', stopEditor: o.alive, honourRestart: o.restartAt } : { kind: 'stop', stopEditor: o.alive };
  }
  if (restartRequested) return { kind: 'restart', stopEditor: o.alive, honourRestart: o.restartAt! };
  if (o.alive && o.editorPort !== undefined && o.editorPort !== o.port) return { kind: 'move', from: o.editorPort, to: o.port };
  if (o.alive && o.evictedFor !== undefined) return { kind: 'evict', for: o.evictedFor };
  if (o.alive) return { kind: 'supervise' };

  if (o.idleStop === 'holding') return { kind: 'hold', reason: 'idle-stop' };
  const wake = o.idleStop === 'woken';
  // Lifting an idle stop clears the recorded reason.
  const reason = wake ? undefined : o.reason;
  if (o.recordedRunning) return { kind: 'record-crash', wake };
  if (o.phase === 'Failed' && (reason === 'Crashed' || reason === 'Exited')) return { kind: 'hold', reason: 'failed' };
  if (heldForCapacity({ phase: o.phase, reason })) return { kind: 'hold', reason: 'stopped-for-capacity' };
  if (o.nextRestartAt !== undefined && o.now < o.nextRestartAt) return { kind: 'wait', untilMs: o.nextRestartAt, wake };
  return { kind: 'start', wake };
}
