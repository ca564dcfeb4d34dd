// Hands out editor ports from the configured range: never two names on one port, never a port
// another process is listening on, never the service's own or one outside 1024-65535, and the
// same port again for the same name.
import { portIsFree } from '../runtime/port-probe.ts';

export { portIsFree };

/** The ports an editor may have: not privileged, and real. */
export const EDITOR_PORTS = { min: 1024, max: 65535 } as const;

export type PortProbe = (port: number) => Promise<boolean>;

export class PortAllocator {
  private min: number;
  private max: number;
  private readonly probe: PortProbe;
  private readonly owners = new Map<number, string>();
  private readonly byName = new Map<string, number>();
  /** Ports never given to an editor, with the reason. */
  private readonly exclusions = new Map<number, string>();
  /**
   * Every port of the range below this one is held or excluded, so a search starts here: at
   * 10,000 servers a search from the bottom of the range walked 5,000 held ports on average.
   */
  private searchFrom = 0;

  constructor(range: { min: number; max: number }, probe: PortProbe = portIsFree) {
    this.min = this.max = 0;
    this.setRange(range);
    this.probe = probe;
  }

  /** The range ports are handed out from. */
  get range(): { min: number; max: number } {
    return { min: this.min, max: this.max };
  }

  /** Hands out new ports from this range from now on (the config changed); ports already held stay as they are. */
  setRange(range: { min: number; max: number }): void {
    this.min = Math.max(range.min, EDITOR_PORTS.min);
    this.max = Math.min(range.max, EDITOR_PORTS.max);
    this.searchFrom = this.min;
  }

  /** Never hands out or reserves this port (the service's own); `why` completes "port N is …". */
  exclude(port: number, why: string): void {
    this.exclusions.set(port, why);
  }

  /** Why no editor may have this port ("port N is …"), or undefined when one may. */
  excluded(port: number): string | undefined {
    if (port < EDITOR_PORTS.min || port > EDITOR_PORTS.max) return `outside ${EDITOR_PORTS.min}-${EDITOR_PORTS.max}, the ports editors may use`;
    return this.exclusions.get(port);
  }

  owner(port: number): string | undefined {
    return this.owners.get(port);
  }

  portOf(name: string): number | undefined {
    return this.byName.get(name);
  }

  /** Records a port a name already has (from its manifest); false if another name holds it or it is excluded. */
  reserve(name: string, port: number): boolean {
    if (this.excluded(port) !== undefined) return false;
    const owner = this.owners.get(port);
    if (owner !== undefined && owner !== name) return false;
    const previous = this.byName.get(name);
    if (previous !== undefined && previous !== port) this.free(previous);
    this.owners.set(port, name);
    this.byName.set(name, port);
    return true;
  }

  /**
   * Gives the name a free port from the range: its own one if it has one. The port is held
   * before the probe runs, so concurrent callers never pick the same one.
   */
  async allocate(name: string): Promise<number | undefined> {
    const own = this.byName.get(name);
    if (own !== undefined) return own;
    let leading = true;
    for (let port = Math.max(this.min, this.searchFrom); port <= this.max; port++) {
      if (this.owners.has(port) || this.exclusions.has(port)) {
        if (leading) this.searchFrom = port + 1;
        continue;
      }
      // A port another process listens on stays where the next search looks again.
      leading = false;
      this.owners.set(port, name);
      if (await this.probe(port)) {
        // A concurrent call for the same name (or a reserve) settled first: keep its port.
        const settled = this.byName.get(name);
        if (settled !== undefined) {
          this.free(port);
          return settled;
        }
        this.byName.set(name, port);
        return port;
      }
      this.free(port);
    }
    return undefined;
  }

  /**
   * Moves the name to another free port, because a process we do not manage took its own.
   * The old port stays held while searching so it is not handed out again at once.
   */
  async reallocate(name: string): Promise<number | undefined> {
    const old = this.byName.get(name);
    this.byName.delete(name);
    const port = await this.allocate(name);
    if (port === undefined) {
      if (old !== undefined) this.byName.set(name, old);
      return undefined;
    }
    if (old !== undefined && old !== port && this.owners.get(old) === name) this.free(old);
    return port;
  }

  /** Hands the port held under `from` (a create's claim) to `to`, which must hold none. */
  transfer(from: string, to: string): void {
    const port = this.byName.get(from);
    if (port === undefined || this.byName.has(to)) return;
    this.byName.delete(from);
    this.owners.set(port, to);
    this.byName.set(to, port);
  }

  release(name: string): void {
    const port = this.byName.get(name);
    if (port === undefined) return;
    this.byName.delete(name);
    if (this.owners.get(port) === name) this.free(port);
  }

  /** The port is nobody's again: the next search looks from it. */
  private free(port: number): void {
    this.owners.delete(port);
    if (port < this.searchFrom) this.searchFrom = port;
  }
}
