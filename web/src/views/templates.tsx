// The template gallery: one tab per gallery tab of GET /templates, each template a card, and a
// `Create from {name}` dialog that makes a server from it and opens that server's page.
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { Dialog } from '../components/dialog.tsx';
import { createFromTemplate, listTemplates, type TemplateGallery, type TemplateItem } from '../api/templates.ts';
import { useServers } from '../store.ts';
import { announceCreated, busyLabel, FormError, messageOf, type Busy } from './create-dialog.tsx';
import './create-dialog.css';
import './templates.css';

export function TemplatesView() {
  const [gallery, setGallery] = useState<TemplateGallery | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [loading, setLoading] = useState(true);
  const [using, setUsing] = useState<TemplateItem | undefined>();

  function load() {
    setLoading(true);
    listTemplates().then(
      (g) => { setGallery(g); setError(undefined); setLoading(false); },
      (e) => { setError(messageOf(e)); setLoading(false); },
    );
  }
  useEffect(load, []);

  const count = gallery?.tabs.reduce((n, tab) => n + tab.items.length, 0) ?? 0;
  return (
    <section class="templates-view" aria-busy={loading}>
      <div class="view-head">
        <h1 tabIndex={-1}>Templates</h1>
        <button type="button" onClick={load} disabled={loading}>{loading ? 'Loading…' : 'Reload templates'}</button>
      </div>
      {error && <p role="alert" class="tpl-error">The templates could not be read (GET /templates): {error}</p>}
      {gallery && gallery.errors.length > 0 && (
        <section class="tpl-problems" aria-labelledby="tpl-problems-h">
          <h2 id="tpl-problems-h">Template problems</h2>
          <p>These files in the templates folder are invalid and left out of the gallery until they are fixed:</p>
          <ul>
            {gallery.errors.map((p, i) => (
              <li key={i}><code>{p.file}{p.line !== null ? `:${p.line}` : ''}{p.column !== null ? `:${p.column}` : ''}</code> {p.problem}</li>
            ))}
          </ul>
        </section>
      )}
      {gallery && count === 0 && (
        <div class="empty">
          <p class="empty-title">No templates yet</p>
          <p>
            A template is one <code>EditorServerTemplate</code> YAML file in the service's templates folder
            (<code>./templates</code>, or the folder <code>DEVBOX_TEMPLATES_DIR</code> names; see templates/README.md
            in the project). The service watches the folder: add a file, then reload this list.
          </p>
        </div>
      )}
      {gallery && count > 0 && <Gallery gallery={gallery} onUse={setUsing} />}
      <CreateFromTemplateDialog template={using} onClose={() => setUsing(undefined)} />
    </section>
  );
}

function Gallery({ gallery, onUse }: { gallery: TemplateGallery; onUse: (t: TemplateItem) => void }) {
  const id = useId();
  const tabs = gallery.tabs;
  const [selected, setSelected] = useState(0);
  const tabRefs = useRef<(HTMLButtonElement | null)[]>([]);
  const index = Math.min(selected, tabs.length - 1);

  // WAI-ARIA tabs with automatic activation: arrows move and select, Home and End go to the ends.
  function onKeyDown(event: KeyboardEvent) {
    const moves: Record<string, number> = { ArrowRight: index + 1, ArrowLeft: index - 1, Home: 0, End: tabs.length - 1 };
    if (!(event.key in moves)) return;
    event.preventDefault();
    const next = (moves[event.key] + tabs.length) % tabs.length;
    setSelected(next);
    tabRefs.current[next]?.focus();
  }

  const tab = tabs[index];
  return (
    <>
      <div role="tablist" aria-label="Template categories" class="tpl-tabs" onKeyDown={onKeyDown}>
        {tabs.map((t, i) => (
          <button
            key={t.name} type="button" role="tab" id={`${id}-tab-${i}`} aria-controls={`${id}-panel`}
            aria-selected={i === index} tabIndex={i === index ? 0 : -1}
            ref={(el) => { tabRefs.current[i] = el; }} onClick={() => setSelected(i)}
          >
            {t.name} <span class="tpl-count" aria-hidden="true">{t.items.length}</span>
          </button>
        ))}
      </div>
      <div role="tabpanel" id={`${id}-panel`} aria-labelledby={`${id}-tab-${index}`} class="tpl-grid">
        {tab.items.map((item) => <TemplateCard key={item.id} item={item} onUse={onUse} />)}
      </div>
    </>
  );
}

/** Only pictures the service itself serves: the page makes no request leaving it. */
function sameOrigin(url: string | null): string | undefined {
  if (!url) return undefined;
  try {
    const resolved = new URL(url, document.baseURI);
    if (resolved.protocol === 'data:') return resolved.href;
    return resolved.origin === location.origin ? resolved.href : undefined;
  } catch {
    return undefined;
  }
}

