// The performance targets, each figure beside its target, read from the results of the sections
// that ran in this `npm run bench`: the table bench/README.md's targets are updated from.

type Results = Record<string, any>;

export interface TargetRow {
  figure: string;
  measured: string;
  target: string;
  met: boolean | undefined;
  /** What the same figure is for the bare floor, measured in the same run (a relay, bare Node.js). */
  floor?: string;
}

const at = (results: Results, section: string, ...path: string[]): number | undefined => {
  let value: any = results[section];
  for (const key of path) value = value?.[key];
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
};

function row(
  figure: string, value: number | undefined, unit: string, target: number, atMost: boolean, floors: [string, number | undefined][] = [],
): TargetRow | undefined {
  if (value === undefined) return undefined;
  const floor = floors.filter(([, v]) => v !== undefined).map(([name, v]) => `${name} ${v}${unit}`).join(', ');
  return {
    figure,
    measured: `${value}${unit}`,
    target: `${atMost ? '≤' : '≥'} ${target}${unit}`,
    met: atMost ? value <= target : value >= target,
    ...(floor && { floor }),
  };
}

/** A figure shown beside the targets without one of its own. */
function info(figure: string, value: number | undefined, unit: string): TargetRow | undefined {
  return value === undefined ? undefined : { figure, measured: `${value}${unit}`, target: '—', met: undefined };
}

/** A ratio that must be below 1: the project ahead of the tool it is measured beside. */
function ahead(figure: string, ratio: number | undefined): TargetRow | undefined {
  return ratio === undefined ? undefined : { figure, measured: `${ratio}×`, target: '< 1×', met: ratio < 1 };
}

