// How long to wait before trying again after the `attempt`-th failure in a row (1 for the
// first): `initialMs` doubled for each failure after the first, never more than `maxMs`. With
// `jitter` (a random number in [0, 1)), a wait is drawn between half that delay and all of it, so
// many clients failing together do not come back together. The work queue, editor restarts,
// workspace sources, the token keeper, the router and the volume store all wait this way.
export interface Backoff {
  initialMs: number;
  maxMs: number;
  jitter?: () => number;
}

export function backoffMs(attempt: number, { initialMs, maxMs, jitter }: Backoff): number {
  // 2^30 times any initial delay is past every maximum: the exponent stops there, before Infinity.
  const delay = Math.min(maxMs, initialMs * 2 ** Math.min(Math.max(0, attempt - 1), 30));
  return jitter ? delay / 2 + jitter() * (delay / 2) : delay;
}
