// The real claude-code-router, run by the service in deployed mode: started once the access token
// is in its config, forwarding to the fake workspace's serving endpoint with that token, started
// again when it dies and after each rotation, reachable as `ccr` from an editor's environment,
// and stopped with the service.
import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fs, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../workspace/git-fixtures.ts';
import { eventually, processExists, startTestService, type TestService } from '../helpers/service.ts';
import { startFakeWorkspace, type FakeWorkspace } from './fake-workspace.ts';
import { fakeWorkspaceSettings, tempHome } from './platform-settings.ts';

const SIGNED_IN = { 'X-Forwarded-Email': 'ada@example.com' };

let fake: FakeWorkspace;
const cleanups: Array<() => Promise<void>> = [];

beforeAll(async () => {
  fake = await startFakeWorkspace();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await fake?.close();
});

interface RouterHealth {
  running: boolean;
  listening: boolean;
  pid: number | null;
  port: number;
  restarts: number;
  last_exit: { code: number | null; signal: string | null } | null;
  waiting_for_config: boolean;
  command: string;
  log_file: string;
}

/** The service in deployed mode against the fake workspace, running the router on a free port. */
async function deployedService(env: NodeJS.ProcessEnv = {}): Promise<{ service: TestService; home: string; routerPort: number }> {
  const home = await tempHome();
  const routerPort = await freePort();
  const platform = fakeWorkspaceSettings(fake, home, env, { routerPort });
  const service = await startTestService({ requireIdentity: true, runRouter: true, platform });
  cleanups.push(async () => {
    await service.stop();
    await fs.rm(home, { recursive: true, force: true });
  });
  return { service, home, routerPort };
}

async function routerHealth(service: TestService): Promise<RouterHealth> {
  const health = await service.request('GET', '/health', undefined, SIGNED_IN);
  expect(health.status).toBe(200);
  return health.body.assistant_router as RouterHealth;
}

