// What crosses an editor's WebSocket, read as it is relayed, to tell a person's input and the
// output of their work from the editor's own chatter (docs/idle.md has the measurements). One
// reader per direction of each relayed socket: an incremental WebSocket frame parser (RFC 6455)
// and, inside the frames' payload, VS Code's PersistentProtocol, a stream of messages each with a
// 13-byte header (type u8, id u32, ack u32, length u32). Of a Regular message's body only its
// first PREFIX_BYTES are looked at (they name the call it carries), unmasked into a fixed buffer;
// the rest is skipped, never copied or buffered.

/** VS Code's protocol message types (its ProtocolMessageType enum, in the ipc.net module of its base/parts/ipc). */
export const MESSAGE_TYPE = {
  None: 0, Regular: 1, Control: 2, Ack: 3, Disconnect: 5, ReplayRequest: 6, Pause: 7, Resume: 8, KeepAlive: 9,
} as const;

/** What is carried on a relayed WebSocket, from its upgrade request's URL. */
export type SocketProtocol = 'vscode-framed' | 'vscode-raw' | 'other';

/**
 * VS Code's remote connections (the workbench's management and extension host sockets) carry a
 * reconnection token; `skipWebSocketFrames=true` (not what a browser asks for) sends the protocol
 * without WebSocket frames. Anything else (an app the person runs, reached through the editor's
 * own port forwarding) is some other protocol.
 */
export function socketProtocol(url: string | undefined): SocketProtocol {
  const query = url?.indexOf('?') ?? -1;
  if (query < 0 || !url!.includes('reconnectionToken=', query)) return 'other';
  return url!.includes('skipWebSocketFrames=true', query) ? 'vscode-raw' : 'vscode-framed';
}

// Where the frame parser is.
const FRAME_HEAD = 0;
const FRAME_LENGTH = 1;
const FRAME_EXTENDED = 2;
const FRAME_MASK = 3;
const FRAME_PAYLOAD = 4;

/** How much of a Regular message's body is read: enough for the method, channel or event it carries. */
export const PREFIX_BYTES = 48;

/**
 * What a person's input looks like from the browser, measured on code-server's workbench: calls
 * to the extension host (a short string, its length byte first, then the name) when a document
 * changes, the cursor moves, an editor or tab opens or closes, or a terminal is typed in; and
 * the management connection's `$input` to a terminal. An idle workbench sends none of these
 * (only file stats and writes of its own state, telemetry pings, tunnel and window events).
 */
const INPUT_CALLS = [
  '$acceptModelChanged', '$acceptEditorPropertiesChanged', '$acceptDocumentsAndEditorsDelta', '$acceptTabOperation',
  '$acceptTerminalInteraction', '$input',
].map((name) => Buffer.from([name.length, ...Buffer.from(name, 'latin1')]));
/** A terminal's output, as the editor sends it to the tab: the pty host's data event, `{"id":1,"event":"…"}`. */
const OUTPUT_EVENT = Buffer.from(',"event":"', 'latin1');

/**
 * Whether a VS Code message counts (`prefix`: the first bytes of a Regular message's body, empty
 * for any other type): from the browser, a Regular message making one of INPUT_CALLS; from the
 * editor, one carrying a terminal's output. Keep-alives, acknowledgements, the handshake
 * (Control), Disconnect, ReplayRequest, Pause and Resume never count.
 */
export function countsAsUse(fromClient: boolean): (type: number, prefix: Buffer) => boolean {
  if (fromClient) {
    return (type, prefix) => {
      if (type !== MESSAGE_TYPE.Regular) return false;
      for (const call of INPUT_CALLS) if (prefix.indexOf(call) >= 0) return true;
      return false;
    };
  }
  return (type, prefix) => type === MESSAGE_TYPE.Regular && prefix.indexOf(OUTPUT_EVENT) >= 0;
}

const OPCODE_CONTINUATION = 0;
/** Opcodes 8 and above are control frames: close, ping, pong. */
const OPCODE_CONTROL = 8;
const HEADER_BYTES = 13;

/**
 * Reads one direction of a relayed editor WebSocket and says, for each chunk, whether it carried
 * a message that counts: from the browser, a person's input; from the editor, output.
 *  - VS Code's sockets: as `countsAsUse` says.
 *  - a compressed (permessage-deflate) data message on a VS Code socket cannot be read cheaply:
 *    it counts, so an editor is never stopped for want of reading its traffic (the proxy removes
 *    the offer on the upgrade, so this does not happen through it).
 *  - any other socket (an app the person runs, reached through the editor's port forwarding):
 *    each data message; pings, pongs and close frames do not.
 * Frame errors (a length beyond 2^53, reserved opcodes) are not the proxy's to judge: the bytes
 * are relayed as they are, and the reader counts what it can.
 */
export class EditorFrameReader {
  readonly #protocol: SocketProtocol;
  readonly #counts: (type: number, prefix: Buffer) => boolean;
  // The frame parser.
  #frame = FRAME_HEAD;
  #opcode = 0;
  /** The data message under way is compressed (RSV1 on its first frame). */
  #compressed = false;
  #masked = false;
  #extendedLeft = 0;
  #maskLeft = 0;
  readonly #mask = new Uint8Array(4);
  /** Payload bytes of the frame still to come, and how many came (the mask's phase). */
  #payloadLeft = 0;
  #payloadAt = 0;
  // VS Code's protocol, across frames.
  #headerAt = 0;
  #messageType = 0;
  #bodyLength = 0;
  #bodyLeft = 0;
  /** A Regular message's first body bytes: how many are wanted, and how many came. */
  readonly #prefix = Buffer.alloc(PREFIX_BYTES);
  #prefixWanted = 0;
  #prefixAt = 0;

