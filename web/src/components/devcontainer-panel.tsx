// A server page's Dev container panel: what the workspace's devcontainer.json asked for and what
// became of it (status.devcontainer, the record's `devcontainer`): the file and its state, what is
// not honoured here (first, as it is what a person must know), the extensions and whether they are
// installed, the settings (the manifest's own win), the environment's names (never its values:
// they may be secrets), the lifecycle commands and how they ended, the forwarded ports with a link
// each (GET /servers/{id}/ports), the host requirements and the image.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import {
  getPorts, LIFECYCLE_ORDER, waitedFor, whenRun,
  type Devcontainer, type DevcontainerPlan, type ForwardedPortView, type LifecycleName, type LifecycleState,
} from '../api/devcontainer.ts';
import { getManifest } from '../api/servers.ts';
import type { ServerRecord } from '../api/types.ts';
import { formatBytes } from './format.ts';
import { RelativeTime } from './time.tsx';
import './devcontainer-panel.css';

export function DevcontainerPanel({ server }: { server: ServerRecord }) {
  const status = server.devcontainer;
  return (
    <section aria-labelledby="section-devcontainer" class="card devcontainer">
      <h2 id="section-devcontainer">Dev container</h2>
      <Summary status={status} />
      {status?.plan && <PlanDetails server={server} plan={status.plan} lifecycle={status.lifecycle ?? {}} />}
    </section>
  );
}

function Summary({ status }: { status: Devcontainer | null }) {
  if (status === null) {
    return <p class="muted">Not looked for yet: devcontainer.json is read before the editor's first start, or once a workspace source has put its content in.</p>;
  }
  const file = status.plan?.path;
  switch (status.state) {
    case 'ignored':
      return <p><span class="dc-state dc-ignored">Ignored</span> The manifest says <code>spec.devcontainer: ignore</code>: nothing from devcontainer.json is applied.</p>;
    case 'none':
      return <p><span class="dc-state dc-none">None</span> {status.message ?? 'no devcontainer.json in the workspace'}.</p>;
    case 'invalid':
      return (
        <div class="inline-error">
          <p><span class="dc-state dc-invalid">Invalid</span> {file ? <code>{file}</code> : 'devcontainer.json'} could not be read: nothing from it is applied until it is fixed.</p>
          {status.message && <p class="dc-message">{status.message}</p>}
        </div>
      );
    default:
      return (
        <p>
          <span class="dc-state dc-applied">Applied</span> from <code>{file}</code>
          {status.plan && <span class="muted"> (sha256 <abbr title={status.plan.sha256}>{status.plan.sha256.slice(0, 12)}</abbr>)</span>}
        </p>
      );
  }
}

function PlanDetails({ server, plan, lifecycle }: { server: ServerRecord; plan: DevcontainerPlan; lifecycle: NonNullable<Devcontainer['lifecycle']> }) {
  const envNames = [...new Set([...Object.keys(plan.containerEnv), ...Object.keys(plan.remoteEnv)])];
  const steps = LIFECYCLE_ORDER.filter((name) => plan.lifecycle[name] || lifecycle[name]);
  return (
    <>
      {plan.warnings.length > 0 && (
        <div class="dc-warnings" role="group" aria-labelledby="dc-warnings">
          <h3 id="dc-warnings"><span aria-hidden="true">⚠ </span>Not honoured here</h3>
          <ul aria-labelledby="dc-warnings">
            {plan.warnings.map((warning, i) => <li key={i}>{warning}</li>)}
          </ul>
        </div>
      )}

      <Part id="dc-extensions" title="Extensions" empty={plan.extensions.length === 0 && 'None asked for.'}>
        <ExtensionList server={server} ids={plan.extensions} />
      </Part>

      <Part id="dc-settings" title="Settings" empty={Object.keys(plan.settings).length === 0 && 'None set.'}>
        <SettingsList server={server} settings={plan.settings} />
      </Part>

      <Part id="dc-env" title="Environment" empty={envNames.length === 0 && 'No variables set.'}>
        <p class="muted dc-note">Names only: the values may be secrets.</p>
        <ul class="dc-chips" aria-labelledby="dc-env">
          {envNames.map((name) => <li key={name}><code>{name}</code>{plan.remoteEnv[name] === null && <span class="muted"> unset</span>}</li>)}
        </ul>
      </Part>

      <Part id="dc-lifecycle" title="Lifecycle commands" empty={steps.length === 0 && 'None given.'}>
        <div class="table-scroll">
          <table aria-labelledby="dc-lifecycle">
            <thead><tr><th scope="col">Command</th><th scope="col">State</th><th scope="col">Exit code</th><th scope="col">Message</th></tr></thead>
            <tbody>
              {steps.map((name) => <LifecycleRow key={name} name={name} plan={plan} state={lifecycle[name]} />)}
            </tbody>
          </table>
        </div>
      </Part>

      <Part id="dc-ports" title="Forwarded ports" empty={plan.forwardPorts.length === 0 && server.status !== 'running' && 'None declared.'}>
        <PortsTable server={server} plan={plan} />
      </Part>

      {(plan.hostRequirements || plan.image) && (
        <dl class="facts dc-facts">
          {plan.hostRequirements && (
            <div>
              <dt>Host requirements</dt>
              <dd>{hostRequirementsText(plan.hostRequirements)}</dd>
            </div>
          )}
          {plan.image && (
            <div>
              <dt>Image</dt>
              <dd><code class="wrap">{plan.image}</code></dd>
            </div>
          )}
        </dl>
      )}
    </>
  );
}

