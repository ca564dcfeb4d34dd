// Log capture, history and live streams for the editor servers.

export { formatLogLine, type LogEntry, type LogLevel, type LogSource, type TrackedServer } from './entry.ts';
export { editorOutputFiles, LogHub, type LogHubOptions } from './hub.ts';
export type { EditorOutputSource, OutputLine } from './stream-capture.ts';
export { MAX_LOG_LINES, parseLinesParam, parseTailParam } from './lines.ts';
export { LogStreamServer, type LogStreamOptions } from './stream.ts';
