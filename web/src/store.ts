// The servers, fed by the watch stream only (no polling), and hooks for the views to follow them.
import { useEffect, useState } from 'preact/hooks';
import type { ServerRecord } from './api/types.ts';
import { watchServers, type Connection, type Watch } from './api/watch.ts';

export interface ServersState {
  servers: Map<string, ServerRecord>;
  /** False until the first full listing has arrived. */
  loaded: boolean;
  /** Until then, how many servers of it have come so far. */
  received: number;
  connection: Connection;
}

let state: ServersState = { servers: new Map(), loaded: false, received: 0, connection: 'connecting' };
const listeners = new Set<(state: ServersState) => void>();
let watch: Watch | undefined;

function set(next: Partial<ServersState>): void {
  state = { ...state, ...next };
  for (const listener of listeners) listener(state);
}

/** Starts the watch once (the first subscriber does it). */
function ensureWatching(): void {
  watch ??= watchServers({
    onServers: (servers) => set({ servers, loaded: true }),
    onConnection: (connection) => set({ connection }),
    onProgress: (received) => {
      if (!state.loaded) set({ received });
    },
  });
}

export function subscribeServers(listener: (state: ServersState) => void): () => void {
  ensureWatching();
  listeners.add(listener);
  listener(state);
  return () => listeners.delete(listener);
}

export function currentServers(): ServersState {
  return state;
}

/** The servers as the watch last told, re-rendering on every change. */
export function useServers(): ServersState {
  const [value, setValue] = useState(state);
  useEffect(() => subscribeServers(setValue), []);
  return value;
}

const clockListeners = new Set<(now: number) => void>();
let clock: ReturnType<typeof setInterval> | undefined;

/** The time now, ticking each second while something shows it (uptimes, relative times). */
export function useNow(): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    clockListeners.add(setNow);
    clock ??= setInterval(() => {
      const t = Date.now();
      for (const listener of clockListeners) listener(t);
    }, 1000);
    return () => {
      clockListeners.delete(setNow);
      if (clockListeners.size === 0 && clock !== undefined) {
        clearInterval(clock);
        clock = undefined;
      }
    };
  }, []);
  return now;
}
