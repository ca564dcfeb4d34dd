// Serves the repositories under a folder over smart HTTP on loopback, through `git http-backend`
// run as a CGI program, behind HTTP basic authentication: to test URLs that carry a token.
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';

export interface GitHttpServer { url(name: string, credentials?: string): string; stop(): Promise<void> }

/** `git http-backend` for every repository under base; requests must carry `user:password`. */
export async function serveGitHttp(base: string, userPassword: string): Promise<GitHttpServer> {
  const expected = `Basic ${Buffer.from(userPassword).toString('base64')}`;
  const server: Server = createServer((req, res) => {
    if (req.headers.authorization !== expected) {
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="test"' }).end();
      return;
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    const cgi = spawn('git', ['http-backend'], {
      env: {
        PATH: process.env.PATH, GIT_PROJECT_ROOT: base, GIT_HTTP_EXPORT_ALL: '1', REMOTE_USER: userPassword.split(':')[0],
        REQUEST_METHOD: req.method, PATH_INFO: decodeURIComponent(url.pathname), QUERY_STRING: url.search.slice(1),
        CONTENT_TYPE: req.headers['content-type'] ?? '', ...(req.headers['git-protocol'] ? { GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
      },
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    req.pipe(cgi.stdin);
    // CGI output: headers, a blank line, the body.
    let head = Buffer.alloc(0);
    let streaming = false;
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (streaming) return void res.write(chunk);
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      let status = 200;
      for (const line of head.subarray(0, end).toString().split('\r\n')) {
        const colon = line.indexOf(':');
        const [key, value] = [line.slice(0, colon), line.slice(colon + 1).trim()];
        if (key.toLowerCase() === 'status') status = Number(value.split(' ')[0]);
        else res.setHeader(key, value);
      }
      res.writeHead(status);
      res.write(head.subarray(end + 4));
      streaming = true;
    });
    cgi.on('close', () => res.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: (name, credentials) => `http://${credentials ? `${credentials}@` : ''}127.0.0.1:${port}/${name}`,
    async stop() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
