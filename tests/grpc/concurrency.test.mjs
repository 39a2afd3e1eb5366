// Concurrent calls on one descriptor (memory backend). The Redis variant is in redis.test.mjs.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, unique, RlsClient } from './harness.mjs';

let server;
before(async () => {
  server = await startServer({
    rules: {
      'conc.yaml': `
domain: conc
descriptors:
  - key: c
    rate_limit: {unit: hour, requests_per_unit: 50}
  - key: g
    rate_limit: {unit: hour, requests_per_unit: 50, algorithm: gcra}
`,
    },
  });
});
after(async () => {
  if (server) await server.stop();
});

// A deadline only so that a hang fails: under ThreadSanitizer, on a loaded 2-core machine, a
// new channel's first calls can take several seconds (this test counts answers, it never times
// them). Each channel is connected first (a health check), so the 200 calls race each other,
// not the connection setup.
const kDeadlineMs = 60000;

async function hammer(clients, key) {
  await Promise.all(clients.map((c) => c.healthCheck('', { deadlineMs: kDeadlineMs })));
  const v = unique(key);
  const calls = Array.from({ length: 200 }, (_, i) =>
    clients[i % clients.length].check('conc', [[key, v]], { deadlineMs: kDeadlineMs }),
  );
  const results = await Promise.all(calls);
  return {
    ok: results.filter((r) => r.overall_code === 'OK').length,
    over: results.filter((r) => r.overall_code === 'OVER_LIMIT').length,
  };
}

describe('concurrency (memory backend)', () => {
  it('200 concurrent calls on one channel, limit 50 → exactly 50 OK', async () => {
    assert.deepEqual(await hammer([server.rls], 'c'), { ok: 50, over: 150 });
  });

  it('200 concurrent calls over 8 channels, limit 50 → exactly 50 OK', async () => {
    const clients = Array.from({ length: 8 }, () => new RlsClient(`127.0.0.1:${server.grpcPort}`));
    try {
      assert.deepEqual(await hammer(clients, 'c'), { ok: 50, over: 150 });
    } finally {
      for (const c of clients) c.close();
    }
  });

  it('gcra: 200 concurrent calls, limit 50 → exactly 50 OK', async () => {
    assert.deepEqual(await hammer([server.rls], 'g'), { ok: 50, over: 150 });
  });
});
