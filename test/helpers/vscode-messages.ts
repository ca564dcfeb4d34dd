// VS Code's protocol messages as code-server's workbench sends them (measured by
// scripts/probe-editor-traffic.ts): built by hand for tests of what the proxy reads.

/** One PersistentProtocol message: its 13-byte header (type, id, ack, length) and body. */
export function protocolMessage(type: number, body: Buffer | number = 0, id = 7, ack = 3): Buffer {
  const data = typeof body === 'number' ? Buffer.alloc(body, 0x01) : body;
  const header = Buffer.alloc(13);
  header[0] = type;
  header.writeUInt32BE(id, 1);
  header.writeUInt32BE(ack, 5);
  header.writeUInt32BE(data.length, 9);
  return Buffer.concat([header, data]);
}

/** A Regular message's body: a call to the extension host (RPCProtocol: type 1, request id, rpc id, method as a short string, JSON arguments). */
export function extensionHostCall(method: string, args = '[]'): Buffer {
  const head = Buffer.alloc(6);
  head[0] = 1;
  head.writeUInt32BE(42, 1);
  head[5] = 17;
  const argBytes = Buffer.from(args);
  const argLength = Buffer.alloc(4);
  argLength.writeUInt32BE(argBytes.length);
  return Buffer.concat([head, Buffer.from([method.length]), Buffer.from(method, 'latin1'), argLength, argBytes]);
}

/** A Regular message's body: a call on the management connection (VS Code's IPC: [100, id, channel, name] then the argument). */
export function managementCall(channel: string, name: string, arg = '{}'): Buffer {
  const text = (s: string) => Buffer.concat([Buffer.from([1, s.length]), Buffer.from(s, 'latin1')]);
  return Buffer.concat([Buffer.from([4, 4, 6, 100, 6, 9]), text(channel), text(name), Buffer.from([5, arg.length]), Buffer.from(arg)]);
}

/** A Regular message's body: an event the editor fires to the tab (VS Code's IPC: [204, id] then the data as JSON). */
export function managementEvent(json: string): Buffer {
  return Buffer.concat([Buffer.from([4, 2, 6, 204, 1, 6, 3, 5, json.length]), Buffer.from(json)]);
}
