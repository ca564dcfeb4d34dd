// A time shown relative ("3 minutes ago"), with the exact time in the user's zone in its title.
import { useNow } from '../store.ts';
import { formatExact, formatRelative } from './format.ts';

export function RelativeTime({ value }: { value: string | null | undefined }) {
  const now = useNow();
  if (!value) return <span class="muted">—</span>;
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return <span>{value}</span>;
  return (
    <time dateTime={date.toISOString()} title={formatExact(date)}>
      {formatRelative(date, now)}
    </time>
  );
}