/** A titled part of the panel (a group named by its heading), or its heading and why it is empty. */
function Part({ id, title, empty, children }: { id: string; title: string; empty: string | false; children: ComponentChildren }) {
  return (
    <div class="dc-part" role="group" aria-labelledby={id}>
      <h3 id={id}>{title}</h3>
      {empty ? <p class="muted dc-note">{empty}</p> : children}
    </div>
  );
}

function ExtensionList({ server, ids }: { server: ServerRecord; ids: string[] }) {
  const states = new Map(server.extension_status.map((e) => [e.id.toLowerCase(), e]));
  const inManifest = new Set(server.extensions.map((id) => id.toLowerCase().replace(/@.*$/, '')));
  return (
    <ul class="dc-rows" aria-labelledby="dc-extensions">
      {ids.map((id) => {
        const bare = id.toLowerCase().replace(/@.*$/, '');
        const state = states.get(bare);
        const word = state?.state ?? 'Pending';
        return (
          <li key={id}>
            <code>{id}</code>
            <span class={`ext ext-${word.toLowerCase()}`}>{word}{state?.version ? ` ${state.version}` : ''}</span>
            {inManifest.has(bare) && <span class="muted">also in the manifest</span>}
            {state?.message && <span class="dc-message">{state.message}</span>}
          </li>
        );
      })}
    </ul>
  );
}

