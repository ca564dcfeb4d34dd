// The proxy reads an editor's WebSocket messages for an observer that asks (idle tracking): a
// person's input and a terminal's output count, the workbench's own calls, keep-alives and
// acknowledgements do not; the
// browser's compression offer is taken off the upgrade so the frames can be read; every byte
// still arrives as it was sent.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { ProxyObserver } from '../../src/proxy/index.ts';
import { MESSAGE_TYPE } from '../../src/proxy/editor-frames.ts';
import { extensionHostCall, managementEvent, protocolMessage as message } from '../helpers/vscode-messages.ts';
import { eventually } from '../helpers/wait.ts';
import { opened } from '../helpers/net.ts';
import { startService, startTarget, type Service, type Target } from './fixtures.ts';

const VSCODE_PATH = '/stable-0123abc?reconnectionToken=5f0c&reconnection=false&skipWebSocketFrames=false';

let target: Target;
let service: Service | undefined;
let counted: Array<'input' | 'output'>;
let bytesBack: number;

const countingObserver = (): ProxyObserver => ({
  request: () => {},
  socketOpened: () => {},
  socketData: (_port, bytes, fromClient) => {
    if (!fromClient) bytesBack += bytes;
  },
  socketClosed: () => {},
  socketMessage: (port, fromClient) => {
    expect(port).toBe(target.port);
    counted.push(fromClient ? 'input' : 'output');
  },
});

beforeEach(async () => {
  target = await startTarget();
  counted = [];
  bytesBack = 0;
});
afterEach(async () => {
  await service?.close();
  await target.close();
});

/** Sends `data` and waits for its echo (the target echoes binary messages as they are). */
async function roundTrip(socket: WebSocket, data: Buffer): Promise<Buffer> {
  const echo = new Promise<Buffer>((resolve) => socket.once('message', (reply) => resolve(reply as Buffer)));
  socket.send(data);
  return echo;
}

describe('reading editor messages at the proxy', () => {
  it("counts a person's input and a terminal's output, and not the workbench's own calls, keep-alives or acknowledgements", async () => {
    service = await startService((port) => port === target.port, { observer: countingObserver() });
    // ws offers permessage-deflate, as browsers do.
    const socket = await opened(new WebSocket(`ws://127.0.0.1:${service.port}/vscode/${target.port}${VSCODE_PATH}`));
    try {
      expect(target.upgrades[0]['sec-websocket-extensions']).toBeUndefined();
      for (let i = 0; i < 5; i++) {
        const sent = Buffer.concat([message(MESSAGE_TYPE.KeepAlive), message(MESSAGE_TYPE.Ack)]);
        expect(await roundTrip(socket, sent)).toEqual(sent);
      }
      // The workbench's own calls, each way (the target echoes them): not use.
      const own = message(MESSAGE_TYPE.Regular, extensionHostCall('$onDidTunnelsChange'));
      expect(await roundTrip(socket, own)).toEqual(own);
      expect(counted).toEqual([]);
      // A person typing: input on the way in; the same call coming back is not output.
      const typed = message(MESSAGE_TYPE.Regular, extensionHostCall('$acceptModelChanged', '[{"text":"w"}]'));
      expect(await roundTrip(socket, typed)).toEqual(typed);
      await eventually(() => expect(counted).toEqual(['input']));
      // A terminal printing: output on the way back (and no input on the way in).
      const printed = message(MESSAGE_TYPE.Regular, managementEvent('{"id":1,"event":"Sun Nov 29\\r\\n"}'));
      expect(await roundTrip(socket, printed)).toEqual(printed);
      await eventually(() => expect(counted).toEqual(['input', 'output']));
      // A large edit, split over many chunks: counted once, and every byte back.
      const before = bytesBack;
      const pasted = message(MESSAGE_TYPE.Regular, extensionHostCall('$acceptModelChanged', JSON.stringify({ text: 'x'.repeat(3_000_000) })));
      expect((await roundTrip(socket, pasted)).equals(pasted)).toBe(true);
      await eventually(() => expect(counted).toEqual(['input', 'output', 'input']));
      expect(bytesBack - before).toBeGreaterThanOrEqual(pasted.length);
    } finally {
      socket.close();
    }
  });

  it("counts every data message on another protocol's socket", async () => {
    service = await startService((port) => port === target.port, { observer: countingObserver() });
    const socket = await opened(new WebSocket(`ws://127.0.0.1:${service.port}/vscode/${target.port}/proxy/3000/hmr`));
    try {
      const reply = new Promise((resolve) => socket.once('message', resolve));
      socket.send('hello');
      expect(String(await reply)).toBe('echo /proxy/3000/hmr: hello');
      await eventually(() => expect(counted).toEqual(['input', 'output']));
    } finally {
      socket.close();
    }
  });

  it('leaves the compression offer and reads nothing for an observer that does not ask', async () => {
    const { socketMessage: _unused, ...plain } = countingObserver();
    service = await startService((port) => port === target.port, { observer: plain });
    const socket = await opened(new WebSocket(`ws://127.0.0.1:${service.port}/vscode/${target.port}${VSCODE_PATH}`));
    try {
      expect(target.upgrades[0]['sec-websocket-extensions']).toContain('permessage-deflate');
      const typed = message(MESSAGE_TYPE.Regular, extensionHostCall('$acceptModelChanged'));
      expect(await roundTrip(socket, typed)).toEqual(typed);
      expect(counted).toEqual([]);
    } finally {
      socket.close();
    }
  });
});
