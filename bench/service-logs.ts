// The log fan-out benchmark against the real service: lines appended to a running editor's
// output file, followed by 10 WebSocket clients on /ws/logs/{id}.
import { join } from 'node:path';
import { benchLogFanout } from './logs.ts';
import { benchPorts, startBenchService } from './harness.ts';

export async function benchLogsThroughService(editorBin: string, durationSec: number, offset: number) {
  const service = await startBenchService(editorBin, benchPorts(offset));
  try {
    const { id } = await service.call('POST', '/servers', { name: 'log fanout' });
    await service.call('POST', `/servers/${id}/start`);
    const { manifest } = await service.call('GET', `/servers/${id}`);
    return await benchLogFanout({
      wsUrl: `${service.url.replace('http', 'ws')}/ws/logs/${id}`,
      editorOut: join(service.dataDir, 'logs', manifest, 'editor.out'),
      durationSec,
      clients: 10,
      linesPerSec: 10_000,
      serviceRssMb: () => service.rssMb(),
    });
  } finally {
    await service.close();
  }
}