/** The rows of the sections present in `results` (a section not run has no row). */
export function targetRows(results: Results): TargetRow[] {
  const list30 = 'GET /servers with 30 running editors';
  const list300 = 'GET /servers with 300 servers, 30 running';
  const listBusy = 'GET /servers from a busy client, 30 running editors';
  const memory = 'service memory, 30 running editors';
  const workbench = 'code-server workbench in Chromium: navigation → usable, proxy ÷ direct';
  const persistence = 'persistence: snapshot and restore of 2,000 files, 50 MB, vs tar, restic and borg';
  const persistenceRemote = 'persistence through the fake Files API, 20 ms a request';
  const kube = 'editors on Kubernetes ÷ local processes, 10 servers';
  const rows = [
    row('GET /servers p95, 30 servers', at(results, list30, 'p95_ms'), ' ms', 1, true),
    row('GET /servers/{id} p95, 30 servers', at(results, list30, 'one_server', 'p95_ms'), ' ms', 1, true),
    row('watch: list until SYNCED p95, 30 servers', at(results, list30, 'watch_list_until_synced', 'p95_ms'), ' ms', 1, true),
    // The client that has just driven 30 starts (the figure: the Go implementation's p95 under the same client).
    row('GET /servers p95, busy client (it started the 30 running editors)', at(results, listBusy, 'busy_client', 'p95_ms'), ' ms', 1.1, true, [
      ['bare Node.js serving the same bytes to the same client', at(results, listBusy, 'floor', 'busy_client', 'p95_ms')],
    ]),
    info('the same service, a fresh client beside it', at(results, listBusy, 'fresh_client', 'p95_ms'), ' ms'),
    row('GET /servers p95, 300 servers', at(results, list300, 'p95_ms'), ' ms', 5, true),
    row('GET /servers/{id} p95, 300 servers', at(results, list300, 'one_server', 'p95_ms'), ' ms', 5, true),
    row('watch: list until SYNCED p95, 300 servers', at(results, list300, 'watch_list_until_synced', 'p95_ms'), ' ms', 5, true),
    row('WebSocket echo, proxy ÷ direct', at(results, 'proxy', 'stub', 'echoRatio'), '×', 1.3, true, [
      ['C byte relay', at(results, 'proxy', 'stub', 'cRelayEchoRatio')],
      ['Node.js byte relay', at(results, 'proxy', 'stub', 'nodeRelayEchoRatio')],
    ]),
    row('proxy throughput ÷ direct, small page', at(results, 'proxy', 'stub', 'throughputRatio'), '×', 0.6, false, [
      ['C byte relay', at(results, 'proxy', 'stub', 'cRelayThroughputRatio')],
      ['Node.js byte relay', at(results, 'proxy', 'stub', 'nodeRelayThroughputRatio')],
    ]),
    row('proxy throughput ÷ direct, code-server page', at(results, 'proxy', 'code_server', 'throughputRatio'), '×', 0.9, false),
    row('service RSS at rest, 30 editors', at(results, memory, 'rss_start_mb'), ' MB', 60, true, [
      ['bare Node.js, same flags, idle HTTP server', at(results, memory, 'bare_node_rss_mb')],
    ]),
    info('service private memory (USS) at rest, 30 editors', at(results, memory, 'uss_start_mb'), ' MB'),
    row('service RSS growth over the second half of the churn', at(results, memory, 'growth_second_half_mb'), ' MB', 3, true),
    row('workbench usable, proxy ÷ direct, cold cache', at(results, workbench, 'cold', 'ratio_of_medians'), '×', 1.1, true),
    row('workbench usable, proxy ÷ direct, warm cache', at(results, workbench, 'warm', 'ratio_of_medians'), '×', 1.1, true),
    row('full snapshot ÷ tar -cf then one fsync of the archive, 2,000 files, 50 MB', at(results, persistence, 'full_vs_tar_cf_then_fsync'), '×', 1.3, true, [
      ['reading and hashing (BLAKE3) every file, one thread', at(results, persistence, 'read_and_hash_vs_tar_cf_then_fsync')],
    ]),
    info('the same, no worker thread running (a lone full snapshot)', at(results, persistence, 'full_alone_vs_tar_cf_then_fsync'), '×'),
    info('full snapshot ÷ tar -cf with no flush', at(results, persistence, 'full_vs_tar_cf'), '×'),
    row('incremental snapshot after 10 changes ÷ full', at(results, persistence, 'incremental_vs_full'), '×', 0.05, true),
    info('the same, no change journal (every folder walked), same change, same run', at(results, persistence, 'incremental_every_folder_walked_vs_full'), '×'),
    info('the same after a restart (index read from the local cache on disk, every folder walked)', at(results, persistence, 'incremental_from_disk_cache_vs_full'), '×'),
    row('restore then one sync ÷ tar -xf then one sync', at(results, persistence, 'restore_then_sync_vs_tar_xf_then_sync'), '×', 1.3, true),
    // Ahead of each backup tool on each figure: the project's time ÷ the tool's, same rounds, below 1.
    ...(['restic', 'borg'] as const).flatMap((peer) => [
      ahead(`full snapshot ÷ ${peer} backup`, at(results, persistence, 'peers', peer, 'full_ratio')),
      ahead(`incremental after 10 changes ÷ ${peer}'s (${peer === 'restic' ? 'backup --parent' : 'a second archive'})`, at(results, persistence, 'peers', peer, 'incremental_ratio')),
      ahead(`restore then sync ÷ ${peer === 'restic' ? 'restic restore' : 'borg extract'} then sync`, at(results, persistence, 'peers', peer, 'restore_ratio')),
    ]),
    row('full snapshot, 20 ms a request', at(results, persistenceRemote, 'full_snapshot_median_ms'), ' ms', 10_000, true),
    row('SIGTERM snapshot after 10 changes, 20 ms a request', at(results, persistenceRemote, 'shutdown_snapshot_after_10_changes_median_ms'), ' ms', 3000, true),
    row('restore, 20 ms a request', at(results, persistenceRemote, 'restore_median_ms'), ' ms', 10_000, true),
    row('Kubernetes: editor container killed → server status p95', at(results, kube, 'status_change', 'container_killed', 'change', 'p95_ms'), ' ms', 1000, true, [
      ['a local editor process killed, same run', at(results, kube, 'status_change', 'process_killed_floor', 'change', 'p95_ms')],
    ]),
    info('the same, p50', at(results, kube, 'status_change', 'container_killed', 'change', 'p50_ms'), ' ms'),
    row('Kubernetes: editor Pod deleted → server status p95', at(results, kube, 'status_change', 'pod_deleted', 'change', 'p95_ms'), ' ms', 1000, true),
    info('Kubernetes ÷ processes: 10 servers created at once → every editor page through the proxy', at(results, kube, 'create_to_page', 'wall_ratio_kubernetes_to_process'), '×'),
    info('service RSS, 10 editors on Kubernetes', at(results, kube, 'service_memory', 'running', 'kubernetes', 'rss_mb'), ' MB'),
    info('service RSS, 10 editors as local processes, same run', at(results, kube, 'service_memory', 'running', 'process', 'rss_mb'), ' MB'),
    ...scaleRows(results),
  ];
  return rows.filter((r): r is TargetRow => r !== undefined);
}

