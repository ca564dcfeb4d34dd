// Creating servers: plain (POST /servers), and with a workspace from a git URL or an uploaded ZIP,
// sent with XMLHttpRequest so the upload's progress can be shown (fetch reports none).
import { ApiError, apiUrl, CLIENT_HEADERS, readAnswer, request } from './http.ts';
import type { CreateBody, CreatedServer } from './types.ts';

export type { CreateBody, CreatedServer };

export type WorkspaceSource = { git: string; ref?: string } | { zip: File };

/** How far a create with a workspace is: the upload's bytes, then the service's work. */
export type CreateProgress =
  | { step: 'uploading'; loaded: number; total: number }
  | { step: 'preparing' };

export function createServer(body: CreateBody): Promise<CreatedServer> {
  return request<CreatedServer>('POST', 'servers', body);
}

/**
 * Creates a server whose workspace is filled from a git URL (and branch or tag) or a ZIP, in one
 * request (create-with-workspace): the service answers once the workspace is filled, and keeps
 * no half-made server when the source fails.
 */
export function createWithWorkspace(
  body: CreateBody, source: WorkspaceSource, onProgress?: (progress: CreateProgress) => void, signal?: AbortSignal,
): Promise<CreatedServer> {
  const data = new FormData();
  data.append('name', body.name);
  if (body.extensions?.length) data.append('extensions', JSON.stringify(body.extensions));
  if (body.extension_groups?.length) data.append('extension_groups', JSON.stringify(body.extension_groups));
  if (body.settings && Object.keys(body.settings).length > 0) data.append('settings', JSON.stringify(body.settings));
  if ('git' in source) {
    data.append('github_url', source.git);
    if (source.ref) data.append('git_ref', source.ref);
  } else {
    data.append('zip_file', source.zip, source.zip.name);
  }
  return sendForm<CreatedServer>('servers/create-with-workspace', data, onProgress, signal);
}

/** POSTs a multipart form, reporting upload progress; the answer read as request() reads it. */
function sendForm<T>(path: string, body: FormData, onProgress?: (progress: CreateProgress) => void, signal?: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    if (signal?.aborted) return reject(new ApiError(0, 'ABORTED', 'the upload was cancelled'));
    signal?.addEventListener('abort', () => xhr.abort(), { once: true });
    xhr.open('POST', apiUrl(path));
    xhr.setRequestHeader('Accept', 'application/json');
    for (const [header, value] of Object.entries(CLIENT_HEADERS)) xhr.setRequestHeader(header, value);
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
