#!/usr/bin/env node
// The test cluster's dynamic volume provisioner (scripts/test-cluster.sh starts it): what kind's
// local-path-provisioner does on a real test cluster, so a PersistentVolumeClaim binds without a
// hand-made volume. Plain JavaScript, no dependencies, Node.js 20 or newer: it runs under
// whichever `node` the script finds.
//
//   node scripts/test-cluster-provisioner.mjs --kubeconfig FILE --volumes DIR
//
// - Makes the StorageClass `devbox-local` (the cluster's default, provisioner
//   `devbox.dev/host-path`, reclaimPolicy Delete, volumeBindingMode Immediate). A claim that names
//   no class gets it from the API server's DefaultStorageClass admission, as on a real cluster.
// - For each claim of that class that has no volume, makes the folder DIR/pvc-<claim uid> (mode
//   0777, so an editor that does not run as root can write: the kubelet does not apply fsGroup to
//   hostPath volumes) and a hostPath PersistentVolume of that name bound to the claim (claimRef
//   with its uid); the controller-manager's volume controller then binds the claim to it.
// - When a volume it made is Released (its claim deleted), removes the folder, then the volume.
//
// Both kinds are followed by list-then-watch: list, watch from the list's resourceVersion, and
// list again whenever a watch ends, for whatever reason (its timeout, a 410, a killed API
// server). Re-listing after every watch keeps the loop to one path and costs nothing on a test
// cluster's few objects; a failure waits (backoff up to 10 s) before the next list. Each change
// runs one reconcile pass over what was listed, which is idempotent (names derive from the claim's
// uid), and a pass that failed is retried. It exits when its kubeconfig disappears (the cluster's
// run folder was removed), so no provisioner outlives its cluster.
import { existsSync, mkdirSync, chmodSync, readFileSync, rmSync } from 'node:fs';
import { request as httpsRequest, Agent } from 'node:https';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const CLASS = 'devbox-local';
const PROVISIONER = 'devbox.dev/host-path';
const PROVISIONED_BY = 'pv.kubernetes.io/provisioned-by';
const WATCH_SECONDS = 120;
const RESYNC_MS = 30_000;

const { values: args } = parseArgs({
  options: { kubeconfig: { type: 'string' }, volumes: { type: 'string' } },
});
if (!args.kubeconfig || !args.volumes) {
  console.error('usage: test-cluster-provisioner.mjs --kubeconfig FILE --volumes DIR');
  process.exit(2);
}
const kubeconfigPath = resolve(args.kubeconfig);
const volumesDir = resolve(args.volumes);

function log(message) {
  console.log(`${new Date().toISOString()} ${message}`);
}

// ---------------------------------------------------------------------------------------------
// The API server: the kubeconfig's server, bearer token and CA (the one the test cluster writes).
// ---------------------------------------------------------------------------------------------

function readKubeconfig(file) {
  const text = readFileSync(file, 'utf8');
  const server = /^\s*server:\s*(\S+)/m.exec(text)?.[1];
  const token = /^\s*token:\s*(\S+)/m.exec(text)?.[1];
  const caFile = /^\s*certificate-authority:\s*(\S+)/m.exec(text)?.[1];
  const caData = /^\s*certificate-authority-data:\s*(\S+)/m.exec(text)?.[1];
  if (!server || !token || !(caFile || caData)) {
    throw new Error(`${file} lacks a server, a bearer token or a certificate authority`);
  }
  const ca = caData ? Buffer.from(caData, 'base64') : readFileSync(resolve(dirname(file), caFile));
  return { server: new URL(server), token, ca };
}

const api = readKubeconfig(kubeconfigPath);
const agent = new Agent({ ca: api.ca, keepAlive: true });

/** An HTTP failure, with the API's status code (404, 409, 410...) when there was an answer. */
class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.status = status;
  }
}

