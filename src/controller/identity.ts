// Which uid each server name has. A name's uid is given once and kept in its status record (and,
// by earlier versions, in a file of its data folder), so it survives a manifest replaced without
// one; a uid another name holds (a copied manifest) is never shared: the copy gets a uid of its own.
import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import type { DataLayout } from '../workspace/layout.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface ResolvedUid {
  uid: string;
  /** The uid the manifest named, when it is not the one the name gets. */
  refused?: string;
  /** The name that holds the refused uid, if another one does. */
  holder?: string;
}

export class ServerIdentities {
  private readonly uidByName = new Map<string, string>();
  private readonly nameByUid = new Map<string, string>();
  private readonly layout: DataLayout;

  constructor(layout: DataLayout) {
    this.layout = layout;
  }

  /**
   * Claims the uids kept before, at start-up, before any manifest is looked at: those of the
   * files earlier versions kept in each server's data folder, then those of the status records
   * (`recorded`). A manifest naming one of them is then refused it, whatever order the names come in.
   */
  async load(recorded: ReadonlyMap<string, string>): Promise<void> {
    const names = await fs.readdir(this.layout.editorsDir).catch(() => [] as string[]);
    await Promise.all(names.map(async (name) => {
      const text = await fs.readFile(this.layout.uidFile(name), 'utf8').catch(() => '');
      this.claimKept(name, text.trim());
    }));
    for (const [name, uid] of recorded) this.claimKept(name, uid);
  }

  private claimKept(name: string, uid: string): void {
    if (UUID.test(uid) && !this.nameByUid.has(uid) && !this.uidByName.has(name)) this.claim(name, uid);
  }

  nameOf(uid: string): string | undefined {
    return this.nameByUid.get(uid);
  }

  uidOf(name: string): string | undefined {
    return this.uidByName.get(name);
  }

  /**
   * The uid server `name` has: its own if it has one; else the manifest's, unless another name
   * holds it; else a new one. Claimed at once, so two manifests with one uid never both get it.
   */
  resolve(name: string, claimed: string | undefined): ResolvedUid {
    const own = this.uidByName.get(name);
    if (own !== undefined) return claimed === undefined || claimed === own ? { uid: own } : { uid: own, refused: claimed, holder: this.nameByUid.get(claimed) };
    const holder = claimed === undefined ? undefined : this.nameByUid.get(claimed);
    if (claimed !== undefined && holder === undefined) {
      this.claim(name, claimed);
      return { uid: claimed };
    }
    const uid = randomUUID();
    this.claim(name, uid);
    return claimed === undefined ? { uid } : { uid, refused: claimed, holder };
  }

  /** Forgets the name's uid: the server is deleted (its data folder, and the file, go with it). */
  forget(name: string): void {
    const uid = this.uidByName.get(name);
    if (uid !== undefined) this.nameByUid.delete(uid);
    this.uidByName.delete(name);
  }

  private claim(name: string, uid: string): void {
    this.uidByName.set(name, uid);
    this.nameByUid.set(uid, name);
  }
}
