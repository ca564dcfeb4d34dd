// The proxy benchmark against the real service: a running stub editor reached through
// /vscode/{port}/ and directly, side by side in one run.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { benchProxy, startFloorRelays } from './proxy.ts';
import { benchPorts, round, startBenchService } from './harness.ts';

/** Established TCP connections from a process to a local port, read from /proc. */
export function connectionsTo(pid: number, port: number): number {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      const match = /^socket:\[(\d+)\]$/.exec(target);
      if (match) inodes.add(match[1]);
    } catch {
      // closed meanwhile
    }
  }
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  let count = 0;
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const cols = line.trim().split(/\s+/);
    if (cols.length < 10) continue;
    // remote address is column 2, state 01 = ESTABLISHED, inode column 9
    if (cols[2].endsWith(`:${hexPort}`) && cols[3] === '01' && inodes.has(cols[9])) count++;
  }
  return count;
}

/**
 * Proxy figures through the service with one running editor: the real code-server's workbench
 * page (label 'code-server') or the stub's 1 KB page. `echoes`: WebSocket round trips (0: none);
 * `floors`: byte relays to the same editor measured beside it; `checkout`: whose service runs.
 */
export async function benchProxyOnEditor(
  bin: string, label: 'code-server' | 'stub', durationSec: number, portOffset: number,
  options: { echoes?: number; floors?: boolean; checkout?: string } = {},
) {
  const service = await startBenchService(bin, benchPorts(portOffset), { checkout: options.checkout });
  try {
    const { id, port, workspace_path } = await service.call('POST', '/servers', { name: `proxy ${label}` });
    await service.call('POST', `/servers/${id}/start`);
    const rssBefore = service.rssMb();
    const floors = options.floors ? await startFloorRelays(port) : undefined;
    const figures = await benchProxy({
      proxyBase: `${service.url}/vscode/${port}`,
      directBase: `http://127.0.0.1:${port}`,
      path: label === 'code-server' ? `/?folder=${encodeURIComponent(workspace_path)}` : '/',
      durationSec,
      connections: 32,
      echoes: options.echoes ?? 0,
      servicePid: service.pid,
      relays: floors?.relays,
    }).finally(() => floors?.stop());
    return {
      ...(floors?.missing && { floor_relay_missing: floors.missing }),
      page: label === 'code-server' ? 'code-server workbench page' : 'stub editor 1 KB page',
      ...figures,
      service_connections_to_editor_after: connectionsTo(service.pid, port),
      service_rss_before_mb: round(rssBefore, 1),
      service_rss_after_mb: round(service.rssMb(), 1),
    };
  } finally {
    await service.close();
  }
}

/**
 * Two setups through the real service: the real code-server's workbench page (what a browser
 * loads first), and the stub editor's trivial page plus a WebSocket echo (code-server has no
 * echo endpoint). The trivial page shows the proxy's own cost at its most visible; beside it,
 * bare byte relays to the same stub editor show what any proxy process costs on this machine.
 */
export async function benchProxyThroughService(realBin: string, stubBin: string, durationSec: number, offset: number) {
  return {
    code_server: await benchProxyOnEditor(realBin, 'code-server', durationSec, offset),
    stub: await benchProxyOnEditor(stubBin, 'stub', durationSec, offset + 1, { echoes: 2000, floors: true }),
  };
}