function open(method, path, { body, timeoutMs, signal } = {}) {
  return new Promise((resolvePromise, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = httpsRequest({
      agent,
      host: api.server.hostname,
      port: api.server.port || 443,
      method,
      path,
      signal,
      timeout: timeoutMs,
      headers: {
        authorization: `Bearer ${api.token}`,
        accept: 'application/json',
        ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
      },
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.on('response', resolvePromise);
    req.end(payload);
  });
}

/** One request; resolves with the JSON answer, rejects with ApiError on a status >= 300. */
async function call(method, path, body) {
  const res = await open(method, path, { body, timeoutMs: 15_000 });
  let text = '';
  res.setEncoding('utf8');
  for await (const chunk of res) text += chunk;
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (res.statusCode >= 300) {
    throw new ApiError(`${method} ${path}: ${res.statusCode} ${json?.message ?? text.slice(0, 200)}`, res.statusCode);
  }
  return json;
}

/**
 * Watches `path` from `resourceVersion`, calling onEvent for each object event, until the server
 * ends the watch (resolves) or it fails (rejects; an ERROR event with its code, e.g. 410).
 */
async function watch(path, resourceVersion, onEvent, signal) {
  const query = `?watch=1&allowWatchBookmarks=true&timeoutSeconds=${WATCH_SECONDS}&resourceVersion=${encodeURIComponent(resourceVersion)}`;
  // The socket timeout only catches a connection that went silent: the server ends the watch
  // itself after WATCH_SECONDS.
  const res = await open('GET', path + query, { timeoutMs: (WATCH_SECONDS + 30) * 1000, signal });
  if (res.statusCode !== 200) {
    res.resume();
    throw new ApiError(`watch ${path}: ${res.statusCode}`, res.statusCode);
  }
  res.setEncoding('utf8');
  let buffered = '';
  for await (const chunk of res) {
    buffered += chunk;
    let newline;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline).trim();
      buffered = buffered.slice(newline + 1);
      if (!line) continue;
      const event = JSON.parse(line);
      if (event.type === 'ERROR') {
        throw new ApiError(`watch ${path}: ${event.object?.message ?? 'error event'}`, event.object?.code);
      }
      if (event.type !== 'BOOKMARK') onEvent(event.type, event.object);
    }
  }
  // A watch the API server dies under ends with an aborted response, which some Node.js versions
  // report as a normal end: either way the caller lists again.
}

// ---------------------------------------------------------------------------------------------
// list-then-watch into a cache of objects by name (namespace/name for claims)
// ---------------------------------------------------------------------------------------------

const claims = new Map();
const volumes = new Map();
const key = (o) => (o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name);

async function follow(what, path, cache, stopped) {
  let failures = 0;
  while (!stopped.aborted) {
    try {
      const list = await call('GET', path);
      cache.clear();
      for (const item of list.items) cache.set(key(item), item);
      if (failures > 0) log(`${what}: listed again after ${failures} failure(s)`);
      failures = 0;
      listed(what);
      await watch(path, list.metadata.resourceVersion, (type, object) => {
        if (type === 'DELETED') cache.delete(key(object));
        else cache.set(key(object), object);
        kick();
      }, stopped);
    } catch (error) {
      if (stopped.aborted) return;
      exitIfClusterGone();
      const delay = Math.min(10_000, 250 * 2 ** failures++);
      // A 410 ("too old resource version") is routine: list again at once.
      if (error.status === 410) continue;
      log(`${what}: ${error.message}; listing again in ${delay} ms`);
      await sleep(delay, stopped);
    }
  }
}

function sleep(ms, signal) {
  return new Promise((done) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', () => { clearTimeout(timer); done(); }, { once: true });
  });
}

function exitIfClusterGone() {
  if (!existsSync(kubeconfigPath)) {
    log(`${kubeconfigPath} is gone (the cluster was taken down): exiting`);
    process.exit(0);
  }
}

