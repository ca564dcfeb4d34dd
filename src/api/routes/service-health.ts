// GET /health: the service's own health. Parts of the service that can be degraded without
// stopping it (the config file, templates, git sync, the assistant's token) each add a section.
import { Router } from 'express';
import type { HealthSection } from '../../core/health-section.ts';
import { PACKAGE_JSON } from '../../core/project.ts';

export interface ServiceHealthDeps {
  startedAt: number;
  editor: string;
  servers: () => number;
  /** By key, in the order shown. */
  sections: Map<string, HealthSection>;
}

export function serviceHealthRouter(deps: ServiceHealthDeps): Router {
  return Router().get('/health', (_req, res) => {
    const sections: Record<string, unknown> = {};
    const problems: string[] = [];
    for (const [key, section] of deps.sections) {
      sections[key] = section.read();
      problems.push(...(section.problems?.() ?? []));
    }
    res.json({
      status: problems.length === 0 ? 'healthy' : 'degraded',
      version: PACKAGE_JSON.version,
      uptime_seconds: (Date.now() - deps.startedAt) / 1000,
      servers: deps.servers(),
      editor: deps.editor,
      memory_mb: serviceMemory(),
      ...(problems.length > 0 ? { problems } : {}),
      ...sections,
    });
  });
}

/** The service's own memory: resident, the JavaScript heap in use and reserved, and buffers outside it. */
function serviceMemory(): { rss: number; heap_used: number; heap_total: number; external: number } {
  const { rss, heapUsed, heapTotal, external } = process.memoryUsage();
  const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;
  return { rss: mb(rss), heap_used: mb(heapUsed), heap_total: mb(heapTotal), external: mb(external) };
}
