// `npm run bench [-- section …]`: the project's benchmarks, each measured side by side with its
// baseline in one run. Sections: start, list (30 servers, and 300 with 30 running), list-busy (GET /servers from the client that has just started 30 editors, beside a fresh client), memory, proxy, logs, workspace, dashboard, observability, workbench, persistence, manifests, kubernetes (editors as Pods on the test cluster against local processes; skipped without a cluster), crd (EditorServer objects against manifest files as the manifests, on the test cluster) (default: all). Asked for by name only: scale (10,000 manifests landed at once on the process runtime, 1,000 beside for the slope, the dashboard in Chromium at each size, then 2,000 EditorServer objects in CRD mode on the test cluster; BENCH_SCALE_SIZES sets the sizes, BENCH_SCALE_CRD=0 leaves the CRD part out), dashboard-scale (the dashboard alone at 1,000 and 10,000).
// BENCH_SOAK_MINUTES sets the memory soak (default 10); BENCH_QUICK=1 shortens everything.
// `npm run bench -- compare <base-ref> …` measures another commit's service against this one's
// instead, alternating in one run (bench/compare.ts).
import { resolveEditorBinary } from '../src/runtime/editor-binary.ts';
import { compareBuilds } from './compare.ts';
import { benchList, benchMemorySoak, benchStartLatency } from './core.ts';
import { benchBusyList } from './busy-list.ts';
import { benchDashboard } from './dashboard.ts';
import { benchCrd } from './crd.ts';
import { benchKubernetes } from './kubernetes.ts';
import { benchManifestRead } from './manifests.ts';
import { benchObservability } from './observability.ts';
import { benchPersistence, fakeFilesApi, throughStore } from './persistence.ts';
import { benchProxyThroughService } from './service-proxy.ts';
import { benchLogsThroughService } from './service-logs.ts';
import { benchLogCostPipeline, benchLogCostThroughService } from './log-cost.ts';
import { STUB_EDITOR } from './harness.ts';
import { benchClone, benchExtract } from './workspace.ts';
import { benchScale } from './scale.ts';
import { benchCrdScale } from './crd-scale.ts';
import { benchDashboardScale } from './dashboard-scale.ts';
import { benchWorkbench } from './workbench.ts';
import { targetRows, targetTable } from './targets.ts';

if (process.argv[2] === 'compare') {
  await compareBuilds(process.argv.slice(3));
  process.exit();
}

const quick = process.env.BENCH_QUICK === '1';
const sections = process.argv.slice(2);
const wanted = (name: string) => sections.length === 0 || sections.includes(name);
const results: Record<string, unknown> = {};

function report(name: string, value: unknown) {
  results[name] = value;
  console.log(`\n## ${name}\n${JSON.stringify(value, null, 2)}`);
}

// Resolved only by the sections that start the real code-server (persistence and others need none installed).
let editorPath: string | undefined;
const realEditor = () => (editorPath ??= resolveEditorBinary().path);

if (wanted('start')) {
  report('start latency, stub editor', await benchStartLatency(STUB_EDITOR, 'stub', quick ? 5 : 20, 0));
  report('start latency, real code-server', await benchStartLatency(realEditor(), 'code-server', quick ? 3 : 10, 1));
}
if (wanted('list')) {
  report('GET /servers with 30 running editors', await benchList(STUB_EDITOR, 30, quick ? 500 : 5000, 2));
  // 300 servers, 30 of them running (300 running stub editors would weigh on this machine more than the listing does).
  report('GET /servers with 300 servers, 30 running', await benchList(STUB_EDITOR, 30, quick ? 500 : 5000, 11, 300));
}
if (wanted('list-busy')) {
  // One client process drives 30 creates and starts, then times GET /servers; a fresh one beside it, and bare Node.js as the floor.
  report('GET /servers from a busy client, 30 running editors', await benchBusyList(STUB_EDITOR, 30, quick ? 500 : 5000, 12));
}
if (wanted('memory')) {
  const minutes = Number(process.env.BENCH_SOAK_MINUTES ?? (quick ? 1 : 10));
  report('service memory, 30 running editors', await benchMemorySoak(STUB_EDITOR, 30, minutes, 3));
}
if (wanted('proxy')) {
  report('proxy', await benchProxyThroughService(realEditor(), STUB_EDITOR, quick ? 3 : 10, 4));
}
if (wanted('logs')) {
  report('log fan-out', await benchLogsThroughService(STUB_EDITOR, quick ? 5 : 30, 6));
}
if (wanted('log-cost')) {
  report('log cost: noisy editor at 20,000 lines/s, before ÷ after, log pipeline alone', await benchLogCostPipeline({ phaseSec: quick ? 2 : 4, rounds: quick ? 1 : 2 }));
  report('log cost: noisy editor at 20,000 lines/s, before ÷ after, through the service', await benchLogCostThroughService(STUB_EDITOR, 16, { phaseSec: quick ? 2 : 4, rounds: quick ? 1 : 2, proxyRounds: quick ? 1 : 2 }));
}
if (wanted('workspace')) {
  report('ZIP through create-with-workspace vs unzip', await benchExtract(STUB_EDITOR, quick ? 1 : 5, 7));
  report('clone through create-with-workspace vs git clone', await benchClone(STUB_EDITOR, quick ? 1 : 5, 8));
}
if (wanted('dashboard')) {
  report('dashboard in Chromium, 30 running editors', await benchDashboard(STUB_EDITOR, quick, 9));
}
if (wanted('observability')) {
  report('metrics and activity tracking: with ÷ without', await benchObservability(realEditor(), STUB_EDITOR, quick, 10));
}
if (wanted('workbench')) {
  report('code-server workbench in Chromium: navigation → usable, proxy ÷ direct', await benchWorkbench(realEditor(), quick ? 6 : 20, 14));
}
if (wanted('manifests')) {
  report('reading a 255 KiB manifest of 19,000 settings keys', benchManifestRead(quick ? 1 : 3));
}
if (wanted('persistence')) {
  report('persistence: snapshot and restore of 2,000 files, 50 MB, vs tar, restic and borg', await benchPersistence(quick ? 3 : 7));
  report('persistence through the fake Files API, 20 ms a request', await throughStore('fake Files API (SDK, VolumeStore), 20 ms a request', () => fakeFilesApi(20), quick ? 1 : 3));
}
if (wanted('kubernetes')) {
  report('editors on Kubernetes ÷ local processes, 10 servers', await benchKubernetes(realEditor(), quick, 15));
}
if (sections.includes('scale')) {
  // Not in the default run (it lands 10,000 manifests and 2,000 objects): `npm run bench -- scale`.
  report('scale: manifests landed at once, process runtime', await benchScale(STUB_EDITOR, quick, 18));
  // BENCH_SCALE_CRD=0 leaves the CRD part out (the process runtime alone, e.g. to profile it).
  if (process.env.BENCH_SCALE_CRD !== '0') report('scale: EditorServer objects landed at once, CRD mode', await benchCrdScale(quick, 40, { windowSeconds: quick ? 20 : 30 }));
}
if (sections.includes('dashboard-scale')) {
  report('dashboard in Chromium at 1,000 and 10,000 servers', await benchDashboardScale(quick, 60));
}
if (wanted('crd')) {
  report('EditorServer objects ÷ manifest files as the manifests, editors on Kubernetes', await benchCrd(quick, 17));
}
const rows = targetRows(results);
if (rows.length > 0) console.log(`\n## targets\n${targetTable(rows)}`);
console.log(`\n## summary\n${JSON.stringify({ ...results, targets: rows })}`);
