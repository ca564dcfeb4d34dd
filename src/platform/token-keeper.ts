// Keeps a model-serving access token for the router: created at start-up without holding the
// service up, written to the router's configuration, replaced before it expires, and revoked
// once replaced and at a clean shutdown. Failures are retried with capped backoff and reported,
// never fatal.
import type { PlatformSettings } from '../config/settings.ts';
import { workspaceUrl } from '../config/workspace-url.ts';
import { backoffMs, type Backoff } from '../core/backoff.ts';
import { realClock, type Clock } from '../core/clock.ts';
import { databricksCfgFile, writeDatabricksCfg } from './databricks-cfg.ts';
import { prepareRouterFolder, routerFiles, writeRouterConfig, type RouterFiles } from './router-config.ts';
import { databricksTokenApi, tokenComment, type CreatedToken, type TokenApi } from './token-api.ts';
import { describeTokenError } from './token-errors.ts';

/** What may be shown of the token in use (never its value). */
export interface TokenShown {
  comment: string;
  createdAt: number;
  expiresAt: number;
  /** When a new token replaces it; undefined when rotation is off. */
  rotatesAt?: number;
}

/** Told to listeners each time a token has been written to the router's configuration. */
export interface TokenWritten extends TokenShown {
  configFile: string;
}

export type TokenWrittenListener = (written: TokenWritten) => void | Promise<void>;

export interface TokenKeeperOptions {
  settings: PlatformSettings;
  log: (message: string) => void;
  /** The platform; by default the Databricks SDK as the service principal. */
  api?: TokenApi;
  clock?: Clock;
}

