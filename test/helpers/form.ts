// Multipart requests as a browser's form sends them, for the routes that take uploads.

/** POSTs text fields (and a ZIP as zip_file) to url as multipart/form-data; the answer parsed as JSON. */
export async function postForm(url: string, fields: Record<string, string>, zip?: Buffer): Promise<{ status: number; body: any }> {
  const form = new FormData();
  for (const [key, value] of Object.entries(fields)) form.append(key, value);
  if (zip) form.append('zip_file', new Blob([zip]), 'project.zip');
  const res = await fetch(url, { method: 'POST', body: form });
  return { status: res.status, body: await res.json() };
}
