// The rate limit service on a real redis-server: the local over-limit cache, concurrency,
// and what a call answers once Redis is gone (rls.on_error).

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, startRedis, unique, waitFor } from './harness.mjs';

const RULES = {
  'redis.yaml': `
domain: redis
descriptors:
  - key: cached
    rate_limit: {unit: hour, requests_per_unit: 3}
  - key: conc
    rate_limit: {unit: hour, requests_per_unit: 50}
`,
};

let redis;
let server; // on_error default
let allowServer; // rls.on_error: allow

before(async () => {
  redis = await startRedis();
  const backend = { url: redis.url, over_limit_cache: 1000, timeout: '1s' };
  const [a, b] = await Promise.allSettled([
    startServer({ rules: RULES, config: { backend, server: { access_log: 'off' } } }),
    startServer({ rules: RULES, config: { backend, rls: { on_error: 'allow' } } }),
  ]);
  if (a.status === 'fulfilled') server = a.value;
  if (b.status === 'fulfilled') allowServer = b.value;
  if (a.status === 'rejected') throw a.reason;
  if (b.status === 'rejected') throw b.reason;
});

after(async () => {
  await Promise.all([server?.stop(), allowServer?.stop(), redis?.stop()]);
});

describe('redis backend', () => {
  it('counts in Redis, and the local over-limit cache answers without Redis once over', async () => {
    const v = unique('cached');
    const callsAtStart = await redis.scriptCalls();
    for (let i = 1; i <= 3; i += 1) {
      const r = await server.rls.check('redis', [['cached', v]]);
      assert.equal(r.overall_code, 'OK');
      assert.equal(r.statuses[0].limit_remaining, 3 - i);
    }
    const first = await server.rls.check('redis', [['cached', v]]);
    assert.equal(first.overall_code, 'OVER_LIMIT');
    const callsOver = await redis.scriptCalls();
    assert.ok(callsOver > callsAtStart, `the admitted calls ran scripts in Redis (${callsAtStart} → ${callsOver})`);

    // The servers follow the tenant change log (counter resets ride it: docs/SPEC.md §5.2), a
    // script call about every 100 ms each, and probe Redis for readiness every 500 ms; those are
    // read around the window and set apart.
    const background = async (s) =>
      (await s.metric('spillway_tenants_reads_total')) + (await s.metric('spillway_backend_probes_total'));
    const followerReads = async () => (await background(server)) + (await background(allowServer));
    const readsBefore = await followerReads();
    const callsBefore = await redis.scriptCalls();
    const cacheLabels = { domain: 'redis', descriptor: 'cached' };
    const cachedBefore = await server.metric('spillway_rls_over_limit_with_local_cache_total', cacheLabels);
    for (let i = 0; i < 10; i += 1) {
      const r = await server.rls.check('redis', [['cached', v]]);
      assert.equal(r.overall_code, 'OVER_LIMIT', `cached denial ${i}`);
      assert.equal(r.statuses[0].code, 'OVER_LIMIT');
    }
    const cachedAfter = await server.metric('spillway_rls_over_limit_with_local_cache_total', cacheLabels);
    assert.equal(cachedAfter - cachedBefore, 10, 'spillway_rls_over_limit_with_local_cache_total rose by 10');
    const callsAfter = await redis.scriptCalls();
    const readsAfter = await followerReads();
    // A background call is counted by its server when it is sent, by Redis when it runs: one sent
    // before readsBefore may run after callsBefore. Four callers (two servers, each a follower and
    // a prober) have at most one call in flight each: that many more are allowed, far fewer than
    // the ten denials that would each run a script without the cache.
    const inFlight = 4;
    assert.ok(
      callsAfter - callsBefore <= readsAfter - readsBefore + inFlight,
      `no EVAL/EVALSHA for the cached denials (${callsAfter - callsBefore} script calls, ` +
        `${readsAfter - readsBefore} of them the tenant followers' and the readiness probes', ` +
        `${inFlight} more in flight at the start, at most)`,
    );
  });

  it('200 concurrent calls with a limit of 50 → exactly 50 OK', async () => {
    const v = unique('conc');
    const calls = Array.from({ length: 200 }, () => server.rls.check('redis', [['conc', v]], { deadlineMs: 60000 }));
    const results = await Promise.all(calls);
    const ok = results.filter((r) => r.overall_code === 'OK').length;
    const over = results.filter((r) => r.overall_code === 'OVER_LIMIT').length;
    assert.equal(ok, 50);
    assert.equal(over, 150);
  });

  it('with Redis gone: on_error default → a status error promptly; on_error: allow → OK', async () => {
    // Both servers work before the kill.
    assert.equal((await allowServer.rls.check('redis', [['cached', unique('pre')]])).overall_code, 'OK');
    await redis.stop();

    // Promptly means without waiting for the backend's 1 s timeout: the server answers
    // UNAVAILABLE from the store's own "not connected" (or, once it opened, the circuit), where a
    // call left to time out would answer DEADLINE_EXCEEDED. Checked by what the answer says, not
    // by the wall clock (a loaded machine can delay any answer in transit; the client's deadline
    // is long so that such a delay cannot pass for a timeout either).
    const unavailableFromTheStore = (err) => {
      assert.equal(err.code, 14, `UNAVAILABLE, got ${err.code} ${err.details}`);
      assert.match(err.details, /^backend: (redis 127\.0\.0\.1:\d+: (not connected|connection)|circuit open)/);
      return true;
    };
    await assert.rejects(
      server.rls.check('redis', [['cached', unique('down')]], { deadlineMs: 20000 }),
      unavailableFromTheStore,
    );
    // Again, and on a fresh descriptor: still the same error.
    await assert.rejects(
      server.rls.check('redis', [['conc', unique('down')]], { deadlineMs: 20000 }),
      unavailableFromTheStore,
    );

    const allowed = await allowServer.rls.check('redis', [['cached', unique('down')]], { deadlineMs: 20000 });
    assert.equal(allowed.overall_code, 'OK');

    // Health follows the backend, as GET /readyz does: NOT_SERVING while Redis is gone (for ""
    // and for the service's name), though the listener still answers.
    await waitFor(async () => (await server.rls.healthCheck('')).status === 'NOT_SERVING', {
      what: 'health NOT_SERVING with Redis down',
    });
    assert.equal(
      (await server.rls.healthCheck('envoy.service.ratelimit.v3.RateLimitService')).status,
      'NOT_SERVING',
    );
  });
});
