// The editor's User/settings.json as the controller and the user share it. The controller owns
// only what it last wrote (kept beside the editor's data), so a key the user changed inside the
// editor stays theirs until the desired value of that key changes.
import { sameData } from '../core/equal.ts';
import type { ExtensionGroup } from '../config/settings.ts';

export type SettingsObject = Record<string, unknown>;

/** Each group's user_settings in the order the spec names them, then spec.settings over them. */
export function desiredSettings(
  groups: Record<string, ExtensionGroup>, groupNames: string[] | undefined, settings: SettingsObject | undefined,
): SettingsObject {
  const desired: SettingsObject = {};
  for (const name of groupNames ?? []) {
    if (Object.hasOwn(groups, name)) Object.assign(desired, groups[name].user_settings);
  }
  return Object.assign(desired, settings ?? {});
}

/**
 * The file's settings after applying `desired`, given what the controller wrote last time:
 * a key is set when its desired value is new or changed, and removed when it left `desired`
 * while still holding the value the controller wrote. Every other key is left as the user has it.
 */
export function mergeSettings(current: SettingsObject, desired: SettingsObject, lastWritten: SettingsObject): SettingsObject {
  const next = { ...current };
  for (const [key, value] of Object.entries(desired)) {
    if (!Object.hasOwn(lastWritten, key) || !sameData(lastWritten[key], value)) next[key] = value;
  }
  for (const [key, value] of Object.entries(lastWritten)) {
    if (!Object.hasOwn(desired, key) && sameData(next[key], value)) delete next[key];
  }
  return next;
}

/**
 * Parses settings.json as VS Code writes and reads it: JSON with // and /* comments and
 * trailing commas. Returns undefined when it is not an object even so.
 */
export function parseJsonc(text: string): SettingsObject | undefined {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      // A string, escapes included, copied as it is.
      const j = closingQuote(text, i);
      out += text.slice(i, j + 1);
      i = j;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
      out += '\n';
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end === -1 ? text.length : end + 1;
      out += ' ';
    } else {
      out += c;
    }
  }
  const cleaned = withoutTrailingCommas(out);
  if (cleaned.trim() === '') return {};
  try {
    const value: unknown = JSON.parse(cleaned);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as SettingsObject) : undefined;
  } catch {
    return undefined;
  }
}

/** The index of the quote that closes the JSON string opening at `start` (escapes skipped), or past the end. */
function closingQuote(text: string, start: number): number {
  let j = start + 1;
  while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
  return j;
}

/** Drops each comma followed only by blanks before } or ]; strings are copied untouched. */
function withoutTrailingCommas(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      const j = closingQuote(text, i);
      out += text.slice(i, j + 1);
      i = j;
    } else if (c === ',') {
      let j = i + 1;
      while (j < text.length && /\s/.test(text[j])) j++;
      if (text[j] !== '}' && text[j] !== ']') out += c;
    } else {
      out += c;
    }
  }
  return out;
}
