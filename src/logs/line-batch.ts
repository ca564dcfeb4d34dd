// One read of an editor's output as a batch: the lines found in the bytes without turning each
// into a string, and the same lines as server.log holds them, built from those bytes.

const NEWLINE = 0x0a;
const RETURN = 0x0d;

/** The non-blank lines of a chunk as byte ranges into it, [starts[i], ends[i]), a trailing \r left out. */
export interface LineRanges {
  starts: number[];
  ends: number[];
}

/**
 * The lines of `data`: each ends at a newline, or at the end of the data (a piece of a line too
 * long for one read). Blank lines carry nothing and are left out, as before: a line is blank when
 * String.prototype.trim() would leave nothing of it.
 */
export function lineRanges(data: Buffer): LineRanges {
  const starts: number[] = [];
  const ends: number[] = [];
  const length = data.length;
  let start = 0;
  while (start < length) {
    const newline = data.indexOf(NEWLINE, start);
    const next = newline < 0 ? length : newline + 1;
    let end = newline < 0 ? length : newline;
    if (end > start && data[end - 1] === RETURN) end--;
    if (!isBlank(data, start, end)) {
      starts.push(start);
      ends.push(end);
    }
    start = next;
  }
  return { starts, ends };
}

/** Whether the bytes hold nothing but white space; ASCII is decided byte by byte, anything else as trim() decides. */
function isBlank(data: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const byte = data[i];
    if (byte === 0x20 || (byte >= 0x09 && byte <= 0x0d)) continue;
    if (byte < 0x80) return false;
    return data.toString('utf8', i, end).trim() === '';
  }
  return true;
}

/** The text of line i (decoded as UTF-8, as before: a byte that is not UTF-8 becomes U+FFFD). */
export function lineText(data: Buffer, ranges: LineRanges, i: number): string {
  return data.toString('utf8', ranges.starts[i], ranges.ends[i]);
}

/**
 * Every line as `prefix` + its bytes + "\n", in one buffer: what formatLogLine gives for each
 * line when prefix is `timestamp [LEVEL] [source] `, without a string per line.
 */
export function prefixedLines(data: Buffer, ranges: LineRanges, prefix: Buffer): Buffer {
  const { starts, ends } = ranges;
  const count = starts.length;
  let size = count * (prefix.length + 1);
  for (let i = 0; i < count; i++) size += ends[i] - starts[i];
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (let i = 0; i < count; i++) {
    out.set(prefix, at);
    at += prefix.length;
    at += data.copy(out, at, starts[i], ends[i]);
    out[at++] = NEWLINE;
  }
  return out;
}
