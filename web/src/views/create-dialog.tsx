// The `New server` dialog: name, extension groups (from GET /config), extensions, settings, a
// workspace (empty, a git repository or an uploaded ZIP, with the upload's progress), and whether
// to start it. Errors of the API stay in the dialog with what was typed.
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { Dialog } from '../components/dialog.tsx';
import { getConfig, type ServiceConfig } from '../api/config.ts';
import { startServer } from '../api/servers.ts';
import { createServer, createWithWorkspace, type CreateBody, type CreatedServer, type CreateProgress, type WorkspaceSource } from '../api/create.ts';
import { ApiError } from '../api/http.ts';
import { notify, notifyError } from '../notify.ts';
import './create-dialog.css';

const EXTENSION_ID = /^[A-Za-z0-9][A-Za-z0-9-]*\.[A-Za-z0-9][A-Za-z0-9._-]*(@[0-9A-Za-z.+-]+)?$/;

/** What a create is doing, for the Create button's label and the progress bar. */
export type Busy = { step: 'creating' } | { step: 'uploading'; percent: number } | { step: 'preparing' } | { step: 'starting' };

export function busyLabel(busy: Busy): string {
  switch (busy.step) {
    case 'creating': return 'Creating…';
    case 'uploading': return `Uploading ${busy.percent} %`;
    case 'preparing': return 'Preparing workspace…';
    case 'starting': return 'Starting…';
  }
}

/**
 * After a create: says so, and starts the server when asked. A start that fails is reported on
 * its own (the server exists, so the dialog's job is done).
 */
export async function announceCreated(created: CreatedServer, start: boolean, onStarting: () => void): Promise<void> {
  notify(`Created ${created.name}`);
  if (!start) return;
  onStarting();
  try {
    const answer = await startServer(created.id);
    // 202: still starting when the service stopped waiting; its message says so.
    if (answer.data.status === 'running') notify(`Started ${created.name}`);
    else notify(answer.message, 'info');
  } catch (error) {
    notifyError(error, `Start ${created.name}`);
  }
}

export function messageOf(error: unknown): string {
  return error instanceof ApiError || error instanceof Error ? error.message : String(error);
}

/** The dialog's error, by its buttons where the reader is, scrolled into view. */
export function FormError({ id, message }: { id: string; message: string }) {
  const ref = useRef<HTMLParagraphElement>(null);
  useEffect(() => ref.current?.scrollIntoView({ block: 'nearest' }), [message]);
  return <p id={id} ref={ref} role="alert" class="form-error">{message}</p>;
}

export function CreateServerDialog(props: { open: boolean; onClose: () => void }) {
  return (
    <Dialog title="New server" open={props.open} onClose={props.onClose}>
      <CreateServerForm onClose={props.onClose} />
    </Dialog>
  );
}

type Workspace = 'empty' | 'git' | 'zip';
type Field = 'name' | 'extensions' | 'settings' | 'gitUrl' | 'gitRef' | 'zip';

