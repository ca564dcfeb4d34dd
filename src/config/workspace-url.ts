// The workspace's address as one canonical URL: a scheme once (https unless http is given, as a
// local test workspace is), the host and port, no path or trailing slash.

/** `adb-1.azuredatabricks.net`, `https://adb-1.azuredatabricks.net/` → `https://adb-1.azuredatabricks.net`; `http://127.0.0.1:1234` stays http. */
export function workspaceUrl(host: string): string {
  let given = host.trim();
  // A scheme written twice ("https://https://adb-1…") counts once: the last one.
  const schemes = /^(?:[a-z][a-z0-9+.-]*:\/\/)+/i.exec(given)?.[0];
  if (schemes) given = /[a-z][a-z0-9+.-]*:\/\/$/i.exec(schemes)![0] + given.slice(schemes.length);
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(given)) given = `https://${given}`;
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    throw new Error(`"${host}" is not a workspace address: give one such as https://adb-1234567890.12.azuredatabricks.net`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new Error(`"${host}" is not a workspace address: give an https:// one (or http:// for a local test workspace)`);
  }
  if (url.hostname === '' || url.username !== '' || url.password !== '') {
    throw new Error(`"${host}" is not a workspace address: give the host alone, such as https://adb-1234567890.12.azuredatabricks.net`);
  }
  return `${url.protocol}//${url.host}`;
}

/** Where the router sends model requests: the serving endpoint's invocations URL. */
export function servingUrl(host: string, endpoint: string): string {
  return `${workspaceUrl(host)}/serving-endpoints/${encodeURIComponent(endpoint)}/invocations`;
}
