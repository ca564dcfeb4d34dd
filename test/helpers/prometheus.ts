// A strict parser of the Prometheus text exposition format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/), for tests: it throws, naming the
// line, on anything a Prometheus server would refuse or that breaks the format's rules (a bad
// name, label or value, a duplicate series, a family split in two, TYPE after its samples, a
// histogram whose buckets are not cumulative). No npm parser of the format is maintained.

export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';

export interface Sample {
  /** The sample's own name: `x_bucket`, `x_sum` and `x_count` for a histogram `x`. */
  name: string;
  labels: Record<string, string>;
  value: number;
  timestamp?: number;
}

export interface Family {
  name: string;
  type: MetricType;
  help?: string;
  samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set<MetricType>(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
const SUFFIXES: Record<MetricType, string[]> = {
  counter: [''], gauge: [''], untyped: [''],
  histogram: ['_bucket', '_sum', '_count'],
  summary: ['', '_sum', '_count'],
};

class ParseError extends Error {
  constructor(line: number, text: string, problem: string) {
    super(`line ${line}: ${problem}: ${JSON.stringify(text)}`);
  }
}

/** Parses a whole exposition; families by name, in order of appearance. */
export function parsePrometheusText(text: string): Map<string, Family> {
  if (text !== '' && !text.endsWith('\n')) throw new Error('the exposition must end with a line feed');
  const families = new Map<string, Family>();
  /** Families whose samples have ended (another family's began): none may follow. */
  const closed = new Set<string>();
  const series = new Set<string>();
  const typed = new Set<string>();
  let current: Family | undefined;
  const lines = text.split('\n');
  lines.pop();

  const familyOf = (name: string, line: number, raw: string): Family => {
    let family = families.get(name);
    if (!family) {
      family = { name, type: 'untyped', samples: [] };
      families.set(name, family);
    }
    if (current !== family) {
      if (closed.has(name)) throw new ParseError(line, raw, `the lines of ${name} are not all together`);
      if (current) closed.add(current.name);
      current = family;
    }
    return family;
  };

  lines.forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === '') return;
    if (raw.startsWith('#')) {
      const match = /^#\s+(HELP|TYPE)\s+(\S+)(?:\s(.*))?$/.exec(raw);
      if (!match) return; // a comment
      const [, keyword, name, rest = ''] = match;
      if (!METRIC_NAME.test(name)) throw new ParseError(line, raw, `"${name}" is not a metric name`);
      const family = familyOf(name, line, raw);
      if (keyword === 'HELP') {
        if (family.help !== undefined) throw new ParseError(line, raw, `a second HELP for ${name}`);
        family.help = unescapeHelp(rest, line, raw);
      } else {
        if (!TYPES.has(rest as MetricType)) throw new ParseError(line, raw, `"${rest}" is not a metric type`);
        if (family.samples.length > 0) throw new ParseError(line, raw, `TYPE of ${name} after its samples`);
        if (typed.has(name)) throw new ParseError(line, raw, `a second TYPE for ${name}`);
        family.type = rest as MetricType;
        typed.add(name);
      }
      return;
    }
    const sample = parseSample(raw, line);
    // The family is the current one when the sample's name is its name plus one of its type's suffixes.
    const owner = current && SUFFIXES[current.type].some((suffix) => sample.name === current!.name + suffix)
      ? current
      : familyOf(sample.name, line, raw);
    const key = `${sample.name}{${Object.keys(sample.labels).sort().map((k) => `${k}=${JSON.stringify(sample.labels[k])}`).join(',')}}`;
    if (series.has(key)) throw new ParseError(line, raw, `a second sample of the series ${key}`);
    series.add(key);
    if (owner.type === 'counter' && !(sample.value >= 0)) throw new ParseError(line, raw, 'a counter below zero');
    if (owner.type === 'histogram' && sample.name.endsWith('_bucket') && sample.labels.le === undefined) throw new ParseError(line, raw, 'a bucket without "le"');
    if (owner.type === 'summary' && sample.name === owner.name && sample.labels.quantile === undefined) throw new ParseError(line, raw, 'a quantile without "quantile"');
    owner.samples.push(sample);
  });
  for (const family of families.values()) if (family.type === 'histogram') checkHistogram(family);
  return families;
}

