import { describe, expect, it } from 'vitest';
import { formatLogLine } from '../../src/logs/entry.ts';
import { lineRanges, lineText, prefixedLines } from '../../src/logs/line-batch.ts';
import { frame } from '../../src/logs/stream.ts';

/** The lines as the hub made them before batches: decode, split, strip \r, drop blank lines. */
function splitAsBefore(data: Buffer): string[] {
  const lines: string[] = [];
  for (const line of data.toString('utf8').split('\n')) {
    const text = line.endsWith('\r') ? line.slice(0, -1) : line;
    if (text.trim() !== '') lines.push(text);
  }
  return lines;
}

const texts = (data: Buffer) => {
  const ranges = lineRanges(data);
  return ranges.starts.map((_, i) => lineText(data, ranges, i));
};

describe('splitting a read into lines on its bytes', () => {
  const cases: Record<string, Buffer> = {
    'plain lines': Buffer.from('one\ntwo\nthree\n'),
    'CRLF and a lone CR inside a line': Buffer.from('a\r\nb\rc\r\n\r\n'),
    'blank and white-space lines': Buffer.from('\n\n  \n\t\v\f\nx\n   y  \n'),
    'Unicode white space only (trim removes it)': Buffer.from('\u00a0\u3000\u2028\n\ufeff \n\u2003z\n'),
    'multi-byte text': Buffer.from('héllo wörld\n日本語のログ\n🙂 emoji\n'),
    'bytes that are not UTF-8': Buffer.concat([Buffer.from('bad '), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('\nnext\n'), Buffer.from([0x80]), Buffer.from('\n')]),
    'no newline at the end (a piece of a long line)': Buffer.from('first\nsecond without end'),
    'empty': Buffer.alloc(0),
  };
  for (const [name, data] of Object.entries(cases)) {
    it(`finds the same lines as decoding and splitting did: ${name}`, () => {
      expect(texts(data)).toEqual(splitAsBefore(data));
    });
  }

  it('agrees with the string split on random bytes of text, white space and newlines', () => {
    const alphabet = ['a', 'b', ' ', '\t', '\r', '\n', '\n', 'é', '\u00a0', '日', '"', '\\'];
    let seed = 42;
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    for (let round = 0; round < 200; round++) {
      let text = '';
      const length = Math.floor(random() * 200);
      for (let i = 0; i < length; i++) text += alphabet[Math.floor(random() * alphabet.length)];
      const data = Buffer.from(`${text}\n`);
      expect(texts(data)).toEqual(splitAsBefore(data));
    }
  });

  it('writes each line to server.log exactly as formatLogLine formats its entry', () => {
    const data = Buffer.from('GET / 200\r\n\n  indented\nhéllo "quoted" \\ back\n');
    const ranges = lineRanges(data);
    const timestamp = '2026-11-22T06:00:01.123Z';
    const bytes = prefixedLines(data, ranges, Buffer.from(`${timestamp} [INFO] [server] `));
    const expected = splitAsBefore(data).map((message) =>
      formatLogLine({ serverId: 'x', serverName: 'X', name: 'x', level: 'INFO', source: 'server', message, timestamp }),
    );
    expect(bytes.toString('utf8')).toBe(`${expected.join('\n')}\n`);
    expect(prefixedLines(data, lineRanges(Buffer.alloc(0)), Buffer.from('p '))).toHaveLength(0);
  });
});

describe('the stream frame', () => {
  it('is byte for byte JSON.stringify of the frame object, whatever the text holds, and as entries change', () => {
    const base = { serverId: '5f0c2b8e', serverName: 'Data "pipeline"', name: 'data-pipeline', timestamp: '2026-11-22T06:00:01.123Z' };
    const messages = ['plain', 'quotes " and \\ backslash', 'control \u0001\u001f\t', 'lone surrogate \ud800 end', '日本語 🙂', '</script>', ''];
    const variants = [
      { level: 'INFO', source: 'server' },
      { level: 'WARN', source: 'controller' },
      { level: 'INFO', source: 'server' },
    ] as const;
    for (const variant of variants) {
      for (const message of messages) {
        for (const server of [base, { ...base, serverId: 'other', serverName: 'Other\n' }]) {
          const entry = { ...server, ...variant, message };
          expect(frame(entry)).toBe(JSON.stringify({
            type: 'log',
            server_id: entry.serverId,
            server_name: entry.serverName,
            level: entry.level,
            source: entry.source,
            message: entry.message,
            timestamp: entry.timestamp,
          }));
        }
      }
    }
  });
});
