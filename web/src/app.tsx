// The shell: header (product name, the watch stream's state), navigation, notifications, and the
// view the URL's hash names. Views are chosen by hash so the page needs no server-side routes and
// works under any path prefix.
import { useEffect, useRef, useState } from 'preact/hooks';
import { dismiss, subscribeNotices, type Notice } from './notify.ts';
import { useServers } from './store.ts';
import { HealthView } from './views/health.tsx';
import { LogsView } from './views/logs.tsx';
import { ServerPage } from './views/server-page.tsx';
import { ServersView } from './views/servers.tsx';
import { TemplatesView } from './views/templates.tsx';

type Route =
  | { view: 'servers' }
  | { view: 'server'; id: string }
  | { view: 'templates' }
  | { view: 'logs'; id?: string }
  | { view: 'health' }
  | { view: 'missing'; path: string };

export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, '').replace(/\/+$/, '') || '/';
  const parts = path.split('/').filter(Boolean).map((p) => {
    try {
      return decodeURIComponent(p);
    } catch {
      return p;
    }
  });
  if (parts.length === 0 || (parts.length === 1 && parts[0] === 'servers')) return { view: 'servers' };
  if (parts[0] === 'servers' && parts.length === 2) return { view: 'server', id: parts[1]! };
  if (parts[0] === 'templates' && parts.length === 1) return { view: 'templates' };
  if (parts[0] === 'logs' && parts.length <= 2) return { view: 'logs', id: parts[1] };
  if (parts[0] === 'health' && parts.length === 1) return { view: 'health' };
  return { view: 'missing', path };
}

const NAV = [
  { href: '#/', label: 'Servers', views: ['servers', 'server'] },
  { href: '#/templates', label: 'Templates', views: ['templates'] },
  { href: '#/logs', label: 'Logs', views: ['logs'] },
  { href: '#/health', label: 'Health', views: ['health'] },
];

export function App() {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  const main = useRef<HTMLElement>(null);
  useEffect(() => {
    const onHash = () => {
      setRoute(parseRoute(location.hash));
      // A new view: its heading takes focus, as a page load would put a reader at the top.
      requestAnimationFrame(() => main.current?.querySelector<HTMLElement>('h1')?.focus({ preventScroll: false }));
    };
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);

  return (
    <>
      <a class="skip-link" href="#main" onClick={(e) => { e.preventDefault(); main.current?.focus(); }}>Skip to content</a>
      <header class="app-header">
        <a class="brand" href="#/">
          <span class="brand-mark" aria-hidden="true">⌘</span>devbox-controller
        </a>
        <nav aria-label="Primary">
          <ul>
            {NAV.map((item) => (
              <li key={item.href}>
                <a href={item.href} aria-current={item.views.includes(route.view) ? 'page' : undefined}>{item.label}</a>
              </li>
            ))}
          </ul>
        </nav>
        <LiveIndicator />
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        <View route={route} />
      </main>
      <Notifications />
    </>
  );
}

function View({ route }: { route: Route }) {
  switch (route.view) {
    case 'servers': return <ServersView />;
    case 'server': return <ServerPage key={route.id} id={route.id} />;
    case 'templates': return <TemplatesView />;
    case 'logs': return <LogsView key={route.id ?? ''} serverId={route.id} />;
    case 'health': return <HealthView />;
    case 'missing':
      return (
        <div class="empty">
          <h1 tabIndex={-1}>Page not found</h1>
          <p>Nothing is at <code>#{route.path}</code>.</p>
          <p><a href="#/">Go to the servers</a></p>
        </div>
      );
  }
}

/** "Live" while the watch stream is connected; "Reconnecting…" while it is not. */
function LiveIndicator() {
  const { connection } = useServers();
  const text = connection === 'live' ? 'Live' : connection === 'connecting' ? 'Connecting…' : 'Reconnecting…';
  const title = connection === 'live'
    ? 'Changes to the servers show here as they happen'
    : 'The live connection to the service is down: the table may be out of date until it is back';
  return (
    <span class={`live live-${connection}`} title={title}>
      <span class="live-dot" aria-hidden="true" />
      {text}
    </span>
  );
}

/** Successes in the polite `Notifications` status region; errors as alerts, kept until dismissed. */
function Notifications() {
  const [notices, setNotices] = useState<Notice[]>([]);
  useEffect(() => subscribeNotices(setNotices), []);
  const messages = notices.filter((n) => n.kind !== 'error');
  const errors = notices.filter((n) => n.kind === 'error');
  return (
    <div class="notices">
      <div role="status" aria-label="Notifications" aria-live="polite" class="notice-list">
        {messages.map((n) => (
          <div key={n.id} class={`notice notice-${n.kind}`}>
            <span aria-hidden="true" class="notice-mark">{n.kind === 'success' ? '✓' : 'ℹ'}</span>
            <span class="notice-text">{n.text}</span>
            <button type="button" class="icon" onClick={() => dismiss(n.id)} aria-label="Dismiss">×</button>
          </div>
        ))}
      </div>
      <div class="notice-list">
        {errors.map((n) => (
          <div key={n.id} role="alert" class="notice notice-error">
            <span aria-hidden="true" class="notice-mark">!</span>
            <span class="notice-text">{n.text}</span>
            <button type="button" class="icon" onClick={() => dismiss(n.id)} aria-label="Dismiss">×</button>
          </div>
        ))}
      </div>
    </div>
  );
}