/** The rows as a Markdown table, as bench/README.md shows them. */
export function targetTable(rows: TargetRow[]): string {
  const lines = ['| figure | measured | target | met | floor, same run |', '|---|---|---|---|---|'];
  for (const r of rows) lines.push(`| ${r.figure} | ${r.measured} | ${r.target} | ${r.met === undefined ? '—' : r.met ? 'yes' : 'no'} | ${r.floor ?? ''} |`);
  return lines.join('\n');
}

/** `npm run bench -- scale`: the process runtime at 10,000 declared (1,000 beside it for the slope), and CRD mode at 2,000. */
function scaleRows(results: Results): Array<TargetRow | undefined> {
  const scale = 'scale: manifests landed at once, process runtime';
  const crd = 'scale: EditorServer objects landed at once, CRD mode';
  const big = '10000_declared';
  const small = '1000_declared';
  return [
    row('landed → every server listed with its status, 10,000', at(results, scale, big, 'landed_to_listed_s'), ' s', 20, true, [['1,000, same run', at(results, scale, small, 'landed_to_listed_s')]]),
    row('service CPU at rest, 10,000 declared, 100 running (% of a core)', at(results, scale, big, 'rest_cpu_percent_of_core'), ' %', 2, true, [['1,000, same run', at(results, scale, small, 'rest_cpu_percent_of_core')]]),
    row('RSS at 10,000 declared', at(results, scale, big, 'rss_declared_mb'), ' MB', 250, true, [['1,000, same run', at(results, scale, small, 'rss_declared_mb')]]),
    row('GET /servers at 10,000, p95 ÷ the same bytes from a prepared buffer', at(results, scale, big, 'list_full_p95_over_floor'), '×', 1.5, true),
    row('GET /servers?limit=100 p95 at 10,000', at(results, scale, big, 'list_page_100', 'p95_ms'), ' ms', 2, true),
    row('GET /servers/{id} p95 at 10,000', at(results, scale, big, 'one_server', 'p95_ms'), ' ms', 2, true),
    row('GET /health p95 at 10,000', at(results, scale, big, 'health', 'p95_ms'), ' ms', 5, true),
    row('restart → every server known, editors adopted, at 10,000', at(results, scale, big, 'restart_to_known_s'), ' s', 10, true),
    row('dashboard first useful paint p95 at 10,000', at(results, scale, big, 'dashboard', 'first_useful_paint_p95_ms'), ' ms', 2000, true),
    row('dashboard filter to one server p95 at 10,000', at(results, scale, big, 'dashboard', 'filter_to_one_row_p95_ms'), ' ms', 100, true),
    row('CRD: 2,000 stopped objects → listed as stopped', at(results, crd, 'landed', 'listed_stopped_ms'), ' ms', 20_000, true),
    row('CRD: Pods for 2,000 stopped objects', at(results, crd, 'landed', 'pods'), '', 0, true),
    row('CRD: the service\'s API requests at rest per running editor a minute', at(results, crd, 'at_rest', 'service_own_per_running_editor_per_minute'), '', 1, true),
    row('CRD: pods/exec a minute at rest', at(results, crd, 'at_rest', 'pods_exec_per_minute'), '', 0, true),
    row('create + start → page, 10 at once, Kubernetes ÷ process', at(results, crd, 'create_to_page', 'wall_ratio_kubernetes_to_process'), '×', 2, true, [
      ['Kubernetes ÷ 10 bare Pods of the same editor (the node\'s floor)', at(results, crd, 'create_to_page', 'wall_ratio_kubernetes_to_floor')],
    ]),
  ];
}
