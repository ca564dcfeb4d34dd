// Creating servers: plain (POST /servers), and with a workspace from a git URL or an uploaded ZIP,
// sent with XMLHttpRequest so the upload's progress can be shown (fetch reports none).
import { ApiError, apiUrl, readAnswer, request } from './http.ts';
import { deleteServer } from './servers.ts';
import type { StatusWord } from './types.ts';

/** What the create routes answer. */
export interface CreatedServer {
  id: string;
  name: string;
  port: number | null;
  workspace_path: string | null;
  extensions?: string[];
  status: StatusWord;
  pid?: number | null;
}

/** The body of POST /servers (schemas/api/create-server.schema.json). */
export interface CreateBody {
  name: string;
  extensions?: string[];
  extension_groups?: string[];
  restart_policy?: 'Never' | 'OnFailure' | 'Always';
  settings?: Record<string, unknown>;
}

export type WorkspaceSource = { git: string } | { zip: File };

/** How far a create with a workspace is: the upload's bytes, then the service's work. */
export type CreateProgress =
  | { step: 'creating' }
  | { step: 'uploading'; loaded: number; total: number }
  | { step: 'preparing' };

export function createServer(body: CreateBody): Promise<CreatedServer> {
  return request<CreatedServer>('POST', 'servers', body);
}

/**
 * Creates a server whose workspace is filled from a git URL or a ZIP. The service's one-step
 * route (create-with-workspace) takes only the name and extension ids; with extension groups or
 * settings the server is created by POST /servers and then given the source by clone-workspace,
 * and deleted again if that fails, so no half-made server is left either way.
 */
export async function createWithWorkspace(
  body: CreateBody, source: WorkspaceSource, onProgress?: (progress: CreateProgress) => void, signal?: AbortSignal,
): Promise<CreatedServer> {
  const form = (fields: Record<string, string>) => {
    const data = new FormData();
    for (const [key, value] of Object.entries(fields)) data.append(key, value);
    if ('git' in source) data.append('github_url', source.git);
    else data.append('zip_file', source.zip, source.zip.name);
    return data;
  };
  const simple = !body.extension_groups?.length && (!body.settings || Object.keys(body.settings).length === 0) && !body.restart_policy;
  if (simple) {
    const fields: Record<string, string> = { name: body.name };
    if (body.extensions?.length) fields.extensions = JSON.stringify(body.extensions);
    return sendForm<CreatedServer>('servers/create-with-workspace', form(fields), onProgress, signal);
  }
  onProgress?.({ step: 'creating' });
  const created = await createServer(body);
  try {
    const cloned = await sendForm<{ workspace_path?: string }>(`servers/${encodeURIComponent(created.id)}/clone-workspace`, form({}), onProgress, signal);
    return { ...created, workspace_path: cloned.workspace_path ?? created.workspace_path };
  } catch (error) {
    await deleteServer(created.id).catch(() => undefined);
    if (error instanceof ApiError && error.code !== 'ABORTED') {
      // The service keeps the server without a source; this create deletes it, so say that instead.
      const message = error.message.replace(/;\s*the server is kept without a source: fix the source and try again$/, '');
      throw new ApiError(error.status, error.code, `${message}; the server "${created.name}" was not kept: fix the source and create it again`);
    }
    throw error;
  }
}

/** POSTs a multipart form, reporting upload progress; the answer read as request() reads it. */
function sendForm<T>(path: string, body: FormData, onProgress?: (progress: CreateProgress) => void, signal?: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    if (signal?.aborted) return reject(new ApiError(0, 'ABORTED', 'the upload was cancelled'));
    signal?.addEventListener('abort', () => xhr.abort(), { once: true });
    xhr.open('POST', apiUrl(path));
    xhr.setRequestHeader('Accept', 'application/json');
    xhr.upload.onprogress = (event) => {
      if (event.lengthComputable) onProgress?.({ step: 'uploading', loaded: event.loaded, total: event.total });
    };
    // The bytes are sent; the service now clones or extracts before it answers.
    xhr.upload.onload = () => onProgress?.({ step: 'preparing' });
    xhr.onload = () => {
      const response = new Response(xhr.status === 204 ? null : xhr.responseText, { status: xhr.status, statusText: xhr.statusText });
      readAnswer<T>(response).then(resolve, reject);
    };
    xhr.onerror = () => reject(new ApiError(0, 'UNREACHABLE', 'the upload was cut off before the service answered: is the file larger than the service accepts, or is the service down?'));
    xhr.onabort = () => reject(new ApiError(0, 'ABORTED', 'the upload was cancelled'));
    onProgress?.({ step: 'uploading', loaded: 0, total: 0 });
    xhr.send(body);
  });
}
