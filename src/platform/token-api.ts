// The Databricks token API, as the service principal (OAuth machine-to-machine), through the
// SDK's WorkspaceClient; every call bounded in time, so a workspace that does not answer holds
// nothing up.
import type { Context, WorkspaceClient } from '@databricks/sdk-experimental';
import { workspaceUrl } from '../config/workspace-url.ts';
import type { ServicePrincipal } from './databricks-cfg.ts';

/** A token as created: its value (secret) and what may be shown of it. */
export interface CreatedToken {
  value: string;
  id: string;
  comment: string;
  /** Server times in ms since the epoch, when the answer has them. */
  createdAt?: number;
  expiresAt?: number;
}

/** What the token keeper needs of the platform (a fake in unit tests, the SDK otherwise). */
export interface TokenApi {
  create(comment: string, lifetimeSeconds: number): Promise<CreatedToken>;
  /** Revokes a token; one that no longer exists counts as revoked. */
  revoke(tokenId: string): Promise<void>;
}

/** `sdk-` and the current Unix time in nanoseconds (milliseconds from `nowMs`, the rest from the monotonic clock). */
export function tokenComment(nowMs: number): string {
  return `sdk-${BigInt(Math.floor(nowMs)) * 1_000_000n + (process.hrtime.bigint() % 1_000_000n)}`;
}

/**
 * The token API through the SDK. The SDK's own retries stop within the call's bound, and a call
 * that exceeds it is cancelled. After a failure the next call starts with a new client, so no
 * half-finished sign-in is reused.
 */
export function databricksTokenApi(principal: ServicePrincipal, timeoutMs: number): TokenApi {
  let client: WorkspaceClient | undefined;
  // Loaded on first use (about 0.4 s and 45 MB): a service without Databricks settings never pays for it.
  const sdk = () => import('@databricks/sdk-experimental');
  const clientNow = async () => client ??= new (await sdk()).WorkspaceClient({
    host: workspaceUrl(principal.host),
    clientId: principal.clientId,
    clientSecret: principal.clientSecret,
    authType: 'oauth-m2m',
    // Only what is given here: not the environment, not ~/.databrickscfg (which this service writes).
    loaders: [],
    httpTimeoutSeconds: Math.max(1, Math.ceil(timeoutMs / 1000)),
    retryTimeoutSeconds: Math.max(1, Math.floor(timeoutMs / 1000)),
  });
  const call = async <T>(what: string, run: (client: WorkspaceClient, context: Context) => Promise<T>): Promise<T> => {
    const cancel: Array<() => void> = [];
    let cancelled = false;
    const context = new (await sdk()).Context({
      cancellationToken: {
        get isCancellationRequested() {
          return cancelled;
        },
        onCancellationRequested: (listener: () => void) => cancel.push(listener),
      },
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        cancelled = true;
        for (const listener of cancel) listener();
        reject(new PlatformTimeoutError(`${what} got no answer within ${Math.round(timeoutMs / 1000)} s`));
      }, timeoutMs);
    });
    try {
      return await Promise.race([clientNow().then((c) => run(c, context)), timeout]);
    } catch (error) {
      client = undefined;
      throw error;
    } finally {
      clearTimeout(timer);
    }
  };
  return {
    async create(comment, lifetimeSeconds) {
      const answer = await call('creating the access token', (c, context) => c.tokens.create({ comment, lifetime_seconds: lifetimeSeconds }, context));
      const info = answer.token_info;
      if (!answer.token_value || !info?.token_id) throw new Error('the workspace answered token/create without a token value or id');
      return {
        value: answer.token_value,
        id: info.token_id,
        comment: info.comment ?? comment,
        createdAt: info.creation_time,
        expiresAt: info.expiry_time !== undefined && info.expiry_time > 0 ? info.expiry_time : undefined,
      };
    },
    async revoke(tokenId) {
      try {
        await call('revoking the access token', (c, context) => c.tokens.delete({ token_id: tokenId }, context));
      } catch (error) {
        if ((error as { errorCode?: string }).errorCode === 'RESOURCE_DOES_NOT_EXIST') return;
        throw error;
      }
    },
  };
}

/** A platform call cut off by its bound. */
export class PlatformTimeoutError extends Error {}
