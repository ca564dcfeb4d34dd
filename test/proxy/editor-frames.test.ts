// The reader of relayed editor WebSockets: hand-built RFC 6455 frames carrying VS Code's protocol
// messages, read whole, split at every byte boundary and byte by byte, masked and unmasked,
// fragmented, with 7-bit, 16-bit and 64-bit lengths; what it reports must not depend on how the
// bytes were cut.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { extensionHostCall, managementCall, managementEvent, protocolMessage } from '../helpers/vscode-messages.ts';
import { countsAsUse, EditorFrameReader, MESSAGE_TYPE, PREFIX_BYTES, socketProtocol, type SocketProtocol } from '../../src/proxy/editor-frames.ts';

const { Regular, Control, Ack, KeepAlive, Pause } = MESSAGE_TYPE;

const message = protocolMessage;

interface FrameOptions { opcode?: number; fin?: boolean; rsv1?: boolean; mask?: boolean; length?: 'short' | '16' | '64' }

/** One WebSocket frame around `payload`: masked with a random key when `mask`, its length in the form asked (else the shortest). */
function frame(payload: Buffer, { opcode = 2, fin = true, rsv1 = false, mask = false, length }: FrameOptions = {}): Buffer {
  const form = length ?? (payload.length < 126 ? 'short' : payload.length < 65536 ? '16' : '64');
  const head = [(fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode];
  const maskBit = mask ? 0x80 : 0;
  let extended = Buffer.alloc(0);
  if (form === 'short') head.push(maskBit | payload.length);
  else if (form === '16') {
    head.push(maskBit | 126);
    extended = Buffer.alloc(2);
    extended.writeUInt16BE(payload.length);
  } else {
    head.push(maskBit | 127);
    extended = Buffer.alloc(8);
    extended.writeBigUInt64BE(BigInt(payload.length));
  }
  if (!mask) return Buffer.concat([Buffer.from(head), extended, payload]);
  const key = randomBytes(4);
  const masked = Buffer.from(payload.map((byte, i) => byte ^ key[i & 3]));
  return Buffer.concat([Buffer.from(head), extended, key, masked]);
}

/** What a reader saw of `bytes` given in `chunks` cut at `cuts`: the message types it read and the chunks it said counted. */
function read(protocol: SocketProtocol, bytes: Buffer, cuts: number[] = []): { types: number[]; counted: number } {
  const types: number[] = [];
  const reader = new EditorFrameReader(protocol, true, (type) => {
    types.push(type);
    return type === Regular;
  });
  let counted = 0;
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    if (reader.accept(bytes.subarray(from, cut))) counted++;
    from = cut;
  }
  return { types, counted };
}

/** Every way of cutting `bytes` in two, and byte by byte: the types read are always `expected`. */
function expectTypesHoweverCut(protocol: SocketProtocol, bytes: Buffer, expected: number[]): void {
  expect(read(protocol, bytes).types).toEqual(expected);
  for (let cut = 1; cut < bytes.length; cut++) expect(read(protocol, bytes, [cut]).types, `cut at ${cut}`).toEqual(expected);
  expect(read(protocol, bytes, Array.from({ length: bytes.length - 1 }, (_, i) => i + 1)).types).toEqual(expected);
}

