// What the index serves about one server: the controller's record of its manifest, and its recent
// events. Defined here, below the controller that fills them, so readers need not import it.
import type { EditorServer } from '../manifests/types.ts';

/** The controller's view of one manifest: the last valid object, and the file's problems if any. */
export interface ServerRecord {
  name: string;
  server?: EditorServer;
  problems?: string[];
  /** What the controller noticed and did about the file (a copied uid or status), newest last. */
  warnings?: string[];
  /** Set while the file (or the whole folder) is missing: what happens next. */
  absence?: string;
}

/** One recent event of a server, in the manner of Kubernetes events (GET /servers/{id}/events). */
export interface ServerEvent {
  time: string;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}
