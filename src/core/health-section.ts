// What a part of the service that can be degraded without stopping it (the config file, templates,
// git sync, the assistant's router) adds to GET /health (src/api/routes/service-health.ts).

/** A section of GET /health: its figures, and problems that make the service "degraded". */
export interface HealthSection {
  /** Figures shown under the section's key. */
  read(): Record<string, unknown>;
  /** Problems a person should act on (each names the file or setting and what to change). */
  problems?(): string[];
}
