// The mark on a server's row that says it is someone else's, shared with the user: they may open
// and drive it, not delete it or change who has access.
import { useEffect, useState } from 'preact/hooks';
import { getMe, type Me } from '../api/access.ts';
import type { ServerRecord } from '../api/types.ts';
import './shared-mark.css';

/** The dashboard's user (GET /me), once it is known. */
export function useMe(): Me | undefined {
  const [me, setMe] = useState<Me | undefined>(undefined);
  useEffect(() => {
    let current = true;
    void getMe().then((value) => current && setMe(value));
    return () => {
      current = false;
    };
  }, []);
  return me;
}

/** Whether the user reaches this server because it was shared with them. */
export function sharedWithMe(server: ServerRecord, me: Me | undefined): boolean {
  const user = me?.user;
  return !!user && server.owner !== user && server.shared_with.includes(user);
}

export function SharedMark({ server }: { server: ServerRecord }) {
  const me = useMe();
  if (!sharedWithMe(server, me)) return null;
  return <span class="shared-mark" title={`Shared with you by ${server.owner ?? 'its owner'}`}>shared</span>;
}
