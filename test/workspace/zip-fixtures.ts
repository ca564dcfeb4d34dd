// ZIPs built by the tests, hostile ones included. adm-zip cleans names it is given, so a hostile
// name is written as a harmless one of the same length and patched in the bytes (the CRC covers
// the data, not the name).
import AdmZip from 'adm-zip';

export interface ZipEntrySpec { name: string; data?: string | Buffer; mode?: number; rawName?: string }

export function buildZip(entries: ZipEntrySpec[]): Buffer {
  const zip = new AdmZip();
  for (const e of entries) {
    zip.addFile(e.name, Buffer.isBuffer(e.data) ? e.data : Buffer.from(e.data ?? ''));
    if (e.mode !== undefined) zip.getEntry(e.name)!.header.attr = ((e.mode << 16) >>> 0);
  }
  let bytes = zip.toBuffer();
  for (const e of entries) {
    if (e.rawName === undefined) continue;
    if (e.rawName.length !== e.name.length) throw new Error('rawName must be as long as name');
    bytes = Buffer.from(bytes.toString('latin1').split(e.name).join(e.rawName), 'latin1');
  }
  return bytes;
}