// ---------------------------------------------------------------------------------------------
// reconcile: the StorageClass, a volume per waiting claim, released volumes removed
// ---------------------------------------------------------------------------------------------

async function ensureStorageClass() {
  const path = `/apis/storage.k8s.io/v1/storageclasses/${CLASS}`;
  try {
    const existing = await call('GET', path);
    if (existing.provisioner !== PROVISIONER) {
      log(`StorageClass ${CLASS} exists with provisioner ${existing.provisioner}, not ${PROVISIONER}: its claims are not provisioned here`);
    }
    return;
  } catch (error) {
    if (error.status !== 404) throw error;
  }
  await call('POST', '/apis/storage.k8s.io/v1/storageclasses', {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: CLASS, annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
    provisioner: PROVISIONER,
    reclaimPolicy: 'Delete',
    volumeBindingMode: 'Immediate',
  }).catch((error) => {
    if (error.status !== 409) throw error;
  });
  log(`created StorageClass ${CLASS} (default, provisioner ${PROVISIONER})`);
}

/** The folder of a volume this provisioner made; only ever a direct child of the volumes folder. */
function folderOf(volumeName) {
  if (!/^pvc-[0-9a-f-]{36}$/.test(volumeName)) throw new Error(`not a volume name of this provisioner: ${volumeName}`);
  return join(volumesDir, volumeName);
}

/** Why a claim cannot be provisioned here, or undefined when it can. */
function unsupported(claim) {
  if (claim.spec.selector) return 'a claim with a selector cannot be provisioned dynamically';
  if (claim.spec.dataSource) return 'a claim with a data source (clone, snapshot) is not supported';
  if ((claim.spec.volumeMode ?? 'Filesystem') !== 'Filesystem') return `volumeMode ${claim.spec.volumeMode} is not supported (Filesystem only)`;
  if (!claim.spec.resources?.requests?.storage) return 'the claim requests no storage size';
  return undefined;
}

const reported = new Set();

async function provision(claim) {
  const { namespace, name, uid } = claim.metadata;
  const problem = unsupported(claim);
  if (problem) {
    if (!reported.has(uid)) {
      reported.add(uid);
      log(`claim ${namespace}/${name}: ${problem}`);
      await event(claim, 'Warning', 'ProvisioningFailed', problem);
    }
    return;
  }
  const volumeName = `pvc-${uid}`;
  const folder = folderOf(volumeName);
  const size = claim.spec.resources.requests.storage;
  mkdirSync(folder, { recursive: true });
  chmodSync(folder, 0o777);   // mkdir's mode is narrowed by the umask
  try {
    await call('POST', '/api/v1/persistentvolumes', {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: volumeName, annotations: { [PROVISIONED_BY]: PROVISIONER } },
      spec: {
        capacity: { storage: size },
        accessModes: claim.spec.accessModes,
        persistentVolumeReclaimPolicy: 'Delete',
        storageClassName: CLASS,
        volumeMode: 'Filesystem',
        hostPath: { path: folder, type: 'Directory' },
        claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace, name, uid },
      },
    });
  } catch (error) {
    if (error.status === 409) return;   // made by an earlier pass whose event has not come yet
    rmSync(folder, { recursive: true, force: true });
    throw error;
  }
  log(`provisioned ${volumeName} (${size}) for claim ${namespace}/${name} at ${folder}`);
  await event(claim, 'Normal', 'ProvisioningSucceeded', `Successfully provisioned volume ${volumeName}`);
}

async function reclaim(volume) {
  const { name, uid } = volume.metadata;
  const folder = folderOf(name);
  if (volume.spec.hostPath?.path !== folder) {
    log(`volume ${name} points at ${volume.spec.hostPath?.path}, not ${folder}: left alone`);
    return;
  }
  rmSync(folder, { recursive: true, force: true });
  try {
    await call('DELETE', `/api/v1/persistentvolumes/${name}`, { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { uid } });
  } catch (error) {
    if (error.status !== 404) throw error;
  }
  const claim = volume.spec.claimRef;
  log(`deleted ${name} and its folder (claim ${claim?.namespace}/${claim?.name} was deleted)`);
}

