// A failed platform call, told in one line that says what to do about it.
import { PlatformTimeoutError } from './token-api.ts';

/**
 * What went wrong creating or revoking the access token, and what to change. The SDK's message
 * is trimmed of its "Config: …" suffix; secrets never reach it (the caller masks them anyway).
 */
export function describeTokenError(error: unknown, host: string): string {
  const e = error as { statusCode?: number; errorCode?: string; message?: string; code?: string; cause?: { code?: string } };
  const message = String(e?.message ?? error).replace(/\.? Config: .*$/s, '');
  const code = e?.code ?? e?.cause?.code ?? /\b(E[A-Z]{4,})\b/.exec(message)?.[1];
  if (e?.statusCode === 403 || e?.errorCode === 'PERMISSION_DENIED') {
    return `the workspace refused to create an access token for the app's service principal (permission denied: ${message}): `
      + 'grant the service principal the "Can Use" permission on tokens (Settings → Advanced → Personal Access Tokens → Permission Settings) and workspace access, then wait: the service retries by itself';
  }
  if (e?.errorCode === 'QUOTA_EXCEEDED') {
    return `the service principal has too many tokens (${message}): revoke its unused ones; the service retries by itself`;
  }
  if (/invalid_client|Client authentication failed/i.test(message) || e?.statusCode === 401) {
    return `the workspace at ${host} did not accept the app's credentials (${message}): check DATABRICKS_CLIENT_ID and DATABRICKS_CLIENT_SECRET (the app's service principal and an OAuth secret of it)`;
  }
  if (error instanceof PlatformTimeoutError || (code && /^(ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EPIPE)$/.test(code)) || /socket hang up|fetch failed|Can't connect/i.test(message)) {
    return `the workspace at ${host} cannot be reached (${message}): check DATABRICKS_HOST and the app's network; the service retries by itself`;
  }
  return `${message}: check DATABRICKS_HOST, DATABRICKS_CLIENT_ID and DATABRICKS_CLIENT_SECRET; the service retries by itself`;
}
