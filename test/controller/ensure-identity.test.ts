// Whether a server's recorded status is its own: a status naming another server's workspace
// folder is a copy and starts afresh; a workspace path that is no folder of this data folder
// (a Pod's /data/workspace, the same in every server's own volume) is kept.
import { describe, expect, it } from 'vitest';
import { ensureIdentity } from '../../src/controller/ensure-identity.ts';
import { ServerIdentities } from '../../src/controller/identity.ts';
import type { EditorServer } from '../../src/manifests/types.ts';
import { DataLayout } from '../../src/workspace/layout.ts';

const layout = new DataLayout('/srv/devbox/data');

const serverWith = (name: string, workspacePath: string): EditorServer => ({
  apiVersion: 'devbox.dev/v1alpha1',
  kind: 'EditorServer',
  metadata: { name },
  spec: { running: true },
  status: { phase: 'Running', port: 8012, workspacePath, runtimeRef: { kind: 'kubernetes', namespace: 'editors', pod: `devbox-${name}-0`, uid: 'u-1' } },
});

describe('a server\'s recorded status', () => {
  it('starts afresh when it names another server\'s workspace folder (a copied manifest)', () => {
    const server = serverWith('copy', layout.workspace('original'));
    const { warning, inherited } = ensureIdentity(new ServerIdentities(layout), layout, 'copy', server);
    expect(inherited).toBe(true);
    expect(warning).toContain(`status names the workspace ${layout.workspace('original')}, not this server's`);
    expect(server.status).toBeUndefined();
  });

  it('is kept when it names its own workspace folder', () => {
    const server = serverWith('own', layout.workspace('own'));
    expect(ensureIdentity(new ServerIdentities(layout), layout, 'own', server)).toMatchObject({ inherited: false, warning: undefined });
    expect(server.status?.runtimeRef).toBeDefined();
  });

  it('is kept when its workspace is a cluster runtime\'s path, the same for every server in its own volume', () => {
    const identities = new ServerIdentities(layout);
    for (const name of ['one', 'two']) {
      const server = serverWith(name, '/data/workspace');
      expect(ensureIdentity(identities, layout, name, server)).toMatchObject({ inherited: false, warning: undefined });
      expect(server.status).toMatchObject({ port: 8012, runtimeRef: { pod: `devbox-${name}-0` } });
    }
  });
});