/** Buckets of each label set rise with `le`, never fall, and end with +Inf equal to `_count`. */
function checkHistogram(family: Family): void {
  const groups = new Map<string, Array<{ le: number; value: number }>>();
  const counts = new Map<string, number>();
  const keyOf = (labels: Record<string, string>) => JSON.stringify(Object.entries(labels).filter(([k]) => k !== 'le').sort());
  for (const sample of family.samples) {
    const key = keyOf(sample.labels);
    if (sample.name.endsWith('_bucket')) {
      const le = parseValue(sample.labels.le);
      if (le === undefined || Number.isNaN(le)) throw new Error(`${family.name}: le="${sample.labels.le}" is not a number`);
      groups.set(key, [...(groups.get(key) ?? []), { le, value: sample.value }]);
    } else if (sample.name.endsWith('_count')) {
      counts.set(key, sample.value);
    }
  }
  for (const [key, buckets] of groups) {
    for (let i = 1; i < buckets.length; i++) {
      if (!(buckets[i].le > buckets[i - 1].le)) throw new Error(`${family.name}${key}: buckets are not in rising order of le`);
      if (buckets[i].value < buckets[i - 1].value) throw new Error(`${family.name}${key}: buckets are not cumulative`);
    }
    const last = buckets.at(-1)!;
    if (last.le !== Infinity) throw new Error(`${family.name}${key}: no le="+Inf" bucket`);
    if (counts.get(key) !== last.value) throw new Error(`${family.name}${key}: _count ${counts.get(key)} differs from the +Inf bucket ${last.value}`);
  }
}

/** `name{label="value",…} value [timestamp]`. */
function parseSample(raw: string, line: number): Sample {
  const name = /^[^\s{]*/.exec(raw)![0];
  if (!METRIC_NAME.test(name)) throw new ParseError(line, raw, `"${name}" is not a metric name`);
  let at = name.length;
  const labels: Record<string, string> = {};
  if (raw[at] === '{') {
    at++;
    while (raw[at] !== '}') {
      const labelName = /^[^=\s]*/.exec(raw.slice(at))![0];
      if (!LABEL_NAME.test(labelName) || labelName.startsWith('__')) throw new ParseError(line, raw, `"${labelName}" is not a label name`);
      if (Object.hasOwn(labels, labelName)) throw new ParseError(line, raw, `the label ${labelName} twice`);
      at += labelName.length;
      if (raw[at] !== '=' || raw[at + 1] !== '"') throw new ParseError(line, raw, `no ="…" after the label ${labelName}`);
      at += 2;
      let value = '';
      for (;;) {
        const c = raw[at];
        if (c === undefined) throw new ParseError(line, raw, `the value of ${labelName} is not closed`);
        if (c === '"') break;
        if (c === '\\') {
          const next = raw[at + 1];
          if (next === '\\') value += '\\';
          else if (next === '"') value += '"';
          else if (next === 'n') value += '\n';
          else throw new ParseError(line, raw, `"\\${next}" is no escape in a label value`);
          at += 2;
          continue;
        }
        value += c;
        at++;
      }
      labels[labelName] = value;
      at++;
      if (raw[at] === ',') at++;
      else if (raw[at] !== '}') throw new ParseError(line, raw, 'labels must be separated by commas');
    }
    at++;
  }
  const rest = raw.slice(at);
  const match = /^[ \t]+(\S+)(?:[ \t]+(-?\d+))?$/.exec(rest);
  if (!match) throw new ParseError(line, raw, 'a sample is a name, optional labels, a value and an optional timestamp');
  const value = parseValue(match[1]);
  if (value === undefined) throw new ParseError(line, raw, `"${match[1]}" is not a number`);
  return { name, labels, value, ...(match[2] !== undefined ? { timestamp: Number(match[2]) } : {}) };
}

/**
 * A value as Prometheus reads it (Go's strconv.ParseFloat): decimal or exponent notation, or,
 * in any case, NaN and Inf or Infinity with an optional sign; undefined for anything else.
 */
function parseValue(text: string): number | undefined {
  const special = /^([+-]?)(inf|infinity|nan)$/i.exec(text);
  if (special) return special[2].toLowerCase() === 'nan' ? NaN : special[1] === '-' ? -Infinity : Infinity;
  return /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text) ? Number(text) : undefined;
}

function unescapeHelp(text: string, line: number, raw: string): string {
  return text.replace(/\\(.?)/g, (_all, c: string) => {
    if (c === '\\') return '\\';
    if (c === 'n') return '\n';
    throw new ParseError(line, raw, `"\\${c}" is no escape in HELP`);
  });
}

/** The value of the one sample named `name` whose labels include `labels`; undefined when there is none. */
export function valueOf(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined {
  const matching = [...families.values()].flatMap((f) => f.samples).filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (matching.length > 1) throw new Error(`${matching.length} samples of ${name} match ${JSON.stringify(labels)}: name more labels`);
  return matching[0]?.value;
}

/** Every series of the exposition as `name{labels}`, for comparing two scrapes. */
export function seriesOf(families: Map<string, Family>): Set<string> {
  return new Set([...families.values()].flatMap((f) => f.samples).map((s) => `${s.name}${JSON.stringify(Object.entries(s.labels).sort())}`));
}
