import crypto from 'node:crypto';
import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { proxyToTarget } from './fixtures.ts';

const TOTAL = 50 * 1024 * 1024;
const CHUNK = crypto.randomBytes(64 * 1024);

describe('streaming large bodies', () => {
  const ctx = proxyToTarget();

  it('streams a 50 MB upload and its echo both ways at once, without holding the body in memory', async () => {
    const sentHash = crypto.createHash('sha256');
    const receivedHash = crypto.createHash('sha256');
    let sent = 0;
    let received = 0;
    let sentWhenEchoBegan = -1;
    let inFlight = 0;

    await new Promise<void>((resolve, reject) => {
      const req = http.request(`${ctx.service.base}/vscode/${ctx.target.port}/echo`, { method: 'POST', agent: false }, (res) => {
        sentWhenEchoBegan = sent;
        res.on('data', (chunk: Buffer) => {
          inFlight = Math.max(inFlight, sent - received);
          received += chunk.length;
          receivedHash.update(chunk);
        });
        res.on('end', resolve);
        res.on('error', reject);
      });
      req.on('error', reject);
      // Honour backpressure, so only the buffers along the way hold data in flight.
      const pump = (): void => {
        while (sent < TOTAL) {
          sent += CHUNK.length;
          sentHash.update(CHUNK);
          if (!req.write(CHUNK)) {
            req.once('drain', pump);
            return;
          }
        }
        req.end();
      };
      pump();
    });

    expect(received).toBe(TOTAL);
    expect(receivedHash.digest('hex')).toBe(sentHash.digest('hex'));
    // The echo reached the client while most of the upload was still to be sent, and what was
    // sent but not yet echoed stayed bounded by socket buffers (about 10 MB on loopback): a proxy
    // that buffered bodies would hold all 50 MB before answering.
    expect(sentWhenEchoBegan).toBeGreaterThan(0);
    expect(sentWhenEchoBegan).toBeLessThan(TOTAL / 2);
    expect(inFlight).toBeLessThan(TOTAL / 2);
  });
});
