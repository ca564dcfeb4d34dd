// Use per person (GET /health's capacity.per_person): each person's running editors, servers and
// memory against the limits per person (capacity.perPerson), in the health view's Capacity card.
import type { PerPersonUse } from '../api/openapi-types.ts';
import { formatMb } from './format.ts';

/** "2 of 3", or "2" where no limit applies. */
function against(used: number, limit: number | null, format: (n: number) => string = String): string {
  return limit === null ? format(used) : `${format(used)} of ${format(limit)}`;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The limits per person and a table of each person's use (those running the most first). */
export function PersonUse({ figures }: { figures: PerPersonUse }) {
  const { limits, people, people_total: total } = figures;
  const none = limits.running_editors === null && limits.servers === null && limits.memory_mb === null;
  return (
    <div class="per-person">
      <h3 id="health-per-person">Use per person</h3>
      <p class="muted">
        {none
          ? 'No limits per person (capacity.perPerson): each may use what the fleet has room for.'
          : `Limits per person: ${[
            limits.running_editors !== null && plural(limits.running_editors, 'editor') + ' running',
            limits.servers !== null && plural(limits.servers, 'server'),
            limits.memory_mb !== null && `${formatMb(limits.memory_mb)} memory`,
          ].filter(Boolean).join(', ')} (capacity.perPerson); admins are exempt.`}
      </p>
      {people.length === 0 ? <p class="muted">No one owns a server.</p> : (
        <div class="table-scroll">
          <table aria-labelledby="health-per-person">
            <thead><tr><th scope="col">Person</th><th scope="col">Editors running</th><th scope="col">Servers</th><th scope="col">Memory</th></tr></thead>
            <tbody>
              {people.map((p) => {
                const limit = (value: number | null) => (p.exempt ? null : value);
                return (
                  <tr key={p.person}>
                    <th scope="row">{p.person}{p.exempt && <span class="muted"> (admin: no limit)</span>}</th>
                    <td>{against(p.running, limit(limits.running_editors))}</td>
                    <td>{against(p.servers, limit(limits.servers))}</td>
                    <td>{against(p.memory_mb, limit(limits.memory_mb), formatMb)}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {total > people.length && <p class="muted">…and {total - people.length} more people with servers.</p>}
    </div>
  );
}