/** Node's timers hold at most this many ms; a longer wait is taken in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class TokenKeeper {
  readonly files: RouterFiles;
  readonly cliConfigFile: string;
  private readonly settings: PlatformSettings;
  private readonly log: (message: string) => void;
  private readonly clock: Clock;
  private readonly api: TokenApi | undefined;
  /** Credentials the platform did not give (reported; nothing is attempted without them). */
  private readonly missing: string[];
  private readonly listeners = new Set<TokenWrittenListener>();
  private current: { token: CreatedToken; shown: TokenShown } | undefined;
  /** Values of tokens this keeper has had, masked wherever a message could carry one. */
  private readonly secrets = new Set<string>();
  private lastError: string | undefined;
  private loggedError: string | undefined;
  private cliConfigError: string | undefined;
  private lastAttemptAt: number | undefined;
  private nextAttemptAt: number | undefined;
  private failures = 0;
  private timer: unknown;
  private inFlight: Promise<void> | undefined;
  /** Replaced tokens waiting for their revocation, by id. */
  private readonly revocations = new Map<string, { timer?: unknown; failures: number }>();
  private started = false;
  private disposed = false;

  private get retryBackoff(): Backoff {
    return { initialMs: this.settings.retryInitialMs, maxMs: this.settings.retryMaxMs };
  }

  constructor(options: TokenKeeperOptions) {
    this.settings = options.settings;
    this.log = options.log;
    this.clock = options.clock ?? realClock;
    this.files = routerFiles(this.settings.homeDir);
    this.cliConfigFile = databricksCfgFile(this.settings.homeDir);
    const { host, clientId, clientSecret } = this.settings;
    this.missing = Object.entries({ DATABRICKS_HOST: host, DATABRICKS_CLIENT_ID: clientId, DATABRICKS_CLIENT_SECRET: clientSecret })
      .filter(([, value]) => !value).map(([name]) => name);
    if (clientSecret) this.secrets.add(clientSecret);
    this.api = this.missing.length > 0 ? undefined
      : options.api ?? databricksTokenApi({ host: host!, clientId: clientId!, clientSecret: clientSecret! }, this.settings.callTimeoutMs);
  }

  /** Starts in the background: writes ~/.databrickscfg, then creates the first token. Returns at once. */
  start(): void {
    if (this.started || this.disposed) return;
    this.started = true;
    if (!this.api) {
      this.lastError = `${this.missing.join(', ')} ${this.missing.length === 1 ? 'is' : 'are'} not set, so no access token is created for the router: `
        + 'set DATABRICKS_HOST, DATABRICKS_CLIENT_ID and DATABRICKS_CLIENT_SECRET (a Databricks app gets them from the platform)';
      this.log(`assistant: ${this.lastError}`);
      return;
    }
    this.inFlight = this.prepare().then(() => this.renew()).catch((error) => this.unexpected(error));
  }

  /** Calls `listener` after each token written (the first, and each rotation); returns a function that removes it. */
  onTokenWritten(listener: TokenWrittenListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The token in use, if any and not expired. */
  get token(): TokenShown | undefined {
    const shown = this.current?.shown;
    return shown && shown.expiresAt > this.clock.now() ? { ...shown } : undefined;
  }

  /** For GET /health: never the token or the secret. */
  read(): Record<string, unknown> {
    const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
    const shown = this.current?.shown;
    return {
      configured: this.token !== undefined,
      endpoint: this.settings.servingEndpoint,
      config_file: this.files.config,
      cli_config_file: this.cliConfigFile,
      token: shown ? { comment: shown.comment, created_at: iso(shown.createdAt), expires_at: iso(shown.expiresAt), rotates_at: iso(shown.rotatesAt) } : null,
      last_error: this.lastError ?? null,
      last_attempt_at: iso(this.lastAttemptAt),
      next_attempt_at: iso(this.nextAttemptAt),
    };
  }

  /** Problems for GET /health, each saying what to do. */
  problems(): string[] {
    const problems: string[] = [];
    if (this.lastError) problems.push(`assistant: ${this.lastError}`);
    if (this.cliConfigError) problems.push(`assistant: ${this.cliConfigError}`);
    const shown = this.current?.shown;
    if (shown && shown.expiresAt <= this.clock.now() && !this.lastError) {
      problems.push(`assistant: the access token ${shown.comment} expired at ${new Date(shown.expiresAt).toISOString()}; model calls fail until a new one is created (restart the service, or turn DEVBOX_TOKEN_ROTATION on)`);
    }
    return problems;
  }

  /**
   * Stops every timer and revokes the tokens this keeper created (the current one, and replaced
   * ones still in their grace period), waiting at most `boundMs`.
   */
  async dispose(boundMs = 5000): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.clock.clearTimeout(this.timer);
    for (const entry of this.revocations.values()) this.clock.clearTimeout(entry.timer);
    this.listeners.clear();
    const work = (async () => {
      await this.inFlight?.catch(() => undefined);
      const ids = [...this.revocations.keys(), ...(this.current ? [this.current.token.id] : [])];
      this.revocations.clear();
      const results = await Promise.allSettled(ids.map((id) => this.api!.revoke(id)));
      const failed = results.filter((result) => result.status === 'rejected');
      if (failed.length > 0) {
        this.log(`assistant: ${failed.length} access token(s) could not be revoked at shutdown (${this.mask(describeTokenError(failed[0].reason, this.host))}); they expire by themselves`);
      } else if (ids.length > 0) this.log(`assistant: revoked ${ids.length} access token(s) at shutdown`);
    })();
    let timer: unknown;
    const bound = new Promise<void>((resolve) => { timer = this.clock.setTimeout(resolve, boundMs); });
    await Promise.race([work, bound]);
    this.clock.clearTimeout(timer);
  }

  private get host(): string {
    return workspaceUrl(this.settings.host!);
  }

  /** The files that do not wait for a token: ~/.databrickscfg, the router's folder and plugin log. */
  private async prepare(): Promise<void> {
    try {
      await writeDatabricksCfg(this.cliConfigFile, { host: this.settings.host!, clientId: this.settings.clientId!, clientSecret: this.settings.clientSecret! });
    } catch (error) {
      this.cliConfigError = this.mask(`${this.cliConfigFile} could not be written (${(error as Error).message}): make the home folder writable by the service's user; the databricks CLI in editor terminals needs it`);
      this.log(`assistant: ${this.cliConfigError}`);
    }
    await prepareRouterFolder(this.files).catch(() => undefined);
  }

  /** One attempt: a new token, written to the router's configuration; the one before is revoked after the grace period. */
  private async renew(): Promise<void> {
    if (this.disposed) return;
    this.timer = undefined;
    this.nextAttemptAt = undefined;
    this.lastAttemptAt = this.clock.now();
    const lifetimeMs = this.settings.tokenLifetimeSeconds * 1000;
    let created: CreatedToken | undefined;
    let movedAside: string | undefined;
    try {
      created = await this.api!.create(tokenComment(this.clock.now()), this.settings.tokenLifetimeSeconds);
      this.secrets.add(created.value);
      if (this.disposed) {
        await this.api!.revoke(created.id).catch(() => undefined);
        return;
      }
      ({ movedAside } = await writeRouterConfig(this.files, {
        host: this.settings.host!, endpoint: this.settings.servingEndpoint, token: created.value, port: this.settings.routerPort,
      }));
    } catch (error) {
      if (created) {
        // Never written, so never used: revoked at once.
        this.revokeAfter(created.id, 0);
        return this.fail(`the access token was created but ${this.files.config} could not be written (${(error as Error).message}): make ${this.files.dir} writable by the service's user; the service retries by itself`);
      }
      return this.fail(describeTokenError(error, this.host));
    }
    const now = this.clock.now();
    const previous = this.current;
    const rotation = this.settings.rotation;
    const shown: TokenShown = {
      comment: created.comment,
      createdAt: created.createdAt ?? now,
      expiresAt: created.expiresAt ?? now + lifetimeMs,
      ...(rotation === 'off' ? {} : { rotatesAt: now + rotation * lifetimeMs }),
    };
    this.current = { token: created, shown };
    this.failures = 0;
    this.lastError = undefined;
    this.loggedError = undefined;
    if (movedAside) this.log(`assistant: ${this.files.config} was not a JSON object; it was moved to ${movedAside} and written anew`);
    this.log(`assistant: access token ${shown.comment} written to ${this.files.config} for serving endpoint ${this.settings.servingEndpoint}; `
      + `it expires at ${new Date(shown.expiresAt).toISOString()}${shown.rotatesAt ? ` and is replaced at ${new Date(shown.rotatesAt).toISOString()}` : ' (rotation off)'}`);
    for (const listener of this.listeners) {
      try {
        Promise.resolve(listener({ ...shown, configFile: this.files.config })).catch((error) => this.log(`assistant: after a new token: ${this.mask((error as Error).message)}`));
      } catch (error) {
        this.log(`assistant: after a new token: ${this.mask((error as Error).message)}`);
      }
    }
    if (previous) this.revokeAfter(previous.token.id, this.settings.revokeGraceSeconds * 1000);
    if (shown.rotatesAt !== undefined) this.scheduleRenewal(shown.rotatesAt);
  }

  /** Records and logs (once per distinct error) a failed attempt, and tries again after a capped, doubling wait. */
  private fail(description: string): void {
    this.failures += 1;
    this.lastError = this.mask(description);
    const delay = backoffMs(this.failures, this.retryBackoff);
    if (this.lastError !== this.loggedError) {
      this.loggedError = this.lastError;
      this.log(`assistant: ${this.lastError} (retried with backoff, at most every ${Math.round(this.settings.retryMaxMs / 1000)} s)`);
    }
    this.scheduleRenewal(this.clock.now() + delay);
  }

  private scheduleRenewal(at: number): void {
    if (this.disposed) return;
    this.clock.clearTimeout(this.timer);
    this.nextAttemptAt = at;
    const wait = () => {
      const left = at - this.clock.now();
      if (left > 0) {
        this.timer = this.clock.setTimeout(wait, Math.min(left, MAX_TIMER_MS));
        return;
      }
      this.inFlight = this.renew().catch((error) => this.unexpected(error));
    };
    wait();
  }

  /** Revokes a replaced token after `delayMs`; retried with backoff while the platform cannot be reached. */
  private revokeAfter(tokenId: string, delayMs: number): void {
    if (this.disposed) return;
    const entry = this.revocations.get(tokenId) ?? { failures: 0 };
    this.revocations.set(tokenId, entry);
    entry.timer = this.clock.setTimeout(() => {
      entry.timer = undefined;
      this.api!.revoke(tokenId).then(
        () => this.revocations.delete(tokenId),
        (error) => {
          if (this.disposed || !this.revocations.has(tokenId)) return;
          entry.failures += 1;
          if (entry.failures === 1) this.log(`assistant: revoking a replaced access token failed (${this.mask(describeTokenError(error, this.host))}); retrying`);
          this.revokeAfter(tokenId, backoffMs(entry.failures, this.retryBackoff));
        },
      );
    }, delayMs);
  }

  /** A bug rather than a platform failure: logged, and the keeper tries again later all the same. */
  private unexpected(error: unknown): void {
    this.log(`assistant: unexpected error keeping the access token: ${this.mask(String((error as Error)?.stack ?? error))}`);
    if (!this.timer && !this.disposed) this.fail(this.mask(String((error as Error)?.message ?? error)));
  }

  /** The text with every secret this keeper knows replaced by ***. */
  private mask(text: string): string {
    let masked = text;
    for (const secret of this.secrets) masked = masked.split(secret).join('***');
    return masked;
  }
}
