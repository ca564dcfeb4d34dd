// The transport every call of the client goes through: URLs relative to the page (so the
// dashboard works under any path prefix), the service's error envelope turned into ApiError.

/** An error the API answered, with its code and its message, which the page shows as is. */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

/** A path of the API (no leading slash: it is taken relative to the page). */
export function apiUrl(path: string): string {
  return new URL(path.replace(/^\//, ''), document.baseURI).toString();
}

/** The WebSocket URL of a path: ws: or wss: as the page is served. */
export function wsUrl(path: string): string {
  const url = new URL(apiUrl(path));
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  return url.toString();
}

/** Reads an answer: JSON on success; the envelope's error (or the status text) as ApiError otherwise. */
export async function readAnswer<T>(response: Response): Promise<T> {
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  if (!response.ok) {
    const error = (body as { error?: { code?: string; message?: string } } | undefined)?.error;
    throw new ApiError(response.status, error?.code ?? `HTTP_${response.status}`, error?.message ?? (text.slice(0, 300) || response.statusText));
  }
  return body as T;
}

/** Says the dashboard made the call, so the audit trail records its changes as through the dashboard. */
export const CLIENT_HEADERS = { 'X-Devbox-Client': 'dashboard' } as const;

export async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  const init: RequestInit = { method, headers: { Accept: 'application/json', ...CLIENT_HEADERS } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { ...init.headers, 'Content-Type': 'application/json' };
  }
  let response: Response;
  try {
    response = await fetch(apiUrl(path), init);
  } catch (error) {
    throw new ApiError(0, 'UNREACHABLE', `the service did not answer (${(error as Error).message}): is it running?`);
  }
  return readAnswer<T>(response);
}
