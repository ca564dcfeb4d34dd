// What an edit of the config file changed, in words, and which of those changes the running
// service cannot apply (their values are read once, when the service starts).
import { sameData } from '../core/equal.ts';
import type { Config } from './settings.ts';

/**
 * Values read once at start-up: the work queue's worker count, the periods of the resync and
 * stats timers, the persistence target, and the runtime (which runs editors, and where in a
 * cluster; its default resources are read at each start). Everything else is read where it is
 * used, so an edit applies at once.
 */
export const RESTART_ONLY = [
  'controller.workers', 'controller.resyncSeconds', 'controller.statsIntervalSeconds', 'controller.usageHistoryMinutes', 'controller.usageBucketSeconds', 'persistence.target',
  'runtime.kind', 'runtime.kubernetes.namespace', 'runtime.kubernetes.image', 'runtime.kubernetes.imagePullPolicy',
  'runtime.kubernetes.command', 'runtime.kubernetes.storage', 'runtime.kubernetes.runAsUser', 'runtime.kubernetes.extraMounts',
  'runtime.kubernetes.env', 'runtime.kubernetes.namePrefix', 'runtime.kubernetes.kubeconfig',
] as const;

/** The changes from `before` to `after`, one phrase each ("ports.max: 8100 -> 9000", "extensionGroups: added web"). */
export function describeChanges(before: Config, after: Config): string[] {
  const changes: string[] = [];
  const groups = { added: [] as string[], removed: [] as string[], changed: [] as string[] };
  for (const name of new Set([...Object.keys(before.extensionGroups), ...Object.keys(after.extensionGroups)])) {
    const was = before.extensionGroups[name];
    const is = after.extensionGroups[name];
    if (!was) groups.added.push(name);
    else if (!is) groups.removed.push(name);
    else if (!sameData(was, is)) groups.changed.push(name);
  }
  const said = Object.entries(groups).filter(([, names]) => names.length > 0).map(([how, names]) => `${how} ${names.join(', ')}`);
  if (said.length > 0) changes.push(`extensionGroups: ${said.join('; ')}`);
  for (const path of leafPaths(before, after)) {
    if (path.startsWith('extensionGroups.')) continue;
    const was = valueAt(before, path);
    const is = valueAt(after, path);
    if (!sameData(was, is)) changes.push(`${path}: ${show(was)} -> ${show(is)}`);
  }
  return changes;
}

/** The restart-only values that differ between what runs and what the file says, each saying so. */
export function pendingRestart(running: Config, file: Config): string[] {
  return RESTART_ONLY.flatMap((path) => {
    const was = valueAt(running, path);
    const is = valueAt(file, path);
    return sameData(was, is) ? [] : [`${path}: ${show(was)} -> ${show(is)} takes effect after a restart`];
  });
}

/** Dotted paths of the leaves of either object; arrays are leaves. */
function leafPaths(a: unknown, b: unknown, prefix = ''): string[] {
  const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
  if (!isObject(a) && !isObject(b)) return [prefix];
  const keys = new Set([...Object.keys(isObject(a) ? a : {}), ...Object.keys(isObject(b) ? b : {})]);
  if (keys.size === 0) return prefix ? [prefix] : [];
  return [...keys].flatMap((key) => leafPaths(isObject(a) ? a[key] : undefined, isObject(b) ? b[key] : undefined, prefix ? `${prefix}.${key}` : key));
}

function valueAt(config: Config, path: string): unknown {
  return path.split('.').reduce<unknown>((at, key) => (at !== null && typeof at === 'object' ? (at as Record<string, unknown>)[key] : undefined), config);
}

function show(value: unknown): string {
  if (value === undefined) return '(unset)';
  const text = JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
