// A snapshot's index: the JSON file whose writing commits the snapshot. It holds the server's
// manifest text, status and extension list, and for every kept entry of every root its path
// (raw bytes kept exactly: text when UTF-8, else base64), type, mode, mtime, and for a file its
// size, sha256 and parts (object, offset, length) in the objects table.
import { isUtf8 } from 'node:buffer';
import type { SnapshotInfo, SnapshotRoot } from './types.ts';

export const INDEX_FORMAT = 'devbox-snapshot/1';

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
  sha256: string;
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
  info: SnapshotInfo;
  manifestText: string;
  status: unknown;
  extensions: string[];
  /** The caller's exclude patterns this snapshot was taken with (an entry kept then, under the same patterns, need not be matched again). */
  exclude: string[];
  /** Keys of the objects the parts refer to. */
  objects: string[];
  roots: RootRecord[];
}

export function serializeIndex(index: SnapshotIndex): Buffer {
  return Buffer.from(JSON.stringify(index));
}

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
  if (index?.format !== INDEX_FORMAT || !Array.isArray(index.roots) || !Array.isArray(index.objects) || typeof index.info?.id !== 'string') {
    throw new DamagedIndexError(`the snapshot index ${where} is not a ${INDEX_FORMAT} index`);
  }
  return index;
}

/** Raw bytes as the index keeps them: `{ [text]: … }` when UTF-8, else `{ [base64]: … }`. */
function encode(bytes: Buffer): { text?: string; base64?: string } {
  return isUtf8(bytes) ? { text: bytes.toString('utf8') } : { base64: bytes.toString('base64') };
}

/** The path fields of a record; `text` is the path as text when known to be UTF-8. */
export function namedFields(rel: Buffer, text?: string): { path?: string; pathBase64?: string } {
  if (text !== undefined) return { path: text };
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
export function displayPath(bytes: Buffer): string {
  if (isUtf8(bytes)) return bytes.toString('utf8');
  let text = '';
  for (const byte of bytes) text += byte >= 0x20 && byte < 0x7f && byte !== 0x5c ? String.fromCharCode(byte) : `\\x${byte.toString(16).padStart(2, '0')}`;
  return text;
}
