// Which Host and Origin names the service answers to without identity, whatever address it is bound to.
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { AllowedHosts } from '../../src/api/allowed-hosts.ts';

const request = (headers: Record<string, string>, method: string) => ({ method, headers, socket: { localPort: 8000 } }) as unknown as IncomingMessage;
/** What an editor's path gets: the Host check, then the Origin check. */
const code = (hosts: AllowedHosts, headers: Record<string, string>, upgrade = false, method = 'GET') => {
  const req = request(headers, method);
  return (hosts.hostRefusal(req) ?? hosts.originRefusal(req, upgrade))?.code ?? 'allowed';
};

describe('allowed hosts', () => {
  it('bound to one address: loopback names, that address and the configured names', () => {
    const hosts = new AllowedHosts({ boundHost: '10.0.0.5', extra: ['devbox.example', '.corp.example', 'fd00::1'] });
    for (const host of ['localhost:8000', 'a.b.localhost', '127.0.0.1', '[::1]:8000', '10.0.0.5:8000', 'DEVBOX.example', 'x.corp.example', 'corp.example', '[fd00::1]:8000']) {
      expect(code(hosts, { host }), host).toBe('allowed');
    }
    for (const host of ['10.0.0.6', '192.168.1.5', 'attacker.example', 'devbox.example.attacker.example', 'localhost.attacker.example', '', '[::1', 'a:b']) {
      expect(code(hosts, { host }), host).toBe('HOST_NOT_ALLOWED');
    }
    expect(code(hosts, {}), 'no Host (HTTP/1.0)').toBe('allowed');
  });

  it('bound to every address: also any IP address, which no rebinding page can send, but no other name', () => {
    for (const boundHost of ['0.0.0.0', '::']) {
      const hosts = new AllowedHosts({ boundHost });
      for (const host of ['192.168.1.5:8000', '[fe80::1]:8000', 'localhost']) expect(code(hosts, { host }), host).toBe('allowed');
      for (const host of ['my-laptop', 'attacker.example', '0.0.0.0.attacker.example']) expect(code(hosts, { host }), host).toBe('HOST_NOT_ALLOWED');
    }
  });

  it("checks the Origin too (for editors), of every request but a preflight", () => {
    const hosts = new AllowedHosts({ boundHost: '127.0.0.1' });
    const host = 'localhost:8000';
    expect(code(hosts, { host, origin: 'http://localhost:8000' }, true)).toBe('allowed');
    expect(code(hosts, { host, origin: 'https://app.localhost' }, true)).toBe('allowed');
    for (const origin of ['http://attacker.example', 'null', 'file://', 'chrome-extension://abc', 'not a url']) {
      expect(code(hosts, { host, origin }, true), origin).toBe('ORIGIN_NOT_ALLOWED');
    }
    expect(code(hosts, { host, origin: 'http://attacker.example' }, false)).toBe('ORIGIN_NOT_ALLOWED');
    expect(code(hosts, { host, origin: 'http://localhost:5173' }, false)).toBe('allowed');
    expect(code(hosts, { host, origin: 'http://attacker.example' }, false, 'OPTIONS')).toBe('allowed');
    expect(code(hosts, { host }, false, 'POST')).toBe('allowed');
  });
});
