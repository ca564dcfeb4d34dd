// Server logs: the live stream (WebSocket /ws/logs, or /ws/logs/{id} for one server), which replays
// the last ?tail= entries and then sends each new one, reconnecting with backoff when it drops;
// and a server's recent lines by REST (GET /servers/{id}/logs).
import { request, wsUrl } from './http.ts';

export type LogLevel = 'INFO' | 'WARN' | 'ERROR' | 'DEBUG';

/** One entry, as the stream sends it (src/logs/stream.ts). */
export interface LogLine {
  server_id: string;
  server_name: string;
  level: LogLevel;
  source: string;
  message: string;
  timestamp: string;
}

export type StreamState =
  | { state: 'connecting' }
  | { state: 'live' }
  | { state: 'waiting'; retryInMs: number; reason: string };

export interface LogStreamOptions {
  /** One server's id; all servers' when left out. */
  serverId?: string;
  /** Entries replayed on (re)connecting, at most 1000. */
  tail?: number;
  onLines: (lines: LogLine[]) => void;
  onState?: (state: StreamState) => void;
}

const LINE = /^(\S+) \[([A-Z]+)\] \[([a-z-]+)\] (.*)$/s;

/** A line as GET /servers/{id}/logs and server.log write it, read back. */
export function parseLogLine(text: string, server: { id: string; name: string }): LogLine {
  const match = LINE.exec(text);
  if (!match) return { server_id: server.id, server_name: server.name, level: 'INFO', source: 'server', message: text, timestamp: '' };
  return { server_id: server.id, server_name: server.name, timestamp: match[1], level: match[2] as LogLevel, source: match[3], message: match[4] };
}

/** A line as it reads in a file: time, level, source, the server's name when there are several, the message. */
export function formatLogLine(line: LogLine, withServer: boolean): string {
  return `${line.timestamp} [${line.level}] [${line.source}]${withServer ? ` [${line.server_name}]` : ''} ${line.message}`;
}

/** A server's last `lines` log lines (at most 1000), newest last. */
export async function recentLogs(server: { id: string; name: string }, lines = 100): Promise<LogLine[]> {
  const answer = await request<{ data: { logs: string[] } }>('GET', `servers/${encodeURIComponent(server.id)}/logs?lines=${lines}`);
  return answer.data.logs.map((text) => parseLogLine(text, server));
}

/**
 * Opens the stream; lines arrive in batches (one per animation frame at most). On a drop it
 * reconnects after 1, 2, 4 … 15 s and skips the replayed entries it already delivered.
 * Returns a function that closes it for good.
 */
export function openLogStream(options: LogStreamOptions): () => void {
  const tail = Math.min(Math.max(options.tail ?? 200, 0), 1000);
  const path = options.serverId ? `ws/logs/${encodeURIComponent(options.serverId)}` : 'ws/logs';
  let socket: WebSocket | undefined;
  let closed = false;
  let attempt = 0;
  let retryTimer: ReturnType<typeof setTimeout> | undefined;
  // What was delivered last: replayed entries up to it are skipped after a reconnect.
  let lastTime = '';
  let seenAtLast = new Set<string>();
  let pending: LogLine[] = [];
  let flushScheduled = false;

  const flush = () => {
    flushScheduled = false;
    if (closed || pending.length === 0) return;
    const batch = pending;
    pending = [];
    options.onLines(batch);
  };
  const deliver = (line: LogLine) => {
    const key = `${line.server_id}\u0000${line.source}\u0000${line.message}`;
    if (line.timestamp < lastTime) return;
    if (line.timestamp === lastTime) {
      if (seenAtLast.has(key)) return;
    } else {
      lastTime = line.timestamp;
      seenAtLast = new Set();
    }
    seenAtLast.add(key);
    pending.push(line);
    if (!flushScheduled) {
      flushScheduled = true;
      // A hidden tab gets no animation frames: a timer keeps the batches coming there too.
      if (document.visibilityState === 'visible') requestAnimationFrame(flush);
      else setTimeout(flush, 250);
    }
  };

  const connect = () => {
    options.onState?.({ state: 'connecting' });
    const ws = new WebSocket(`${wsUrl(path)}?tail=${tail}`);
    socket = ws;
    ws.onopen = () => {
      attempt = 0;
      options.onState?.({ state: 'live' });
    };
    ws.onmessage = (event) => {
      if (typeof event.data !== 'string') return;
      let frame: Partial<LogLine> & { type?: string };
      try {
        frame = JSON.parse(event.data);
      } catch {
        return;
      }
      if (frame.type !== 'log' || typeof frame.message !== 'string') return;
      deliver({
        server_id: String(frame.server_id ?? ''),
        server_name: String(frame.server_name ?? ''),
        level: (String(frame.level ?? 'INFO').toUpperCase() as LogLevel),
        source: String(frame.source ?? ''),
        message: frame.message,
        timestamp: String(frame.timestamp ?? ''),
      });
    };
    ws.onclose = (event) => {
      if (closed || socket !== ws) return;
      const retryInMs = Math.min(1000 * 2 ** attempt, 15_000);
      attempt++;
      const reason = event.code === 1013 ? 'the stream fell behind' : event.reason || (event.code === 1006 ? 'the connection was lost' : `closed (${event.code})`);
      options.onState?.({ state: 'waiting', retryInMs, reason });
      retryTimer = setTimeout(connect, retryInMs);
    };
  };

  connect();
  return () => {
    closed = true;
    clearTimeout(retryTimer);
    socket?.close(1000);
  };
}