function TemplateCard({ item, onUse }: { item: TemplateItem; onUse: (t: TemplateItem) => void }) {
  const id = useId();
  const [broken, setBroken] = useState(false);
  const thumbnail = broken ? undefined : sameOrigin(item.thumbnail_url);
  const source = item.workspace_source;
  return (
    <article class="tpl-card" aria-labelledby={`${id}-h`}>
      {thumbnail
        ? <img class="tpl-thumb" src={thumbnail} alt="" loading="lazy" onError={() => setBroken(true)} />
        : <div class="tpl-thumb placeholder" aria-hidden="true">{item.name.slice(0, 1).toUpperCase()}</div>}
      <div class="tpl-body">
        <h2 id={`${id}-h`}>{item.name}</h2>
        {item.description ? <p class="tpl-desc">{item.description}</p> : <p class="tpl-desc muted">No description.</p>}
        <dl class="tpl-facts">
          <div><dt>Extension groups</dt> <dd>{item.extension_groups.length ? item.extension_groups.join(', ') : 'none'}</dd></div>
          {item.extensions.length > 0 && <div><dt>Extensions</dt> <dd>{item.extensions.join(', ')}</dd></div>}
          <div>
            <dt>Workspace</dt>{' '}
            <dd class="tpl-source">
              {source === null ? 'empty'
                : source.type === 'git' ? `git ${source.url}${source.ref ? ` (${source.ref})` : ''}`
                : `archive ${source.path}`}
            </dd>
          </div>
          <div><dt>Version</dt> <dd><code>{item.version}</code></dd></div>
        </dl>
        <div class="tpl-actions">
          <button type="button" class="primary" onClick={() => onUse(item)}>Use {item.name}</button>
        </div>
      </div>
    </article>
  );
}

function CreateFromTemplateDialog({ template, onClose }: { template: TemplateItem | undefined; onClose: () => void }) {
  return (
    <Dialog title={template ? `Create from ${template.name}` : 'Create from a template'} open={template !== undefined} onClose={onClose}>
      {template && <FromTemplateForm template={template} onClose={onClose} />}
    </Dialog>
  );
}

/** A name no server has yet: the template's name, else with 2, 3 … after it. */
function suggestName(base: string, taken: Set<string>): string {
  if (!taken.has(base.toLowerCase())) return base;
  for (let n = 2; ; n++) if (!taken.has(`${base} ${n}`.toLowerCase())) return `${base} ${n}`;
}

function FromTemplateForm({ template, onClose }: { template: TemplateItem; onClose: () => void }) {
  const id = useId();
  const { servers } = useServers();
  const [name, setName] = useState(() => suggestName(template.name, new Set([...servers.values()].map((s) => s.name.toLowerCase()))));
  const [start, setStart] = useState(false);
  const [busy, setBusy] = useState<Busy | undefined>();
  const [error, setError] = useState<string | undefined>();
  const nameRef = useRef<HTMLInputElement>(null);

  async function submit(event: Event) {
    event.preventDefault();
    if (busy) return;
    if (!name.trim()) {
      setError('Name: give the server a name.');
      nameRef.current?.focus();
      return;
    }
    setError(undefined);
    setBusy({ step: 'creating' });
    try {
      const created = await createFromTemplate({ name: name.trim(), templateId: template.id, tabName: template.tab });
      await announceCreated(created, start, () => setBusy({ step: 'starting' }));
      onClose();
      location.hash = `#/servers/${encodeURIComponent(created.id)}`;
    } catch (e) {
      setBusy(undefined);
      setError(messageOf(e));
    }
  }

  return (
    <form class="create-form" onSubmit={submit} noValidate>
      <p class="hint">{template.description}</p>
      <div class="field">
        <label for={`${id}-name`}>Name</label>
        <input id={`${id}-name`} ref={nameRef} type="text" autoFocus autoComplete="off" maxLength={100} aria-required="true"
          value={name} onInput={(e) => setName(e.currentTarget.value)}
          onFocus={(e) => e.currentTarget.select()}
          {...(error?.startsWith('Name:') ? { 'aria-invalid': true, 'aria-describedby': `${id}-error` } : {})} />
      </div>
      <div class="field check">
        <input type="checkbox" id={`${id}-start`} checked={start} onChange={(e) => setStart(e.currentTarget.checked)} />
        <label for={`${id}-start`}>Start when created</label>
      </div>
      {error && <FormError id={`${id}-error`} message={error} />}
      <div class="actions">
        <button type="button" onClick={onClose}>Cancel</button>
        <button type="submit" class="primary" disabled={busy !== undefined} aria-busy={busy !== undefined}>
          {busy ? busyLabel(busy) : 'Create'}
        </button>
      </div>
    </form>
  );
}
