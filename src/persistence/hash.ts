// The content hash of kept files: BLAKE2b-512 cut to its first 256 bits, as hex (what
// `b2sum FILE | cut -c1-64` prints). On CPUs without SHA extensions OpenSSL's BLAKE2b runs
// about twice as fast as SHA-256 (measured in bench/README.md), and it is as strong for this
// use. An index names its algorithm (`hash`); one written before (`devbox-snapshot/1`) used
// SHA-256, which restores still check against.
import { createHash, hash as oneShot, type BinaryLike } from 'node:crypto';
import type { Slicer } from './slices.ts';

export type HashAlgorithm = 'blake2b512/256' | 'sha256';

/** The algorithm new snapshots are taken with. */
export const HASH_ALGORITHM: HashAlgorithm = 'blake2b512/256';

const OPENSSL_NAME: Record<HashAlgorithm, string> = { 'blake2b512/256': 'blake2b512', sha256: 'sha256' };
const HEX_LENGTH = 64;

/** The hash of `bytes`, in one call (no hash object: cheaper for the many small files). */
export function contentHash(bytes: Uint8Array, algorithm: HashAlgorithm = HASH_ALGORITHM): string {
  return oneShot(OPENSSL_NAME[algorithm], bytes, 'hex').slice(0, HEX_LENGTH);
}

/** A hash fed in pieces (a file larger than one object). */
export interface ContentHasher {
  update(bytes: BinaryLike): ContentHasher;
  digest(): string;
}

export function contentHasher(algorithm: HashAlgorithm = HASH_ALGORITHM): ContentHasher {
  const hash = createHash(OPENSSL_NAME[algorithm]);
  const hasher: ContentHasher = {
    update(bytes) {
      hash.update(bytes);
      return hasher;
    },
    digest: () => hash.digest('hex').slice(0, HEX_LENGTH),
  };
  return hasher;
}

/** Bytes hashed between two yields to the event loop (about 1.5 ms of BLAKE2b). */
const SLICE_BYTES = 1024 * 1024;

/** `contentHash`, yielding to the event loop between megabytes when given a slicer (a file of several megabytes hashed on the event loop's thread). */
export async function contentHashSliced(bytes: Uint8Array, algorithm: HashAlgorithm, slicer: Slicer | undefined): Promise<string> {
  if (!slicer || bytes.length <= SLICE_BYTES) return contentHash(bytes, algorithm);
  const hasher = contentHasher(algorithm);
  for (let at = 0; at < bytes.length; at += SLICE_BYTES) {
    while (slicer.due()) await slicer.pass();
    hasher.update(bytes.subarray(at, at + SLICE_BYTES));
  }
  return hasher.digest();
}