/** The form; mounted while the dialog is open, so each opening starts blank. */
function CreateServerForm({ onClose }: { onClose: () => void }) {
  const id = useId();
  const [config, setConfig] = useState<ServiceConfig | undefined>();
  const [configError, setConfigError] = useState<string | undefined>();
  const [name, setName] = useState('');
  const [groups, setGroups] = useState<string[] | undefined>(); // undefined: the config's defaults
  const [extensions, setExtensions] = useState('');
  const [settings, setSettings] = useState('');
  const [workspace, setWorkspace] = useState<Workspace>('empty');
  const [gitUrl, setGitUrl] = useState('');
  const [gitRef, setGitRef] = useState('');
  const [zip, setZip] = useState<File | undefined>();
  const [start, setStart] = useState(false);
  const [busy, setBusy] = useState<Busy | undefined>();
  const [error, setError] = useState<{ message: string; field?: Field } | undefined>();
  const abort = useRef<AbortController | undefined>(undefined);
  const fields = useRef<Partial<Record<Field, HTMLElement | null>>>({});

  useEffect(() => {
    let live = true;
    getConfig().then(
      (answer) => live && setConfig(answer.data),
      (e) => live && setConfigError(`The extension groups could not be read (GET /config): ${messageOf(e)}`),
    );
    return () => { live = false; };
  }, []);

  const groupNames = config ? Object.keys(config.extension_groups) : [];
  const chosenGroups = groups ?? (config?.ui.default_extension_groups ?? []).filter((g) => groupNames.includes(g));
  const maxUploadMb = config?.ui.max_upload_mb ?? config?.server.max_upload_mb;

  function toggleGroup(group: string, on: boolean) {
    const next = chosenGroups.filter((g) => g !== group);
    setGroups(on ? [...next, group] : next);
  }

  /** The request, checked here first so the message can say which field to fix. */
  function build(): { body: CreateBody; source?: WorkspaceSource } | { message: string; field: Field } {
    const trimmed = name.trim();
    if (!trimmed) return { field: 'name', message: 'Name: give the server a name.' };
    const ids = [...new Set(extensions.split(/[\s,]+/).filter(Boolean))];
    const bad = ids.filter((x) => !EXTENSION_ID.test(x));
    if (bad.length) return { field: 'extensions', message: `Extensions: ${bad.map((b) => `"${b}"`).join(', ')} ${bad.length === 1 ? 'is not an extension id' : 'are not extension ids'}: write publisher.name, optionally @version, such as ms-python.python.` };
    let parsedSettings: Record<string, unknown> | undefined;
    if (settings.trim()) {
      let value: unknown;
      try {
        value = JSON.parse(settings);
      } catch (e) {
        return { field: 'settings', message: `Settings (JSON) is not valid JSON: ${(e as Error).message}.` };
      }
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        return { field: 'settings', message: 'Settings (JSON) must be a JSON object of editor settings, such as {"editor.fontSize": 14}.' };
      }
      parsedSettings = value as Record<string, unknown>;
    }
    const body: CreateBody = {
      name: trimmed,
      ...(ids.length ? { extensions: ids } : {}),
      ...(chosenGroups.length ? { extension_groups: chosenGroups } : {}),
      ...(parsedSettings ? { settings: parsedSettings } : {}),
    };
    if (workspace === 'git') {
      if (!gitUrl.trim()) return { field: 'gitUrl', message: 'Git URL: give the repository to clone, such as https://github.com/owner/repo.git.' };
      return { body, source: { git: gitUrl.trim(), ...(gitRef.trim() ? { ref: gitRef.trim() } : {}) } };
    }
    if (workspace === 'zip') {
      if (!zip) return { field: 'zip', message: 'ZIP file: choose a .zip archive to upload.' };
      if (maxUploadMb !== undefined && zip.size > maxUploadMb * 1024 * 1024) {
        return { field: 'zip', message: `ZIP file: ${zip.name} is ${(zip.size / 1024 / 1024).toFixed(1)} MB, more than the service accepts (${maxUploadMb} MB, workspace.maxUploadMb in its config).` };
      }
      return { body, source: { zip } };
    }
    return { body };
  }

  async function submit(event: Event) {
    event.preventDefault();
    if (busy) return;
    const built = build();
    if ('message' in built) {
      setError(built);
      fields.current[built.field]?.focus();
      return;
    }
    setError(undefined);
    setBusy({ step: 'creating' });
    let created: CreatedServer;
    try {
      if (built.source) {
        abort.current = new AbortController();
        created = await createWithWorkspace(built.body, built.source, (p: CreateProgress) => setBusy(
          p.step === 'uploading' ? { step: 'uploading', percent: p.total ? Math.floor((p.loaded / p.total) * 100) : 0 } : p,
        ), abort.current.signal);
      } else {
        created = await createServer(built.body);
      }
    } catch (e) {
      setBusy(undefined);
      if (e instanceof ApiError && e.code === 'ABORTED') return;
      setError({ message: messageOf(e) });
      return;
    } finally {
      abort.current = undefined;
    }
    await announceCreated(created, start, () => setBusy({ step: 'starting' }));
    onClose();
  }

  function cancel() {
    abort.current?.abort();
    onClose();
  }

  const invalid = (field: Field) => (error?.field === field ? { 'aria-invalid': true as const, 'aria-describedby': `${id}-error` } : {});
  const ref = (field: Field) => (el: HTMLElement | null) => { fields.current[field] = el; };

  return (
    <form class="create-form" onSubmit={submit} noValidate>
      <div class="field">
        <label for={`${id}-name`}>Name</label>
        <input id={`${id}-name`} ref={ref('name')} type="text" autoFocus autoComplete="off" maxLength={100} aria-required="true"
          value={name} onInput={(e) => setName(e.currentTarget.value)} {...invalid('name')} />
      </div>

      <fieldset class="groups">
        <legend>Extension groups</legend>
        {configError && <p class="hint warn">{configError}</p>}
        {!config && !configError && <p class="hint">Loading the extension groups…</p>}
        {config && groupNames.length === 0 && <p class="hint">The config defines no extension groups (extensionGroups in its file).</p>}
        {config && groupNames.map((group) => {
          const info = config.extension_groups[group];
          return (
            <div class="group" key={group}>
              <input type="checkbox" id={`${id}-g-${group}`} checked={chosenGroups.includes(group)} aria-describedby={`${id}-gd-${group}`}
                onChange={(e) => toggleGroup(group, e.currentTarget.checked)} />
              <label for={`${id}-g-${group}`}>{group}</label>
              <span id={`${id}-gd-${group}`} class="hint">
                {info.description && <>{info.description}<br /></>}
                <span class="ids">{info.extensions.length ? info.extensions.join(', ') : 'no extensions'}</span>
              </span>
            </div>
          );
        })}
      </fieldset>

      <div class="field">
        <label for={`${id}-ext`}>Extensions</label>
        <textarea id={`${id}-ext`} ref={ref('extensions')} rows={2} spellcheck={false} placeholder="ms-python.python, esbenp.prettier-vscode"
          aria-describedby={`${id}-ext-hint`} value={extensions} onInput={(e) => setExtensions(e.currentTarget.value)} {...invalid('extensions')} />
        <span id={`${id}-ext-hint`} class="hint">Extension ids (publisher.name), one per line or comma separated, besides the groups'.</span>
      </div>

      <div class="field">
        <label for={`${id}-settings`}>Settings (JSON)</label>
        <textarea id={`${id}-settings`} ref={ref('settings')} rows={2} spellcheck={false} class="mono" placeholder='{"editor.fontSize": 14}'
          aria-describedby={`${id}-settings-hint`} value={settings} onInput={(e) => setSettings(e.currentTarget.value)} {...invalid('settings')} />
        <span id={`${id}-settings-hint`} class="hint">Editor user settings as a JSON object; leave empty for none.</span>
      </div>

      <div class="field">
        <span id={`${id}-ws`} class="label">Workspace</span>
        <div role="radiogroup" aria-labelledby={`${id}-ws`} class="radios">
          {([['empty', 'Empty'], ['git', 'Git repository'], ['zip', 'ZIP upload']] as const).map(([value, label]) => (
            <label key={value}>
              <input type="radio" name={`${id}-workspace`} value={value} checked={workspace === value} onChange={() => setWorkspace(value)} />
              {label}
            </label>
          ))}
        </div>
      </div>

      {workspace === 'git' && (
        <div class="field-row">
          <div class="field grow">
            <label for={`${id}-git`}>Git URL</label>
            <input id={`${id}-git`} ref={ref('gitUrl')} type="text" inputMode="url" autoComplete="off" spellcheck={false}
              placeholder="https://github.com/owner/repo.git" value={gitUrl} onInput={(e) => setGitUrl(e.currentTarget.value)} {...invalid('gitUrl')} />
          </div>
          <div class="field">
            <label for={`${id}-ref`}>Git ref</label>
            <input id={`${id}-ref`} ref={ref('gitRef')} type="text" autoComplete="off" spellcheck={false} placeholder="default branch"
              value={gitRef} onInput={(e) => setGitRef(e.currentTarget.value)} {...invalid('gitRef')} />
          </div>
        </div>
      )}

      {workspace === 'zip' && (
        <div class="field">
          <label for={`${id}-zip`}>ZIP file</label>
          <input id={`${id}-zip`} ref={ref('zip')} type="file" accept=".zip,application/zip" aria-describedby={`${id}-zip-hint`}
            onChange={(e) => setZip(e.currentTarget.files?.[0])} {...invalid('zip')} />
          <span id={`${id}-zip-hint`} class="hint">Its files become the workspace{maxUploadMb !== undefined ? ` (at most ${maxUploadMb} MB)` : ''}.</span>
          {busy?.step === 'uploading' && (
            <div class="upload">
              <progress max={100} value={busy.percent} aria-label="Upload progress" aria-valuetext={`${busy.percent} %`} />
              <span aria-hidden="true">{busy.percent} %</span>
            </div>
          )}
        </div>
      )}

      <div class="field check">
        <input type="checkbox" id={`${id}-start`} checked={start} onChange={(e) => setStart(e.currentTarget.checked)} />
        <label for={`${id}-start`}>Start when created</label>
      </div>

      {error && <FormError id={`${id}-error`} message={error.message} />}
      <div class="actions">
        <button type="button" onClick={cancel}>Cancel</button>
        <button type="submit" class="primary" disabled={busy !== undefined} aria-busy={busy !== undefined}>
          {busy ? busyLabel(busy) : 'Create'}
        </button>
      </div>
    </form>
  );
}
