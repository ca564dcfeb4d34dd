// The PNG reader the browser tests check screenshots with: images written here with each of the
// five row filters, in RGB and RGBA, read back to the same pixels; a kind it cannot read is refused.
import { crc32, deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { colourDistance, decodePng, parseColour, pixelAt } from './png.ts';

function chunk(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(body.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), body])) >>> 0, 0);
  return Buffer.concat([head, body, crc]);
}

const paeth = (a: number, b: number, c: number) => {
  const p = a + b - c;
  const pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
};

/** A PNG of `pixels` (rows of bytes, `channels` a pixel), row r filtered with filter r % 5. */
function encode(width: number, height: number, channels: 3 | 4, pixels: Uint8Array, options: { depth?: number; interlace?: number } = {}): Buffer {
  const stride = width * channels;
  const rows: Buffer[] = [];
  for (let r = 0; r < height; r++) {
    const filter = r % 5;
    const line = pixels.subarray(r * stride, (r + 1) * stride);
    const above = r > 0 ? pixels.subarray((r - 1) * stride, r * stride) : new Uint8Array(stride);
    const out = Buffer.alloc(stride + 1);
    out[0] = filter;
    for (let i = 0; i < stride; i++) {
      const left = i >= channels ? line[i - channels] : 0;
      const up = above[i];
      const upLeft = i >= channels ? above[i - channels] : 0;
      const predictor = [0, left, up, (left + up) >> 1, paeth(left, up, upLeft)][filter];
      out[i + 1] = (line[i] - predictor) & 0xff;
    }
    rows.push(out);
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = options.depth ?? 8;
  header[9] = channels === 4 ? 6 : 2;
  header[12] = options.interlace ?? 0;
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header), chunk('IDAT', deflateSync(Buffer.concat(rows))), chunk('IEND', Buffer.alloc(0)),
  ]);
}

function randomPixels(length: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(length);
  let state = seed;
  for (let i = 0; i < length; i++) {
    state = (state * 1103515245 + 12345) >>> 0;
    bytes[i] = state >>> 24;
  }
  return bytes;
}

describe('the PNG reader', () => {
  for (const channels of [3, 4] as const) {
    it(`reads ${channels === 4 ? 'RGBA' : 'RGB'} rows written with every filter back to their pixels`, () => {
      const width = 7, height = 10;
      const pixels = randomPixels(width * height * channels, channels);
      const image = decodePng(encode(width, height, channels, pixels));
      expect([image.width, image.height]).toEqual([width, height]);
      for (let y = 0; y < height; y++) {
        for (let x = 0; x < width; x++) {
          const at = (y * width + x) * channels;
          expect(pixelAt(image, x, y)).toEqual([pixels[at], pixels[at + 1], pixels[at + 2], channels === 4 ? pixels[at + 3] : 255]);
        }
      }
    });
  }

  it('refuses what it does not read: 16-bit, interlaced, not a PNG', () => {
    const pixels = randomPixels(2 * 2 * 3, 9);
    expect(() => decodePng(encode(2, 2, 3, pixels, { depth: 16 }))).toThrow(/8-bit/);
    expect(() => decodePng(encode(2, 2, 3, pixels, { interlace: 1 }))).toThrow(/interlac/);
    expect(() => decodePng(Buffer.from('GIF89a'))).toThrow(/not a PNG/);
  });

  it('reads colours as the page computes them, and says how far apart two are', () => {
    expect(parseColour('rgb(31, 95, 191)')).toEqual([31, 95, 191]);
    expect(parseColour(' #1f5fbf')).toEqual([31, 95, 191]);
    expect(() => parseColour('blue')).toThrow(/not a colour/);
    expect(colourDistance([31, 95, 191], [40, 90, 180])).toBe(11);
  });
});