/** The file's settings, each marked where the manifest's spec.settings says otherwise (and wins). */
function SettingsList({ server, settings }: { server: ServerRecord; settings: Record<string, unknown> }) {
  const manifestKeys = useManifestSettingKeys(server.id, server.generation);
  return (
    <ul class="dc-rows" aria-labelledby="dc-settings">
      {Object.entries(settings).map(([key, value]) => {
        const overridden = manifestKeys?.has(key) ?? false;
        return (
          <li key={key} class={overridden ? 'dc-overridden' : undefined}>
            <code>{key}</code>
            <code class="dc-value" title={JSON.stringify(value)}>{shortJson(value)}</code>
            {overridden && <span class="dc-mark">the manifest's value wins</span>}
          </li>
        );
      })}
    </ul>
  );
}

/** The keys of the manifest's spec.settings, from its YAML (the parser is loaded only here), read again when the spec changes. */
function useManifestSettingKeys(id: string, generation: number | null): Set<string> | undefined {
  const [keys, setKeys] = useState<Set<string>>();
  useEffect(() => {
    let current = true;
    Promise.all([getManifest(id), import('yaml')]).then(([text, yaml]) => {
      const manifest = yaml.parse(text) as { spec?: { settings?: Record<string, unknown> } } | null;
      if (current) setKeys(new Set(Object.keys(manifest?.spec?.settings ?? {})));
    }, () => undefined);
    return () => {
      current = false;
    };
  }, [id, generation]);
  return keys;
}

/** When a step runs, and whether the editor waits for it. */
function whenText(name: LifecycleName, waitFor: LifecycleName): string {
  return waitedFor(name, waitFor) ? `${whenRun(name)}, before the editor` : whenRun(name);
}

function LifecycleRow({ name, plan, state }: { name: LifecycleName; plan: DevcontainerPlan; state?: LifecycleState }) {
  const step = plan.lifecycle[name];
  const word = state?.state ?? 'Not run';
  return (
    <tr class={state?.state === 'Failed' ? 'warning' : undefined}>
      <th scope="row">
        <code>{name}</code>
        <span class="dc-when">{whenText(name, plan.waitFor)}</span>
        {step && (
          <ul class="dc-commands">
            {step.commands.map((c, i) => (
              <li key={i}>{c.label && <span class="muted">{c.label}: </span>}<code>{'shell' in c.command ? c.command.shell : c.command.argv.join(' ')}</code></li>
            ))}
          </ul>
        )}
      </th>
      <td class="nowrap">
        <span class={`dc-step dc-step-${word.toLowerCase().replace(/\s+/g, '-')}`}>{word}</span>
        {state?.at && <> <RelativeTime value={state.at} /></>}
      </td>
      <td class="num">{state?.exitCode === undefined ? '—' : state.exitCode === null ? 'none' : state.exitCode}</td>
      <td class="message">{state?.message ?? ''}</td>
    </tr>
  );
}

function PortsTable({ server, plan }: { server: ServerRecord; plan: DevcontainerPlan }) {
  const listed = usePorts(server, plan);
  const running = server.status === 'running' && server.port !== null;
  if (listed.ports.length === 0) return <p class="muted dc-note">None declared, and nothing listens in this editor.</p>;
  return (
    <>
      {listed.error && <p class="muted dc-note">Whether each port is listened on is not known: {listed.error}</p>}
      <div class="table-scroll">
        <table aria-labelledby="dc-ports">
          <thead><tr><th scope="col">Port</th><th scope="col">Label</th><th scope="col">Listening</th><th scope="col">Address</th></tr></thead>
          <tbody>
            {listed.ports.map((p) => (
              <tr key={p.port}>
                <th scope="row" class="num">{p.port}</th>
                <td>
                  {p.label ?? <span class="muted">—</span>}
                  {!p.declared && <span class="muted"> (not declared)</span>}
                  {p.protocol === 'https' && <span class="muted"> https</span>}
                </td>
                <td>{p.listening === undefined ? <span class="muted">not known</span> : p.listening ? <span class="ext ext-installed">listening</span> : <span class="muted">not listening</span>}</td>
                <td>
                  {running ? (
                    <a href={p.url.replace(/^\//, '')} target="_blank" rel="noopener noreferrer">
                      Open<span class="visually-hidden"> port {p.port}</span><span aria-hidden="true"> ↗</span>
                    </a>
                  ) : (
                    <span class="muted">editor not running</span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

/** How often the ports are asked again while the editor runs: a program may start or stop listening at any time. */
const PORTS_POLL_MS = 5000;

/**
 * The ports, from GET /servers/{id}/ports: asked when the server's state changes, and again every
 * few seconds while its editor runs and the page is visible; the plan's own list, with addresses
 * made the proxy's way, while that cannot be read (then it is not asked again until the state changes).
 */
function usePorts(server: ServerRecord, plan: DevcontainerPlan): { ports: ForwardedPortView[]; error?: string } {
  const [state, setState] = useState<{ ports?: ForwardedPortView[]; error?: string }>({});
  const running = server.status === 'running';
  const key = JSON.stringify([server.id, server.status, server.pid, plan.sha256]);
  useEffect(() => {
    let current = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const ask = () => {
      if (document.visibilityState !== 'visible') {
        timer = setTimeout(ask, PORTS_POLL_MS);
        return;
      }
      getPorts(server.id).then(
        (ports) => {
          if (!current) return;
          setState({ ports });
          if (running) timer = setTimeout(ask, PORTS_POLL_MS);
        },
        (error: Error) => current && setState({ error: error.message }),
      );
    };
    ask();
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [key]);
  if (state.ports) return { ports: state.ports };
  const fallback = plan.forwardPorts.map((p) => ({
    ...p, declared: true, listening: undefined, url: `vscode/${server.port}/proxy/${p.port}/`,
  }));
  return { ports: fallback, error: state.error };
}

function shortJson(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}

function hostRequirementsText(h: NonNullable<DevcontainerPlan['hostRequirements']>): string {
  const parts = [
    h.cpus !== undefined ? `${h.cpus} CPU${h.cpus === 1 ? '' : 's'}` : undefined,
    h.memoryBytes !== undefined ? `${formatBytes(h.memoryBytes)} memory` : undefined,
    h.storageBytes !== undefined ? `${formatBytes(h.storageBytes)} storage` : undefined,
  ].filter(Boolean);
  return parts.length > 0 ? parts.join(', ') : '—';
}
