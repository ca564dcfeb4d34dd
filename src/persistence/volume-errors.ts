// The volume store's failures as StoreErrors: which kind (a refusal, a missing volume, the network,
// a passing failure), a one-line account of the workspace's answer with secrets masked, and a hint
// that says what to do.
import { StoreError, type StoreFailure } from './types.ts';

const DENIED_HINT = "add the volume to the app as a resource with Can read and write (the app's service principal needs READ VOLUME and WRITE VOLUME)";

/** What the store was doing: a 404 means something else on each. */
export type Operation = 'put' | 'get' | 'list' | 'delete' | 'volume';

/** A try that got no answer within the store's bound. */
export class RequestTimeout extends Error {}

const NETWORK_CODES = /^(ECONNREFUSED|ECONNRESET|ECONNABORTED|EPIPE|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENETDOWN|UND_ERR_SOCKET|ERR_STREAM_PREMATURE_CLOSE)$/;

/** The HTTP status of an SDK ApiError; undefined for anything else. */
export function statusOf(error: unknown): number | undefined {
  const status = (error as { statusCode?: unknown })?.statusCode;
  return typeof status === 'number' ? status : undefined;
}

/** Which StoreFailure an error of the SDK, the network or the clock is. */
function classify(error: unknown, op: Operation): StoreFailure {
  const status = statusOf(error);
  const e = error as { code?: unknown; name?: string; message?: string; cause?: { code?: unknown } };
  if (status !== undefined) {
    if (status === 401 || status === 403) return 'denied';
    // A 404 the operation did not expect: on an upload or the volume's own lookup, the volume is not there.
    if (status === 404) return op === 'put' || op === 'volume' ? 'missing' : 'transient';
    if (status === 408 || status === 429 || status >= 500) return 'transient';
    return 'denied';
  }
  const code = String(e?.code ?? e?.cause?.code ?? '');
  const message = String(e?.message ?? '');
  if (NETWORK_CODES.test(code) || /socket hang up|fetch failed|Can't connect|ECONNREFUSED|ECONNRESET|\baborted\b/i.test(message)) return 'unreachable';
  if (/invalid_client|Client authentication failed|unauthori[sz]ed/i.test(message)) return 'denied';
  // Our bound, the SDK's own retry bound ("Timeout: …"), and anything else a try may cure.
  return 'transient';
}

function hintFor(failure: StoreFailure, status: number | undefined, volume: string): string {
  switch (failure) {
    case 'denied':
      return status === 401 || status === undefined
        ? "check DATABRICKS_CLIENT_ID and DATABRICKS_CLIENT_SECRET (the app's service principal and an OAuth secret of it)"
        : status === 403 ? DENIED_HINT : `correct the persistence target or report the workspace's answer; ${DENIED_HINT}`;
    case 'missing':
      return `create the volume ${volume} (catalog.schema.volume ${volume.split('/').slice(2).join('.')}) or correct DEVBOX_PERSIST_TO, then ${DENIED_HINT}`;
    case 'unreachable':
      return "check DATABRICKS_HOST and the app's network; the service keeps trying";
    case 'transient':
      return 'the workspace failed for a while; the service keeps trying';
  }
}

/** `HTTP 403 PERMISSION_DENIED: …` or the network error's code and message, one line, trimmed of the SDK's "Config: …" suffix. */
function detailOf(error: unknown): string {
  const e = error as { statusCode?: number; errorCode?: string; message?: string; code?: string; cause?: { code?: string } };
  const message = String(e?.message ?? error).replace(/\.? Config: .*$/s, '').replace(/\s+/g, ' ').trim().slice(0, 300)
    // An answer without a body (HEAD): the SDK's stand-in says no more than the status.
    .replace(/^Response from server \([^)]*\)$/, '');
  if (typeof e?.statusCode === 'number') return `HTTP ${e.statusCode} ${e.errorCode ?? ''}${message ? `: ${message}` : ''}`.trim();
  // The SDK's own retry loop (429 and a few known messages) ends with a bare "Timeout:".
  if (/^Timeout:\s*$/.test(message)) return 'the workspace asked to slow down (HTTP 429) or kept answering a transient error';
  const code = e?.code ?? e?.cause?.code;
  return code && !message.includes(String(code)) ? `${code}: ${message}` : message;
}

/** `volume /Volumes/…: uploading objects/… failed: HTTP 403 PERMISSION_DENIED: …`, with what to do. */
export function storeErrorOf(error: unknown, context: { description: string; what: string; op: Operation; volume: string; secrets: readonly string[] }): StoreError {
  const failure = classify(error, context.op);
  let detail = maskSecrets(detailOf(error), context.secrets);
  if (failure === 'missing') detail = `the volume ${context.volume} does not exist, or the app's service principal cannot see it (${detail})`;
  return new StoreError(failure, `${context.description}: ${context.what} failed: ${detail}`, hintFor(failure, statusOf(error), context.volume));
}

/** Bearer and Basic credentials, token-like fields and personal access tokens, and the given secrets, as `***`. */
export function maskSecrets(text: string, secrets: readonly string[] = []): string {
  let masked = text
    .replace(/\b(Bearer|Basic)\s+[^\s"',;]+/gi, '$1 ***')
    .replace(/\b(access_token|refresh_token|id_token|client_secret|token_value)(["']?\s*[:=]\s*["']?)[^\s"'&,;}]+/gi, '$1$2***')
    .replace(/\b(token)(=|["']\s*:\s*["'])[^\s"'&,;}]+/gi, '$1$2***')
    .replace(/\bdapi[0-9a-f]{16,}\b/gi, '***');
  for (const secret of secrets) if (secret.length >= 4) masked = masked.split(secret).join('***');
  return masked;
}