/** An Event on the claim, as a real provisioner reports; a failure to write it is only logged. */
async function event(claim, type, reason, message) {
  const { namespace, name, uid, resourceVersion } = claim.metadata;
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  try {
    await call('POST', `/api/v1/namespaces/${namespace}/events`, {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { generateName: `${name}.`, namespace },
      involvedObject: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace, name, uid, resourceVersion },
      type,
      reason,
      message,
      source: { component: PROVISIONER },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    });
  } catch (error) {
    log(`could not record event ${reason} on ${namespace}/${name}: ${error.message}`);
  }
}

function wantsVolume(claim) {
  return claim.spec.storageClassName === CLASS && !claim.spec.volumeName
    && claim.status?.phase === 'Pending' && !claim.metadata.deletionTimestamp;
}

function isReleased(volume) {
  return volume.metadata.annotations?.[PROVISIONED_BY] === PROVISIONER
    && volume.status?.phase === 'Released' && volume.spec.persistentVolumeReclaimPolicy === 'Delete'
    && !volume.metadata.deletionTimestamp;
}

/** One pass over the cache; throws after trying everything when anything failed. */
async function reconcile() {
  const failures = [];
  for (const claim of [...claims.values()]) {
    if (!wantsVolume(claim) || volumes.has(`pvc-${claim.metadata.uid}`)) continue;
    await provision(claim).catch((error) => failures.push(`claim ${key(claim)}: ${error.message}`));
  }
  for (const volume of [...volumes.values()]) {
    if (!isReleased(volume)) continue;
    await reclaim(volume).catch((error) => failures.push(`volume ${volume.metadata.name}: ${error.message}`));
  }
  if (failures.length > 0) throw new Error(failures.join('; '));
}

// One pass at a time; a change during a pass runs another after it; a failed pass is retried.
let running = false;
let again = false;
let retryTimer;
let retryDelay = 500;
let ready = false;

async function kick() {
  if (!ready) return;
  if (running) { again = true; return; }
  running = true;
  clearTimeout(retryTimer);
  try {
    do {
      again = false;
      await reconcile();
    } while (again);
    retryDelay = 500;
  } catch (error) {
    log(`${error.message}; trying again in ${retryDelay} ms`);
    retryTimer = setTimeout(kick, retryDelay);
    retryDelay = Math.min(10_000, retryDelay * 2);
  } finally {
    running = false;
  }
}

// ---------------------------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------------------------

const toList = new Set(['claims', 'volumes']);
function listed(what) {
  toList.delete(what);
  if (!ready && toList.size === 0) {
    ready = true;
    log(`ready: provisioning claims of StorageClass ${CLASS} into ${volumesDir}`);
  }
  kick();
}

const stop = new AbortController();
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    log(`${signal}: stopping`);
    stop.abort();
    agent.destroy();
    process.exit(0);
  });
}

mkdirSync(volumesDir, { recursive: true });
log(`starting: API server ${api.server.origin}, volumes in ${volumesDir}`);
// The StorageClass first: a claim created before it exists would get no class.
for (let failures = 0; ; failures++) {
  try {
    await ensureStorageClass();
    break;
  } catch (error) {
    exitIfClusterGone();
    const delay = Math.min(10_000, 250 * 2 ** failures);
    log(`StorageClass ${CLASS}: ${error.message}; trying again in ${delay} ms`);
    await sleep(delay, stop.signal);
  }
}
setInterval(() => {
  exitIfClusterGone();
  kick();
}, RESYNC_MS).unref();
await Promise.all([
  follow('claims', '/api/v1/persistentvolumeclaims', claims, stop.signal),
  follow('volumes', '/api/v1/persistentvolumes', volumes, stop.signal),
]);
