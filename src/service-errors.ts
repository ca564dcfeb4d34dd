// The error a refused start throws: its message, one line, says what to change (`npm start`
// exits with code 2). Its own file, so every part of the composition root can throw it.

/** A start-up refusal whose message, one line, says what to change (`npm start` exits with code 2). */
export class StartupError extends Error {}