/** An Anthropic-style message to the router, as Claude Code sends it; the answer's text, or the failure. */
async function ask(routerPort: number, text = 'hello'): Promise<{ status: number; text: string | undefined }> {
  const res = await fetch(`http://127.0.0.1:${routerPort}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'claude-sonnet-4', max_tokens: 64, messages: [{ role: 'user', content: text }] }),
  });
  const body = await res.json().catch(() => undefined) as { content?: Array<{ type: string; text?: string }> } | undefined;
  return { status: res.status, text: body?.content?.find((part) => part.type === 'text')?.text };
}

/** The token the fake handed out last, not revoked. */
const newestToken = () => fake.tokens.filter((token) => !token.deleted).at(-1);

describe('claude-code-router run by the service', () => {
  it('starts once the access token is written, forwards with it, comes back when killed, and stops with the service', async () => {
    // A pid file naming a live process that is not a router (a reused pid): removed, the process left alone.
    const bystander = spawn('sleep', ['300'], { stdio: 'ignore' });
    cleanups.push(async () => void bystander.kill('SIGKILL'));
    fake.denyTokenCreate(true);
    cleanups.push(async () => fake.denyTokenCreate(false));
    const home = await tempHome();
    await fs.mkdir(join(home, '.claude-code-router'), { recursive: true });
    await fs.writeFile(join(home, '.claude-code-router', '.claude-code-router.pid'), String(bystander.pid));
    const routerPort = await freePort();
    const service = await startTestService({ requireIdentity: true, runRouter: true, platform: fakeWorkspaceSettings(fake, home, {}, { routerPort }) });
    let stopped = false;
    cleanups.push(async () => {
      if (!stopped) await service.stop();
      await fs.rm(home, { recursive: true, force: true });
    });

    // No token, no config: nothing to run yet, and the service serves meanwhile.
    await eventually(async () => (await service.request('GET', '/health', undefined, SIGNED_IN)).body.assistant?.last_error);
    expect(fake.tokens).toHaveLength(0);
    expect(await routerHealth(service)).toMatchObject({ running: false, pid: null, waiting_for_config: true, port: routerPort });

    fake.denyTokenCreate(false);
    const first = await eventually(async () => {
      const state = await routerHealth(service);
      return state.running && state.listening ? state : undefined;
    }, 30_000);
    expect(first).toMatchObject({ port: routerPort, restarts: 0, waiting_for_config: false });
    expect(processExists(first.pid!)).toBe(true);
    expect(processExists(bystander.pid!)).toBe(true);
    expect(readFileSync(join(home, '.claude-code-router', '.claude-code-router.pid'), 'utf8').trim()).toBe(String(first.pid));
    expect(service.lines.some((line) => line.includes(`started claude-code-router (pid ${first.pid})`))).toBe(true);

    // A message through the router reaches the serving endpoint with the token the fake issued.
    const answer = await ask(routerPort);
    expect(answer).toEqual({ status: 200, text: 'hello from the fake endpoint' });
    expect(fake.tokens).toHaveLength(1);
    expect(fake.servingCalls.at(-1)).toMatchObject({ endpoint: 'databricks-claude-sonnet-4', authorization: `Bearer ${fake.tokens[0].value}` });
    // The token is in the router's config file, never in its environment.
    expect(readFileSync(`/proc/${first.pid}/environ`, 'utf8')).not.toContain(fake.tokens[0].value);
    expect(readFileSync(`/proc/${first.pid}/environ`, 'utf8')).not.toContain(fake.clientSecret);

    // Killed: the supervisor starts it again, and it forwards again.
    process.kill(first.pid!, 'SIGKILL');
    const second = await eventually(async () => {
      const state = await routerHealth(service);
      return state.running && state.listening && state.pid !== first.pid ? state : undefined;
    }, 30_000);
    expect(second.restarts).toBe(1);
    expect(second.last_exit).toMatchObject({ code: null, signal: 'SIGKILL' });
    expect(processExists(first.pid!)).toBe(false);
    expect(service.lines.some((line) => line.includes(`claude-code-router (pid ${first.pid}) was ended by SIGKILL`) && line.includes('starting it again'))).toBe(true);
    expect(await ask(routerPort)).toEqual({ status: 200, text: 'hello from the fake endpoint' });
    const output = readFileSync(second.log_file, 'utf8');
    expect(output.match(/devbox-controller starts claude-code-router/g)).toHaveLength(2);

    // Shutdown stops it: the process is gone and nothing answers on its port.
    await service.stop();
    stopped = true;
    expect(processExists(second.pid!)).toBe(false);
    await expect(ask(routerPort)).rejects.toThrow();
    expect(processExists(bystander.pid!)).toBe(true);
  }, 90_000);

  it('is the `ccr` of editor terminals: `ccr code` from an editor\'s environment reaches the serving endpoint', async () => {
    const { service, home, routerPort } = await deployedService();
    const running = await eventually(async () => {
      const state = await routerHealth(service);
      return state.running && state.listening ? state : undefined;
    }, 30_000);
    const shim = join(service.settings.dataDir, 'bin', 'ccr');
    expect(running.command).toBe(shim);
    expect((await fs.stat(shim)).mode & 0o777).toBe(0o755);

    const created = await service.request('POST', '/servers', { name: 'Terminal' }, SIGNED_IN);
    const started = await service.request('POST', `/servers/${created.body.id}/start`, undefined, SIGNED_IN);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    // The environment the editor (and so its terminals) runs with: `ccr` first on PATH, no secrets.
    const editorEnv = Object.fromEntries(readFileSync(`/proc/${started.body.data.pid}/environ`, 'utf8').split('\0').filter(Boolean)
      .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]));
    expect(editorEnv.PATH.split(':')[0]).toBe(join(service.settings.dataDir, 'bin'));
    expect(JSON.stringify(editorEnv)).not.toContain(fake.clientSecret);

    // A stand-in for Claude Code: what `ccr code` starts, with the router's address in its environment.
    const claude = join(home, 'fake-claude.mjs');
    await fs.writeFile(claude, [
      '#!/usr/bin/env node',
      "const res = await fetch(process.env.ANTHROPIC_BASE_URL + '/v1/messages', { method: 'POST', headers: { 'content-type': 'application/json' },",
      "  body: JSON.stringify({ model: 'claude-sonnet-4', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }) });",
      "const body = await res.json();",
      "console.log(`node ${process.versions.node}; answer ${res.status}: ${body.content?.[0]?.text}`);",
      '',
    ].join('\n'), { mode: 0o755 });
    // PATH without the project's node_modules/.bin, whatever runs the tests: the shim brings its own Node.js.
    const path = [join(service.settings.dataDir, 'bin'), '/usr/local/bin', '/usr/bin', '/bin'].join(':');
    const result = await run('ccr', ['code'], { ...editorEnv, PATH: path, CLAUDE_PATH: claude });
    expect(result.code, result.output).toBe(0);
    expect(result.output).toContain('answer 200: hello from the fake endpoint');
    expect(Number(/node (\d+)\./.exec(result.output)?.[1])).toBeGreaterThanOrEqual(20);
    expect(fake.servingCalls.at(-1)?.authorization).toBe(`Bearer ${newestToken()!.value}`);

    // The router serves on after `ccr code` ended (were it stopped by it, the supervisor would start it again).
    expect(await eventually(async () => {
      const answer = await ask(routerPort).catch(() => undefined);
      return answer?.status === 200 ? answer : undefined;
    }, 30_000)).toEqual({ status: 200, text: 'hello from the fake endpoint' });
  }, 90_000);

  it('forwards with the new token after each rotation and keeps working', async () => {
    // A token of 10 s replaced at half its lifetime; the old one revoked 1 s later. Each token
    // serves for about 5 s, long enough for a router restart on a loaded machine.
    const { service, routerPort } = await deployedService({
      CLAUDE_CODE_TOKEN_EXPIRY_SECONDS: '10', DEVBOX_TOKEN_ROTATION: '0.5', DEVBOX_TOKEN_REVOKE_GRACE_SECONDS: '1',
    });
    const issuedBefore = fake.tokens.length;
    await eventually(async () => (await routerHealth(service)).listening, 30_000);
    const seen = new Set<string>();
    // Two rotations: each time the replaced token is revoked (the fake refuses it from then on) and the router sends the new one.
    await eventually(async () => {
      const answer = await ask(routerPort).catch(() => ({ status: 0, text: undefined }));
      if (answer.status === 200) seen.add(fake.servingCalls.at(-1)!.authorization!);
      const mine = fake.tokens.slice(issuedBefore);
      const served = mine.slice(0, 3).filter((token) => seen.has(`Bearer ${token.value}`));
      return served.length === 3 && mine.slice(0, 2).every((token) => token.deleted) ? true : undefined;
    }, 70_000, 250);
    const mine = fake.tokens.slice(issuedBefore);
    for (const token of mine.slice(0, 3)) expect(seen.has(`Bearer ${token.value}`)).toBe(true);
    const state = await routerHealth(service);
    expect(state.restarts).toBeGreaterThanOrEqual(2);
    expect(service.lines.some((line) => line.includes('restarting claude-code-router') && line.includes('new access token'))).toBe(true);
    // No token value in the service's log, nor in the router's output.
    const routerOutput = readFileSync(state.log_file, 'utf8');
    for (const token of mine) {
      expect(service.lines.join('\n')).not.toContain(token.value);
      expect(routerOutput).not.toContain(token.value);
    }
  }, 120_000);
});

/** Runs a command to its end; its output (stdout and stderr together) and exit code. */
function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child: ChildProcess = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', (error) => (output += String(error)));
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}
