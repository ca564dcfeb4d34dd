// The heartbeat read is also the running editor's health probe: one slow answer is not a failure,
// UNANSWERED_READS in a row are, and the first answer after them is news again.
import { expect, it } from 'vitest';
import { HeartbeatReader, UNANSWERED_READS } from '../../src/controller/heartbeats.ts';
import type { HealthResult } from '../../src/runtime/health.ts';

it('tells a running editor\'s health only after reads in a row go unanswered, and again when it answers', async () => {
  const answers: boolean[] = [];
  const told: Array<[string, boolean]> = [];
  let running = true;
  const reader = new HeartbeatReader({
    running: () => [['box', { host: '127.0.0.1', port: 1 }]],
    stillRunning: () => running,
    intervalMs: () => 1000,
    onHealth: (name, answered) => told.push([name, answered]),
    health: async (): Promise<HealthResult> => ({ ok: answers.shift() ?? true }),
  });
  answers.push(true, false, true);
  for (let i = 0; i < 3; i++) await reader.readOnce();
  // Answers are told (the controller ignores those that change nothing); one miss between them is not.
  expect(told).toEqual([['box', true], ['box', true]]);

  told.length = 0;
  answers.push(...Array(UNANSWERED_READS).fill(false), true);
  for (let i = 0; i <= UNANSWERED_READS; i++) await reader.readOnce();
  expect(told).toEqual([['box', false], ['box', true]]);

  // An editor that stopped meanwhile is not judged by what its port said.
  told.length = 0;
  running = false;
  answers.push(...Array(UNANSWERED_READS).fill(false));
  for (let i = 0; i < UNANSWERED_READS; i++) await reader.readOnce();
  expect(told).toEqual([]);
});
