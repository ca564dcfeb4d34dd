// The content hash of kept files, as 64 hex digits. New snapshots use BLAKE3 (what `b3sum FILE`
// prints) through @napi-rs/blake-hash, a native binding that hashes about seven times as fast
// as OpenSSL's BLAKE2b here (bench/README.md), so hashing is no longer most of a snapshot's
// time. Where the binding cannot load (a platform without a prebuilt binary), new snapshots use
// BLAKE2b-512 cut to 256 bits (`b2sum FILE | cut -c1-64`) and say so once. An index names its
// algorithm (`hash`); restores check each file by the algorithm its index names, including
// SHA-256 of the first format (`devbox-snapshot/1`).
import { createHash, hash as oneShot } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Slicer } from './slices.ts';

export type HashAlgorithm = 'blake3' | 'blake2b512/256' | 'sha256';

export const HASH_ALGORITHMS: readonly HashAlgorithm[] = ['blake3', 'blake2b512/256', 'sha256'];

interface Blake3Binding {
  blake3(input: Uint8Array): Buffer;
  Blake3Hasher: new () => { update(input: Uint8Array): unknown; digest(format?: string): string };
}

const blake3Binding: Blake3Binding | { failure: string } = (() => {
  try {
    return createRequire(import.meta.url)('@napi-rs/blake-hash') as Blake3Binding;
  } catch (error) {
    return { failure: (error as Error).message.split('\n')[0] };
  }
})();

/** The algorithm new snapshots are taken with. */
export const HASH_ALGORITHM: HashAlgorithm = 'blake3' in blake3Binding ? 'blake3' : 'blake2b512/256';

/** Why new snapshots do not use BLAKE3, when they do not. */
export const HASH_FALLBACK_REASON: string | undefined = 'failure' in blake3Binding ? blake3Binding.failure : undefined;

const OPENSSL_NAME = { 'blake2b512/256': 'blake2b512', sha256: 'sha256' } as const;
const HEX_LENGTH = 64;

function blake3(): Blake3Binding {
  if ('failure' in blake3Binding) {
    throw new Error(`this snapshot's files are checked with BLAKE3, and the package @napi-rs/blake-hash could not load (${blake3Binding.failure}); reinstall the service's dependencies (npm ci) on a supported platform`);
  }
  return blake3Binding;
}

/** The hash of `bytes`, in one call (no hash object: cheaper for the many small files). */
export function contentHash(bytes: Uint8Array, algorithm: HashAlgorithm = HASH_ALGORITHM): string {
  if (algorithm === 'blake3') return blake3().blake3(bytes).toString('hex');
  return oneShot(OPENSSL_NAME[algorithm], bytes, 'hex').slice(0, HEX_LENGTH);
}

/** A hash fed in pieces (a file larger than one object). */
export interface ContentHasher {
  update(bytes: Uint8Array): ContentHasher;
  digest(): string;
}

export function contentHasher(algorithm: HashAlgorithm = HASH_ALGORITHM): ContentHasher {
  if (algorithm === 'blake3') {
    const hash = new (blake3().Blake3Hasher)();
    const hasher: ContentHasher = {
      update(bytes) {
        hash.update(bytes);
        return hasher;
      },
      digest: () => hash.digest('hex'),
    };
    return hasher;
  }
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

/** Bytes hashed between two yields to the event loop (about 0.3 ms of BLAKE3, 1.5 ms of BLAKE2b). */
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
