// A snapshot's index: the JSON file whose writing commits the snapshot. It holds the server's
// manifest text, status and extension list, and for every kept entry of every root its path
// (raw bytes kept exactly: text when UTF-8, else base64), type, mode, mtime, and for a file its
// size, content hash and parts (object, offset, length) in the objects table. The index names
// its hash algorithm; the first format (`devbox-snapshot/1`, SHA-256 in a `sha256` field) is
// still read.
import { isUtf8 } from 'node:buffer';
import { HASH_ALGORITHMS, type HashAlgorithm } from './hash.ts';
import type { SnapshotInfo, SnapshotRoot } from './types.ts';

export const INDEX_FORMAT = 'devbox-snapshot/2';
const FORMAT_1 = 'devbox-snapshot/1';

/** [index into SnapshotIndex.objects, offset, length]: where a run of a file's bytes is. */
export type Part = [object: number, offset: number, length: number];

interface Named {
  /** The path below the root, `/`-separated, when its bytes are UTF-8… */
  path?: string;
  /** …else its raw bytes in base64. */
  pathBase64?: string;
  mtimeMs: number;
}

export interface FileRecord extends Named {
  type: 'file';
  mode: number;
  size: number;
  /** The content's hash, hex, by the index's algorithm. */
  hash: string;
  parts: Part[];
  /** Present when size, mtime and mode were stable when read: a file with the same (size, mtimeMs, ino, mode) need not be read again. */
  ino?: number;
}

export interface DirRecord extends Named {
  type: 'dir';
  mode: number;
}

export interface LinkRecord extends Named {
  type: 'link';
  target?: string;
  targetBase64?: string;
}

export type EntryRecord = FileRecord | DirRecord | LinkRecord;

export interface RootRecord {
  id: SnapshotRoot['id'];
  /** The root's folder did not exist when the snapshot was taken. */
  absent?: boolean;
  /** Parents before children, each folder's entries in byte order of their names. */
  entries: EntryRecord[];
}

export interface SnapshotIndex {
  format: typeof INDEX_FORMAT;
  /** How files' `hash` is computed (see hash.ts). */
  hash: HashAlgorithm;
  info: SnapshotInfo;
  manifestText: string;
  status: unknown;
  extensions: string[];
  /** The caller's exclude patterns this snapshot was taken with (an entry kept then, under the same patterns, need not be matched again). */
  exclude: string[];
  /** Keys of the objects the parts refer to; null in a slot no part refers to any more (numbers stay as they were). */
  objects: Array<string | null>;
  roots: RootRecord[];
}

// Each record's JSON, kept while the record lives: an index is written again at every snapshot,
// mostly of records that did not change (the same objects, see snapshot-records.ts), whose JSON
// is then not made again. Records are never changed once written.
const recordJson = new WeakMap<EntryRecord, string>();

/** The index as JSON (its roots last, each root's entries last). */
export function serializeIndex(index: SnapshotIndex): Buffer {
  const { roots, ...head } = index;
  const out: string[] = [opened(JSON.stringify(head)), '"roots":['];
  roots.forEach(({ entries, ...root }, r) => {
    out.push(r === 0 ? '' : ',', opened(JSON.stringify(root)), '"entries":[');
    for (let i = 0; i < entries.length; i++) {
      let json = recordJson.get(entries[i]);
      if (json === undefined) recordJson.set(entries[i], json = JSON.stringify(entries[i]));
      out.push(i === 0 ? json : `,${json}`);
    }
    out.push(']}');
  });
  out.push(']}');
  return Buffer.from(out.join(''));
}

/** An object's JSON without its closing brace, ready for one more member. */
const opened = (json: string) => (json === '{}' ? '{' : `${json.slice(0, -1)},`);

/** An index that cannot be read: damaged in the store, or not written by this engine. */
export class DamagedIndexError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DamagedIndexError';
  }
}

/** The index in `bytes`, or a DamagedIndexError saying what is wrong with it. */
export function parseIndex(bytes: Buffer, where: string): SnapshotIndex {
  let index: SnapshotIndex;
  try {
    index = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw new DamagedIndexError(`the snapshot index ${where} is damaged: ${(error as Error).message}`);
  }
  const format = (index as { format?: unknown } | null)?.format;
  if ((format !== INDEX_FORMAT && format !== FORMAT_1) || !Array.isArray(index.roots) || !Array.isArray(index.objects) || typeof index.info?.id !== 'string') {
    throw new DamagedIndexError(`the snapshot index ${where} is not a ${INDEX_FORMAT} index`);
  }
  if (format === FORMAT_1) return fromFormat1(index);
  if (!HASH_ALGORITHMS.includes(index.hash)) throw new DamagedIndexError(`the snapshot index ${where} names an unknown hash "${index.hash}"`);
  return index;
}

/** A first-format index as this one: its files' SHA-256 in `hash`. */
function fromFormat1(index: SnapshotIndex): SnapshotIndex {
  for (const root of index.roots) {
    for (const entry of root.entries) {
      if (entry.type !== 'file') continue;
      const record = entry as FileRecord & { sha256?: string };
      record.hash = record.sha256 ?? '';
      delete record.sha256;
    }
  }
  return { ...index, format: INDEX_FORMAT, hash: 'sha256' };
}

/** Raw bytes as the index keeps them: `{ [text]: … }` when UTF-8, else `{ [base64]: … }`. */
function encode(bytes: Buffer): { text?: string; base64?: string } {
  return isUtf8(bytes) ? { text: bytes.toString('utf8') } : { base64: bytes.toString('base64') };
}

/** The path fields of a record, from its text (UTF-8 bytes) or raw bytes. */
export function namedFields(rel: string | Buffer): { path?: string; pathBase64?: string } {
  if (typeof rel === 'string') return { path: rel };
  const encoded = encode(rel);
  return encoded.text !== undefined ? { path: encoded.text } : { pathBase64: encoded.base64 };
}

/** One string per distinct path, for maps keyed by path. */
export const pathKey = (record: { path?: string; pathBase64?: string }): string => record.path ?? `\0${record.pathBase64}`;

export function targetFields(target: Buffer): { target?: string; targetBase64?: string } {
  const { text, base64 } = encode(target);
  return text !== undefined ? { target: text } : { targetBase64: base64 };
}

export function pathBytes(record: Named): Buffer {
  return record.pathBase64 !== undefined ? Buffer.from(record.pathBase64, 'base64') : Buffer.from(record.path ?? '', 'utf8');
}

export function targetBytes(record: LinkRecord): Buffer {
  return record.targetBase64 !== undefined ? Buffer.from(record.targetBase64, 'base64') : Buffer.from(record.target ?? '', 'utf8');
}

/** A one-to-one text form of raw bytes, for maps keyed by path. */
export const byteKey = (bytes: Buffer): string => bytes.toString('latin1');

/** A path for people (reports, logs): the text when its bytes are UTF-8, else `\xNN` for each byte that is not printable ASCII. */
export function displayPath(bytes: string | Buffer): string {
  if (typeof bytes === 'string') return bytes;
  if (isUtf8(bytes)) return bytes.toString('utf8');
  let text = '';
  for (const byte of bytes) text += byte >= 0x20 && byte < 0x7f && byte !== 0x5c ? String.fromCharCode(byte) : `\\x${byte.toString(16).padStart(2, '0')}`;
  return text;
}
