// A log entry: one line an editor printed or one event the controller reported for a server.

export type LogLevel = 'INFO' | 'WARN' | 'ERROR';
export type LogSource = 'server' | 'controller';

/** A server as the logs know it: its manifest name, its id and its display name. */
export interface TrackedServer {
  name: string;
  id: string;
  displayName: string;
}

export interface LogEntry {
  serverId: string;
  /** The display name (the interface's server "name"). */
  serverName: string;
  /** The manifest name, which names the log folder. */
  name: string;
  level: LogLevel;
  source: LogSource;
  message: string;
  /** ISO 8601 UTC. */
  timestamp: string;
}

/** `2026-11-22T06:00:01.123Z [WARN] [server] text`: one line, as in server.log and the REST logs route. */
export function formatLogLine(entry: LogEntry): string {
  return `${entry.timestamp} [${entry.level}] [${entry.source}] ${entry.message}`;
}

const LINE = /^(\S+) \[(INFO|WARN|ERROR)\] \[(server|controller)\] (.*)$/;

/** Reads back a line written by formatLogLine; undefined for anything else (a torn or foreign line). */
export function parseLogLine(line: string, server: TrackedServer): LogEntry | undefined {
  const match = LINE.exec(line);
  if (!match) return undefined;
  return {
    serverId: server.id,
    serverName: server.displayName,
    name: server.name,
    level: match[2] as LogLevel,
    source: match[3] as LogSource,
    message: match[4],
    timestamp: match[1],
  };
}