describe('the editor frame reader', () => {
  it("reads VS Code's messages in the editor's unmasked frames however the bytes are cut", () => {
    const bytes = Buffer.concat([
      frame(message(KeepAlive)),
      frame(Buffer.concat([message(Regular, 5), message(Ack)])),
      frame(message(Regular, 40)),
    ]);
    expectTypesHoweverCut('vscode-framed', bytes, [KeepAlive, Regular, Ack, Regular]);
  });

  it("reads the browser's masked frames however the bytes are cut", () => {
    const bytes = Buffer.concat([
      frame(message(Control, Buffer.from('{"type":"auth"}')), { mask: true }),
      frame(Buffer.concat([message(KeepAlive), message(Regular, 9), message(Pause)]), { mask: true }),
    ]);
    expectTypesHoweverCut('vscode-framed', bytes, [Control, KeepAlive, Regular, Pause]);
  });

  it('reads a message split over fragments and over separate WebSocket messages, with a ping between fragments', () => {
    const one = message(Regular, 30);
    const two = message(KeepAlive);
    const bytes = Buffer.concat([
      frame(one.subarray(0, 6), { fin: false, mask: true }),
      // A control frame may come between a message's fragments; its payload is not VS Code's.
      frame(message(Regular, 2), { opcode: 9, mask: true }),
      frame(one.subarray(6, 20), { opcode: 0, fin: false, mask: true }),
      frame(Buffer.concat([one.subarray(20), two.subarray(0, 4)]), { opcode: 0, mask: true }),
      frame(two.subarray(4), { mask: true }),
    ]);
    expectTypesHoweverCut('vscode-framed', bytes, [Regular, KeepAlive]);
  });

  it('follows 16-bit and 64-bit payload lengths, skipping long bodies without reading them', () => {
    const frames = [
      frame(message(Regular, 300), { mask: true }),
      frame(message(Ack), { length: '16', mask: true }),
      frame(message(Regular, 70_000)),
      frame(message(KeepAlive), { length: '64' }),
      frame(Buffer.concat([message(Regular, 200_000), message(Ack)]), { mask: true }),
    ];
    const bytes = Buffer.concat(frames);
    const expected = [Regular, Ack, Regular, KeepAlive, Regular, Ack];
    expect(read('vscode-framed', bytes).types).toEqual(expected);
    // Every cut would be 270,000 reads: every cut within 20 bytes of a frame's start instead.
    let start = 0;
    for (const one of frames) {
      for (let cut = Math.max(1, start - 20); cut < Math.min(bytes.length, start + 20); cut++) {
        expect(read('vscode-framed', bytes, [cut]).types, `cut at ${cut}`).toEqual(expected);
      }
      start += one.length;
    }
  });

  it('says a chunk counts when it holds a Regular message, and not for keep-alives, acks, pings, pongs or close', () => {
    const quiet = Buffer.concat([
      frame(message(KeepAlive), { mask: true }),
      frame(message(Ack), { mask: true }),
      frame(Buffer.alloc(4), { opcode: 9, mask: true }),
      frame(Buffer.alloc(0), { opcode: 10, mask: true }),
      frame(Buffer.from([0x03, 0xe8]), { opcode: 8, mask: true }),
    ]);
    expect(read('vscode-framed', quiet).counted).toBe(0);
    expect(read('vscode-framed', Buffer.concat([quiet, frame(message(Regular, 3), { mask: true })])).counted).toBe(1);
    // Counted once, in the chunk where its header completes.
    const regular = frame(message(Regular, 3), { mask: true });
    for (let cut = 1; cut < regular.length; cut++) expect(read('vscode-framed', regular, [cut]).counted).toBe(1);
  });

  it('counts a compressed message without reading it, and its continuation frames not again', () => {
    const bytes = Buffer.concat([
      frame(randomBytes(40), { rsv1: true, fin: false, mask: true }),
      frame(randomBytes(40), { opcode: 0, mask: true }),
    ]);
    expect(read('vscode-framed', bytes)).toEqual({ types: [], counted: 1 });
    expect(read('vscode-framed', bytes, [50]).counted).toBe(1);
  });

  it("reads VS Code's protocol without frames when the socket skips them", () => {
    const bytes = Buffer.concat([message(Control, 20), message(KeepAlive), message(Regular, 100), message(Ack)]);
    expectTypesHoweverCut('vscode-raw', bytes, [Control, KeepAlive, Regular, Ack]);
  });

  it("counts each data message on another protocol's socket, and no control frame", () => {
    const first = Buffer.concat([
      frame(Buffer.from('hello'), { opcode: 1, fin: false, mask: true }),
      frame(Buffer.from(' there'), { opcode: 0, mask: true }),
      frame(Buffer.alloc(0), { opcode: 9, mask: true }),
    ]);
    const second = frame(Buffer.from('again'), { opcode: 2 });
    const bytes = Buffer.concat([first, second]);
    expect(read('other', bytes).types).toEqual([]);
    // One chunk holding both messages counts once; a chunk for each, once each; a fragment not again.
    expect(read('other', bytes).counted).toBe(1);
    expect(read('other', bytes, [first.length]).counted).toBe(2);
    expect(read('other', first, [first.length - 6 - 12]).counted).toBe(1);
    expect(read('other', frame(Buffer.alloc(3), { opcode: 10 })).counted).toBe(0);
  });

  it("tells VS Code's sockets from others by their upgrade URL", () => {
    expect(socketProtocol('/stable-53c2f32?reconnectionToken=78da&reconnection=false&skipWebSocketFrames=false')).toBe('vscode-framed');
    expect(socketProtocol('/stable-53c2f32?reconnectionToken=78da&reconnection=true&skipWebSocketFrames=true')).toBe('vscode-raw');
    expect(socketProtocol('/proxy/3000/socket?token=1')).toBe('other');
    expect(socketProtocol('/reconnectionToken=1/')).toBe('other');
    expect(socketProtocol(undefined)).toBe('other');
  });

  describe('what counts as use', () => {
    /** The messages of `bytes` that counted for a reader of the direction, read in chunks cut at `cuts`. */
    function counted(fromClient: boolean, bytes: Buffer, cuts: number[] = []): number {
      let count = 0;
      const judge = countsAsUse(fromClient);
      const reader = new EditorFrameReader('vscode-framed', fromClient, (type, prefix) => {
        const counts = judge(type, prefix);
        if (counts) count++;
        return counts;
      });
      let from = 0;
      for (const cut of [...cuts, bytes.length]) {
        reader.accept(bytes.subarray(from, cut));
        from = cut;
      }
      return count;
    }
    const everyCut = (bytes: Buffer) => Array.from({ length: bytes.length - 1 }, (_, i) => [i + 1]);

    it("counts the browser's edits, cursor moves, editors opened and terminal typing, however the bytes are cut", () => {
      const input = [
        extensionHostCall('$acceptModelChanged', '[{"$mid":1,"path":"/w/notes.txt"},{"changes":[{"text":"w"}]}]'),
        extensionHostCall('$acceptEditorPropertiesChanged', '["vs.editor.ICodeEditor:2",{"selections":null}]'),
        extensionHostCall('$acceptDocumentsAndEditorsDelta', '[{"addedDocuments":[]}]'),
        extensionHostCall('$acceptTabOperation', '[{"groupId":0,"index":0}]'),
        extensionHostCall('$acceptTerminalInteraction', '[1]'),
        managementCall('remoteterminal', '$input', '[1,"ls\r"]'),
      ];
      const bytes = Buffer.concat(input.map((body) => frame(message(MESSAGE_TYPE.Regular, body), { mask: true })));
      expect(counted(true, bytes)).toBe(input.length);
      for (const cut of everyCut(bytes)) expect(counted(true, bytes, cut), `cut at ${cut}`).toBe(input.length);
      // The same calls from the editor are not its output.
      expect(counted(false, Buffer.concat(input.map((body) => frame(message(MESSAGE_TYPE.Regular, body)))))).toBe(0);
    });

    it("does not count an idle workbench's own traffic", () => {
      const idle = [
        extensionHostCall('$onDidTunnelsChange'),
        extensionHostCall('$onDidChangeWindowActive', '[false]'),
        extensionHostCall('$onFileEvent', '[{"created":[],"changed":[]}]'),
        // An acknowledgement and an empty reply of the extension host's protocol.
        Buffer.from([5, 0, 0, 0, 9]),
        Buffer.from([7, 0, 0, 0, 9]),
        managementCall('remoteFilesystem', 'stat', '[{"$mid":1,"path":"/w"}]'),
        managementCall('remoteFilesystem', 'writeFile', '[{"$mid":1,"external":"vscode-userdata:/state"}]'),
        managementCall('telemetry', 'ping'),
        managementCall('agentHostProxy', 'send', '{"jsonrpc":"2.0","method":"x"}'),
        // A name that only starts like an input call.
        managementCall('remoteterminal', '$inputs'),
      ];
      const bytes = Buffer.concat([
        ...idle.map((body) => frame(message(MESSAGE_TYPE.Regular, body), { mask: true })),
        frame(Buffer.concat([message(MESSAGE_TYPE.KeepAlive), message(MESSAGE_TYPE.Ack)]), { mask: true }),
      ]);
      expect(counted(true, bytes)).toBe(0);
    });

    it("counts a terminal's output from the editor, and not its other events and replies", () => {
      const output = managementEvent('{"id":1,"event":"Sun Nov 29 20:59:29 UTC 2026\r\n"}');
      const quiet = [
        managementEvent('{"jsonrpc":"2.0","id":15,"result":null}'),
        managementEvent('{"id":1,"property":{"type":"title","value":"bash"}}'),
        Buffer.from([4, 2, 6, 201, 1, 6, 3, 5, 2, 123, 125]),
      ];
      const bytes = Buffer.concat([...quiet, output].map((body) => frame(message(MESSAGE_TYPE.Regular, body))));
      expect(counted(false, bytes)).toBe(1);
      for (const cut of everyCut(bytes)) expect(counted(false, bytes, cut), `cut at ${cut}`).toBe(1);
      expect(counted(true, Buffer.concat([output].map((body) => frame(message(MESSAGE_TYPE.Regular, body), { mask: true }))))).toBe(0);
    });

    it('reads no more of a long message than its first bytes, and finds what follows it', () => {
      const long = extensionHostCall('$acceptModelChanged', JSON.stringify({ text: 'x'.repeat(100_000) }));
      const short = extensionHostCall('$acceptTabOperation');
      const bytes = Buffer.concat([frame(message(MESSAGE_TYPE.Regular, long), { mask: true }), frame(message(MESSAGE_TYPE.Regular, short), { mask: true })]);
      const prefixes: number[] = [];
      const reader = new EditorFrameReader('vscode-framed', true, (type, prefix) => {
        prefixes.push(prefix.length);
        return countsAsUse(true)(type, prefix);
      });
      expect(reader.accept(bytes)).toBe(true);
      expect(prefixes).toEqual([PREFIX_BYTES, short.length]);
      expect(short.length).toBeLessThan(PREFIX_BYTES);
    });
  });
});
