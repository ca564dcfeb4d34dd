// sha256 of file contents. Buffers of 256 kB and more are hashed on libuv's thread pool
// (WebCrypto's digest), beside the reading and writing, without stalling the event loop that
// serves the editors; smaller ones inline, where WebCrypto's per-call cost exceeds the hashing.
import { createHash, webcrypto } from 'node:crypto';

const INLINE_BELOW = 256 * 1024;

export async function sha256Hex(bytes: Buffer): Promise<string> {
  if (bytes.length < INLINE_BELOW) return createHash('sha256').update(bytes).digest('hex');
  return Buffer.from(await webcrypto.subtle.digest('SHA-256', bytes)).toString('hex');
}
