// A 150 MB zip_file against the default 100 MB limit: refused with 413 while the body is still
// arriving when its length is declared; a chunked one is streamed to disk, not held in memory.
import { existsSync, promises as fs } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { eventually, startTestService, type TestService } from '../helpers/service.ts';

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  await service?.stop();
});

it('refuses a 150 MB upload with 413 before it has all arrived, leaving nothing behind', async () => {
  expect(service.settings.config.workspace.maxUploadMb).toBe(100);
  const boundary = 'devbox-test-boundary';
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nHuge\r\n`
    + `--${boundary}\r\nContent-Disposition: form-data; name="zip_file"; filename="huge.zip"\r\nContent-Type: application/zip\r\n\r\n`);
  const total = 150 * 1024 * 1024;
  const chunk = Buffer.alloc(1024 * 1024, 1);
  let sent = 0;
  const { status, body } = await new Promise<{ status: number; body: any }>((resolve, reject) => {
    const url = new URL(service.url);
    const req = request({ host: url.hostname, port: url.port, method: 'POST', path: '/servers/create-with-workspace',
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': head.length + total + boundary.length + 8 } });
    let answered = false;
    req.on('response', (res) => {
      answered = true;
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => {
        req.destroy();
        resolve({ status: res.statusCode!, body: JSON.parse(text) });
      });
    });
    req.on('error', (error) => { if (!answered) reject(error); });
    req.write(head);
    // Past the limit the client stops sending and waits: only an answer given while the body is
    // incomplete lets this test go on (a server waiting for the rest would time it out).
    const pause = 110 * 1024 * 1024;
    const pump = () => {
      while (!answered && sent < pause) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
    };
    pump();
  });
  expect(status).toBe(413);
  expect(body.error.code).toBe('UPLOAD_TOO_LARGE');
  expect(body.error.message).toMatch(/larger than 100 MB/);
  // Answered while the body was still arriving: the client had not written all of it.
  expect(sent).toBeLessThan(total);
  console.log(`413 after ${Math.round(sent / 1024 / 1024)} MB of 150 MB sent`);
  await eventually(async () => !existsSync(join(service.settings.dataDir, 'uploads')) || (await fs.readdir(join(service.settings.dataDir, 'uploads'))).length === 0);
  expect((await fs.readdir(service.settings.manifestsDir)).filter((f) => f.endsWith('.yaml'))).toEqual([]);
  expect((await service.request('GET', '/health')).status).toBe(200);
}, 60_000);

it('streams a chunked upload (no length given) to disk, refusing it past the limit without holding it in memory', async () => {
  const boundary = 'devbox-test-boundary';
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nChunked\r\n`
    + `--${boundary}\r\nContent-Disposition: form-data; name="zip_file"; filename="huge.zip"\r\nContent-Type: application/zip\r\n\r\n`);
  const total = 150 * 1024 * 1024;
  const chunk = Buffer.alloc(1024 * 1024, 1);
  const rssBefore = process.memoryUsage().rss;
  let rssPeak = rssBefore;
  const { status, body } = await new Promise<{ status: number; body: any }>((resolve, reject) => {
    const url = new URL(service.url);
    const req = request({ host: url.hostname, port: url.port, method: 'POST', path: '/servers/create-with-workspace',
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'transfer-encoding': 'chunked' } });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.write(head);
    let sent = 0;
    const pump = () => {
      while (sent < total) {
        sent += chunk.length;
        rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end(`\r\n--${boundary}--\r\n`);
    };
    pump();
  });
  expect(status).toBe(413);
  expect(body.error.code).toBe('UPLOAD_TOO_LARGE');
  console.log(`chunked 150 MB upload: RSS of the test process with the service ${Math.round(rssBefore / 1e6)} → peak ${Math.round(rssPeak / 1e6)} MB`);
  expect(rssPeak - rssBefore).toBeLessThan(60 * 1024 * 1024);
  await eventually(async () => (await fs.readdir(join(service.settings.dataDir, 'uploads'))).length === 0);
  expect((await service.request('GET', '/health')).status).toBe(200);
}, 60_000);