  /**
   * `counts`: whether a VS Code message counts, from its type and (for a Regular message) the
   * first bytes of its body; by default `countsAsUse` for the direction. The browser's frames
   * are masked, the editor's are not; the reader follows each frame's own mask bit.
   */
  constructor(protocol: SocketProtocol, fromClient: boolean, counts: (type: number, prefix: Buffer) => boolean = countsAsUse(fromClient)) {
    this.#protocol = protocol;
    this.#counts = counts;
  }

  /** Reads a relayed chunk; true when it held (the start of) a message that counts. */
  accept(chunk: Uint8Array): boolean {
    if (this.#protocol === 'vscode-raw') return this.#messages(chunk, 0, chunk.length, false);
    let counted = false;
    let at = 0;
    const end = chunk.length;
    while (at < end) {
      if (this.#frame === FRAME_PAYLOAD) {
        const n = Math.min(this.#payloadLeft, end - at);
        if (this.#opcode < OPCODE_CONTROL && !this.#compressed && this.#protocol === 'vscode-framed') {
          if (this.#messages(chunk, at, at + n, this.#masked)) counted = true;
        }
        at += n;
        this.#payloadLeft -= n;
        this.#payloadAt += n;
        if (this.#payloadLeft === 0) this.#frame = FRAME_HEAD;
        continue;
      }
      const byte = chunk[at++];
      switch (this.#frame) {
        case FRAME_HEAD: {
          const opcode = byte & 0x0f;
          this.#opcode = opcode;
          if (opcode !== OPCODE_CONTINUATION && opcode < OPCODE_CONTROL) {
            // A data message starts: whether it is compressed is said by its first frame only.
            this.#compressed = (byte & 0x40) !== 0;
            if (this.#protocol === 'other' || this.#compressed) counted = true;
          }
          this.#frame = FRAME_LENGTH;
          break;
        }
        case FRAME_LENGTH: {
          this.#masked = (byte & 0x80) !== 0;
          const length = byte & 0x7f;
          this.#payloadLeft = length < 126 ? length : 0;
          this.#extendedLeft = length === 126 ? 2 : length === 127 ? 8 : 0;
          this.#afterLength();
          break;
        }
        case FRAME_EXTENDED:
          // Big-endian; lengths past 2^53 lose precision, and no editor sends such a frame.
          this.#payloadLeft = this.#payloadLeft * 256 + byte;
          if (--this.#extendedLeft === 0) this.#afterLength();
          break;
        case FRAME_MASK:
          this.#mask[4 - this.#maskLeft] = byte;
          if (--this.#maskLeft === 0) this.#startPayload();
          break;
      }
    }
    return counted;
  }

  #afterLength(): void {
    if (this.#extendedLeft > 0) {
      this.#frame = FRAME_EXTENDED;
    } else if (this.#masked) {
      this.#maskLeft = 4;
      this.#frame = FRAME_MASK;
    } else {
      this.#startPayload();
    }
  }

  #startPayload(): void {
    this.#payloadAt = 0;
    this.#frame = this.#payloadLeft > 0 ? FRAME_PAYLOAD : FRAME_HEAD;
  }

  /** VS Code's messages in payload bytes chunk[from, to): headers read, a Regular body's first bytes kept, the rest skipped. */
  #messages(chunk: Uint8Array, from: number, to: number, masked: boolean): boolean {
    let counted = false;
    let at = from;
    while (at < to) {
      if (this.#bodyLeft > 0) {
        let n = Math.min(this.#bodyLeft, to - at);
        if (this.#prefixAt < this.#prefixWanted) {
          n = Math.min(n, this.#prefixWanted - this.#prefixAt);
          for (let i = at; i < at + n; i++) {
            this.#prefix[this.#prefixAt++] = masked ? chunk[i] ^ this.#mask[(this.#payloadAt + i - from) & 3] : chunk[i];
          }
          if (this.#prefixAt === this.#prefixWanted && this.#judge()) counted = true;
        }
        this.#bodyLeft -= n;
        at += n;
        continue;
      }
      const byte = masked ? chunk[at] ^ this.#mask[(this.#payloadAt + at - from) & 3] : chunk[at];
      at++;
      const index = this.#headerAt++;
      if (index === 0) {
        this.#messageType = byte;
        this.#bodyLength = 0;
      } else if (index >= 9) {
        this.#bodyLength = this.#bodyLength * 256 + byte;
      }
      if (this.#headerAt === HEADER_BYTES) {
        this.#headerAt = 0;
        this.#bodyLeft = this.#bodyLength;
        this.#prefixAt = 0;
        this.#prefixWanted = this.#messageType === MESSAGE_TYPE.Regular ? Math.min(PREFIX_BYTES, this.#bodyLength) : 0;
        if (this.#prefixWanted === 0 && this.#judge()) counted = true;
      }
    }
    return counted;
  }

  /** Whether the message whose header (and prefix) was just read counts. */
  #judge(): boolean {
    const prefix = this.#prefixWanted === PREFIX_BYTES ? this.#prefix : this.#prefix.subarray(0, this.#prefixWanted);
    return this.#counts(this.#messageType, prefix);
  }
}
