// Envoy's Rate Limit Quota Service (envoy.service.rate_limit_quota.v3, docs/SPEC.md §9.7), with
// @grpc/grpc-js playing several Envoys. Each simulated Envoy sends what Envoy's rate_limit_quota
// filter sends (source/extensions/filters/http/rate_limit_quota/global_client_impl.cc in
// envoyproxy/envoy): a bucket is reported the moment its first request creates it, with
// time_elapsed 0, then every reporting_interval (250 ms here, so time_elapsed is 0 every time: it
// is whole seconds). It enforces what it was assigned as that filter reads it: fill_interval and
// assignment_time_to_live by their whole seconds, an assignment "the same" when max_tokens,
// tokens_per_fill and fill_interval.nanos equal the one in force (it keeps its bucket and refill
// rate), any other a new bucket, full; expired or before any assignment, it denies. The Envoys
// together stay within the bound of a lease of max_age = the assignment's ttl (§2.3): at most
// B + (T + ttl)·L/P in T seconds, and they get a real share of the limit. Unknown, unlimited and
// zero-rate buckets, bad reports, duplicates, and several Envoys on two servers sharing one Redis.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import { startServer, startRedis, sleep, PROTO_DIR } from './harness.mjs';

const RULES = {
  'quota.yaml': `
domain: quota
descriptors:
  - key: name
    value: shared
    rate_limit: {unit: second, requests_per_unit: 100, algorithm: gcra, burst: 600}
  - key: name
    value: fair
    rate_limit: {unit: second, requests_per_unit: 100, algorithm: gcra, burst: 600}
  - key: name
    value: own
    rate_limit: {unit: minute, requests_per_unit: 6000}
  - key: name
    value: free
    rate_limit: {unlimited: true}
  - key: name
    value: closed
    rate_limit: {unit: second, requests_per_unit: 0}
`,
};

let Service;
function quotaService() {
  if (!Service) {
    const definition = protoLoader.loadSync('envoy/service/rate_limit_quota/v3/rlqs.proto', {
      keepCase: true,
      longs: Number,
      enums: String,
      defaults: true,
      oneofs: true,
      includeDirs: [PROTO_DIR],
    });
    Service = grpc.loadPackageDefinition(definition).envoy.service.rate_limit_quota.v3.RateLimitQuotaService;
  }
  return Service;
}

const seconds = (d) => (d ? Number(d.seconds) + (d.nanos || 0) / 1e9 : null);
const duration = (s) => ({ seconds: Math.floor(s), nanos: Math.round((s - Math.floor(s)) * 1e9) });
const wholeSeconds = (d) => (d ? Number(d.seconds) : 0); // what Envoy reads of a Duration

// One stream: write reports, read responses in order.
class QuotaStream {
  constructor(port) {
    const Client = quotaService();
    this.client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    this.call = this.client.StreamRateLimitQuotas({ deadline: Date.now() + 60000 });
    this.responses = [];
    this.waiters = [];
    this.ended = new Promise((resolve) => {
      this.call.on('error', (err) => resolve(err));
      this.call.on('end', () => resolve(null));
    });
    this.call.on('data', (response) => {
      const waiter = this.waiters.shift();
      if (waiter) waiter(response);
      else this.responses.push(response);
    });
  }
  // Sends a report and waits for its answer.
  async report(domain, usages) {
    this.call.write({
      domain,
      bucket_quota_usages: usages.map((u) => ({
        bucket_id: { bucket: u.bucket },
        time_elapsed: u.rawElapsed || duration(u.elapsed),
        num_requests_allowed: u.allowed || 0,
        num_requests_denied: u.denied || 0,
      })),
    });
    if (this.responses.length > 0) return this.responses.shift();
    return Promise.race([
      new Promise((resolve) => this.waiters.push(resolve)),
      this.ended.then((err) => {
        throw err || new Error('the stream ended without an answer');
      }),
    ]);
  }
  close() {
    this.call.end();
    this.client.close();
  }
}

function strategyOf(action) {
  assert.ok(action.quota_assignment_action, `an assignment: ${JSON.stringify(action)}`);
  return action.quota_assignment_action.rate_limit_strategy;
}

// A simulated Envoy: demand per second, a token bucket from its assignments.
class Envoy {
  constructor(stream, bucket, demand) {
    Object.assign(this, { stream, bucket, demand });
    this.tokens = 0;
    this.strategy = null; // what Envoy compares of the token bucket in force
    this.rate = 0; // tokens per second
    this.max = 0;
    this.expires = 0;
    this.last = Date.now();
    this.allowed = 0;
    this.denied = 0;
    this.totalAllowed = 0;
    this.assignments = [];
  }
  refill(now) {
    if (now > this.expires) {
      this.tokens = 0; // expired: this Envoy denies (its expired_assignment_behavior)
      this.strategy = null;
    } else {
      this.tokens = Math.min(this.max, this.tokens + ((now - this.last) / 1000) * this.rate);
    }
    this.last = now;
  }
  request(now) {
    this.refill(now);
    if (this.tokens >= 1) {
      this.tokens -= 1;
      this.allowed += 1;
      this.totalAllowed += 1;
    } else {
      this.denied += 1;
    }
  }
  apply(response, now) {
    assert.equal(response.bucket_action.length, 1);
    const strategy = strategyOf(response.bucket_action[0]);
    const live = response.bucket_action[0].quota_assignment_action.assignment_time_to_live;
    const ttl = wholeSeconds(live);
    this.assignments.push({ strategy, ttl, exact: live });
    this.refill(now);
    if (strategy.token_bucket) {
      const tb = strategy.token_bucket;
      const key = JSON.stringify([tb.max_tokens, tb.tokens_per_fill.value, tb.fill_interval.nanos]);
      if (key !== this.strategy) {
        this.strategy = key;
        this.max = tb.max_tokens;
        this.tokens = this.max; // a new bucket starts full
        this.rate = tb.tokens_per_fill.value / wholeSeconds(tb.fill_interval);
      }
      this.expires = now + ttl * 1000;
    } else {
      this.strategy = null;
      this.max = 0;
      this.tokens = 0;
      this.rate = 0;
      this.expires = now + ttl * 1000;
    }
  }
  async reportNow(elapsed, first) {
    const usage = { bucket: this.bucket, elapsed: Math.floor(elapsed), allowed: this.allowed, denied: this.denied };
    this.allowed = 0;
    this.denied = 0;
    const response = await this.stream.report(first ? 'quota' : '', [usage]);
    this.apply(response, Date.now());
  }
}

// Runs Envoys for `ms`: requests every 10 ms at their demand, a report every 250 ms each; each
// Envoy's first request (denied: no assignment yet) creates its bucket, reported at once.
// With `warmup` (ms), each Envoy also notes when that much has passed (warmAt) and what it had
// admitted then (warmAllowed), for a steady-state window.
async function run(envoys, ms, warmup) {
  const started = Date.now();
  for (const e of envoys) {
    e.request(Date.now());
    await e.reportNow(0, true);
  }
  let lastReport = Date.now();
  let carry = envoys.map(() => 0);
  // Requests are offered by the real time that passed (a pause stretched by a loaded machine
  // offers more at once, not less in all): each Envoy's demand holds whatever the timers do.
  let lastPass = Date.now();
  while (Date.now() - started < ms) {
    await sleep(10);
    const now = Date.now();
    const passed = now - lastPass;
    lastPass = now;
    if (warmup !== undefined && envoys[0].warmAt === undefined && now - started >= warmup) {
      for (const e of envoys) Object.assign(e, { warmAt: now, warmAllowed: e.totalAllowed });
    }
    envoys.forEach((e, i) => {
      carry[i] += (e.demand * passed) / 1000;
      while (carry[i] >= 1) {
        carry[i] -= 1;
        e.request(now);
      }
    });
    if (now - lastReport >= 250) {
      const elapsed = (now - lastReport) / 1000;
      lastReport = now;
      await Promise.all(envoys.map((e) => e.reportNow(elapsed, false)));
    }
  }
  return (Date.now() - started) / 1000;
}

// The limit's bound over T seconds with leases of max_age ttl: B + (T + ttl)·L/P, L = 100/s,
// B = 600 (the Envoys' shares are charged about 2·ttl ahead, more when a loaded machine stretches
// the report interval: a burst of 1 s would cap them, SPEC §9.7).
function checkShare(envoys, elapsed, label) {
  const admitted = envoys.reduce((sum, e) => sum + e.totalAllowed, 0);
  const ttl = Math.max(...envoys.flatMap((e) => e.assignments.map((a) => a.ttl)));
  const bound = 600 + (elapsed + ttl) * 100;
  if (process.env.RLQS_DEBUG) {
    for (const e of envoys) console.log(e.demand, e.totalAllowed, JSON.stringify(e.assignments.map((a) => a.strategy.token_bucket ? [a.strategy.token_bucket.max_tokens, a.strategy.token_bucket.tokens_per_fill.value, a.ttl] : a.strategy.blanket_rule)));
  }
  console.log(`${label}: ${admitted} admitted in ${elapsed.toFixed(2)} s by ${envoys.length} Envoys (bound ${bound.toFixed(0)}, ttl ${ttl} s)`);
  assert.ok(admitted <= bound, `${label}: ${admitted} admitted, bound ${bound}`);
  assert.ok(admitted >= 0.5 * elapsed * 100, `${label}: only ${admitted} admitted in ${elapsed} s: quotas too small`);
  for (const e of envoys) {
    for (const a of e.assignments) {
      assert.ok(a.ttl >= 1 && a.ttl <= 60, `ttl ${a.ttl}`);
      assert.equal(a.exact.nanos, 0, 'whole seconds, as Envoy reads them');
      if (a.strategy.token_bucket) {
        const tb = a.strategy.token_bucket;
        assert.ok(tb.max_tokens >= 1 && tb.max_tokens <= tb.tokens_per_fill.value, `max_tokens ${tb.max_tokens}`);
        assert.equal(tb.fill_interval.nanos, 0, 'whole seconds, as Envoy reads them');
        assert.ok(wholeSeconds(tb.fill_interval) >= 1);
      } else {
        assert.equal(a.strategy.blanket_rule, 'DENY_ALL', 'a limited bucket is never ALLOW_ALL');
      }
    }
  }
}

describe('RLQS on the memory backend', () => {
  let server;
  before(async () => {
    server = await startServer({ rules: RULES });
  });
  after(async () => {
    if (server) await server.stop();
  });

  it('three Envoys asking for 3x the limit share it within the bound', async () => {
    const streams = [0, 1, 2].map(() => new QuotaStream(server.grpcPort));
    const envoys = streams.map((s, i) => new Envoy(s, { name: 'shared' }, [200, 100, 20][i]));
    try {
      const elapsed = await run(envoys, 3000);
      checkShare(envoys, elapsed, 'memory');
      // The light Envoy is not starved by the heavy ones: it gets a bucket of its own.
      assert.ok(envoys[2].assignments.some((a) => a.strategy.token_bucket), 'the light Envoy got tokens');
    } finally {
      streams.forEach((s) => s.close());
    }
  });

  it("Envoy's own reports keep the stream open: time_elapsed 0, under 1 ms, duplicates", async () => {
    const stream = new QuotaStream(server.grpcPort);
    try {
      // A new bucket, reported at once: time_elapsed 0 (Envoy sets it; unset reads the same).
      const first = await stream.report('quota', [{ bucket: { name: 'own' }, elapsed: 0, denied: 1 }]);
      assert.equal(first.bucket_action.length, 1);
      const tb = strategyOf(first.bucket_action[0]).token_bucket;
      assert.ok(tb && tb.max_tokens >= 1, `a token bucket: ${JSON.stringify(first.bucket_action[0])}`);
      assert.equal(first.bucket_action[0].quota_assignment_action.assignment_time_to_live.nanos, 0);
      // 500 ns: kept, not rounded to 0 and refused; an unset time_elapsed likewise.
      const tiny = await stream.report('', [{ bucket: { name: 'own' }, rawElapsed: { seconds: 0, nanos: 500 }, allowed: 1 }]);
      assert.ok(strategyOf(tiny.bucket_action[0]).token_bucket);
      // The same BucketId twice (its pairs in another order): one action, no DENY_ALL.
      const twice = await stream.report('', [
        { bucket: { name: 'own', zone: 'a' }, elapsed: 0, allowed: 2 },
        { bucket: { name: 'free' }, elapsed: 0, allowed: 1 },
        { bucket: { zone: 'a', name: 'own' }, elapsed: 0, allowed: 3 },
        { bucket: { name: 'own' }, elapsed: 0, allowed: 4 },
        { bucket: { name: 'own' }, elapsed: 0, allowed: 4 },
      ]);
      assert.equal(twice.bucket_action.length, 3, JSON.stringify(twice.bucket_action));
      assert.ok(strategyOf(twice.bucket_action[2]).token_bucket, 'the duplicate is not DENY_ALL');
      // The stream is still open.
      const after = await stream.report('', [{ bucket: { name: 'own' }, elapsed: 0, allowed: 1 }]);
      assert.ok(strategyOf(after.bucket_action[0]).token_bucket);
    } finally {
      stream.close();
    }
  });

  it('unknown, unlimited and zero-rate buckets', async () => {
    const stream = new QuotaStream(server.grpcPort);
    try {
      const response = await stream.report('quota', [
        { bucket: { name: 'nobody' }, elapsed: 1, allowed: 5 },
        { bucket: { name: 'free' }, elapsed: 1, allowed: 5 },
        { bucket: { name: 'closed' }, elapsed: 1, allowed: 5 },
        { bucket: { other: 'x', name: 'shared' }, elapsed: 1, allowed: 5 },
      ]);
      assert.equal(response.bucket_action.length, 4);
      assert.deepEqual(response.bucket_action[0].bucket_id.bucket, { name: 'nobody' });
      assert.equal(strategyOf(response.bucket_action[0]).blanket_rule, 'ALLOW_ALL');
      assert.equal(strategyOf(response.bucket_action[1]).blanket_rule, 'ALLOW_ALL');
      assert.equal(strategyOf(response.bucket_action[2]).blanket_rule, 'DENY_ALL');
      assert.ok(!strategyOf(response.bucket_action[2]).token_bucket, 'no token bucket');
      // Two entries match no two-level rule: no limit.
      assert.equal(strategyOf(response.bucket_action[3]).blanket_rule, 'ALLOW_ALL');
      // A later report without a domain stays in the stream's domain.
      const again = await stream.report('', [{ bucket: { name: 'closed' }, elapsed: 1 }]);
      assert.equal(strategyOf(again.bucket_action[0]).blanket_rule, 'DENY_ALL');
    } finally {
      stream.close();
    }
  });

  it('bad reports end the stream with INVALID_ARGUMENT naming what was wrong', async () => {
    const cases = [
      { domain: '', usages: [{ bucket: { name: 'shared' }, elapsed: 1 }], says: /domain/ },
      { domain: 'quota', usages: [], says: /at least one bucket/ },
      { domain: 'quota', usages: [{ bucket: {}, elapsed: 1 }], says: /bucket_id/ },
      { domain: 'quota', usages: [{ bucket: { name: '' }, elapsed: 1 }], says: /empty key or value/ },
      {
        domain: 'quota',
        usages: [{ bucket: { name: 'shared' }, rawElapsed: { seconds: -1, nanos: 0 } }],
        says: /time_elapsed/,
      },
    ];
    for (const c of cases) {
      const stream = new QuotaStream(server.grpcPort);
      try {
        await assert.rejects(stream.report(c.domain, c.usages), (err) => {
          assert.equal(err.code, grpc.status.INVALID_ARGUMENT, `${JSON.stringify(c)}: ${err.message}`);
          assert.match(err.details, c.says);
          return true;
        });
      } finally {
        stream.close();
      }
    }
    // Another domain later in the stream.
    const stream = new QuotaStream(server.grpcPort);
    try {
      await stream.report('quota', [{ bucket: { name: 'free' }, elapsed: 1 }]);
      await assert.rejects(stream.report('other', [{ bucket: { name: 'free' }, elapsed: 1 }]), (err) => {
        assert.equal(err.code, grpc.status.INVALID_ARGUMENT);
        assert.match(err.details, /cannot change it/);
        return true;
      });
    } finally {
      stream.close();
    }
    // The server still answers.
    const fresh = new QuotaStream(server.grpcPort);
    try {
      const ok = await fresh.report('quota', [{ bucket: { name: 'free' }, elapsed: 1 }]);
      assert.equal(strategyOf(ok.bucket_action[0]).blanket_rule, 'ALLOW_ALL');
    } finally {
      fresh.close();
    }
  });
});

describe('RLQS across two servers sharing one Redis', () => {
  let redis;
  const servers = [];
  before(async () => {
    redis = await startRedis();
    for (let i = 0; i < 2; i += 1) servers.push(await startServer({ rules: RULES, backend: redis.url }));
  });
  after(async () => {
    for (const s of servers) await s.stop();
    if (redis) await redis.stop();
  });

  it("Envoy's first report and duplicates keep the stream open on Redis", async () => {
    const stream = new QuotaStream(servers[0].grpcPort);
    try {
      const first = await stream.report('quota', [{ bucket: { name: 'own' }, elapsed: 0, denied: 1 }]);
      assert.ok(strategyOf(first.bucket_action[0]).token_bucket, JSON.stringify(first.bucket_action[0]));
      const twice = await stream.report('', [
        { bucket: { name: 'own' }, elapsed: 0, allowed: 1 },
        { bucket: { name: 'own' }, rawElapsed: { seconds: 0, nanos: 500 }, allowed: 1 },
      ]);
      assert.equal(twice.bucket_action.length, 1);
      assert.ok(strategyOf(twice.bucket_action[0]).token_bucket);
    } finally {
      stream.close();
    }
  });

  it('three Envoys on two servers get their max-min shares within the bound', async () => {
    // 100/s; demands 200, 100 and 20/s: max-min 40, 40 and 20/s. Each report asks 1.25 x what
    // it saw, so the heavy two are given 37.5/s each (the tolerance below covers that, and
    // real-time timers on a loaded machine). Measured after a 1 s warm-up.
    const streams = [0, 1, 2].map((i) => new QuotaStream(servers[i % 2].grpcPort));
    const envoys = streams.map((s, i) => new Envoy(s, { name: 'fair' }, [200, 100, 20][i]));
    try {
      const elapsed = await run(envoys, 4000, 1000);
      checkShare(envoys, elapsed, 'redis, fair');
      const window = (Date.now() - envoys[0].warmAt) / 1000;
      const admitted = envoys.map((e) => e.totalAllowed - e.warmAllowed);
      const all = admitted.reduce((a, b) => a + b, 0);
      console.log(`redis, fair: ${admitted.join(', ')} admitted over ${window.toFixed(2)} s`);
      // What is checked is each Envoy's part of what was admitted, an outcome, not a rate: a
      // loaded, sanitized run slows every Envoy alike. Max-min shares of 40/40/20; 30 % below a
      // share is the tolerance (a stretched report shifts a share for a while). The exact rule,
      // each share within 10 % and at least 90 % of the limit used, is checked on the injected
      // clock by QuotaEngine.EnvoysShareALimitMaxMinFairAndUseMostOfIt.
      assert.ok(all > 0, 'the Envoys admitted nothing after the warm-up');
      // On a failure, each Envoy's assignments in turn (tokens per fill/max tokens/ttl s).
      const told = (e) => e.assignments
        .map((a) => (a.strategy.token_bucket
          ? `${a.strategy.token_bucket.tokens_per_fill.value}/${a.strategy.token_bucket.max_tokens}/${a.ttl}`
          : a.strategy.blanket_rule))
        .join(' ');
      [0.4, 0.4, 0.2].forEach((share, i) => {
        assert.ok(
          admitted[i] >= 0.7 * share * all,
          `Envoy ${i}: ${admitted[i]} of ${all}, max-min share ${share}; told ${envoys.map(told).join(' | ')}`,
        );
      });
      // Per-bucket metrics, labelled by the rules' stat path (no descriptor values): server 0
      // holds Envoys 0 and 2, server 1 Envoy 1; what they used, as reported, and what was charged.
      const labels = { domain: 'quota', bucket: 'name_fair' };
      assert.equal(await servers[0].metric('spillway_rlqs_envoys', labels), 2);
      assert.equal(await servers[1].metric('spillway_rlqs_envoys', labels), 1);
      const used = (await servers[0].metric('spillway_rlqs_tokens_total', { ...labels, kind: 'used' })) +
        (await servers[1].metric('spillway_rlqs_tokens_total', { ...labels, kind: 'used' }));
      const assigned = (await servers[0].metric('spillway_rlqs_tokens_total', { ...labels, kind: 'assigned' })) +
        (await servers[1].metric('spillway_rlqs_tokens_total', { ...labels, kind: 'assigned' }));
      assert.ok(used > 0 && used <= assigned, `used ${used}, assigned ${assigned}`);
      // The shares live in Redis under the bucket's digest: no descriptor value in a key name.
      const keys = (await redis.cli('--scan')).split('\n').filter((k) => k.length > 0);
      assert.ok(keys.some((k) => k.includes(':rlqs:')), `a shares hash in Redis: ${keys.join(' ')}`);
      assert.ok(!keys.some((k) => k.includes('fair')), `a descriptor value in a key name: ${keys.join(' ')}`);
    } finally {
      streams.forEach((s) => s.close());
    }
  });

  it('four Envoys on two servers share one limit within the bound', async () => {
    const streams = [0, 1, 2, 3].map((i) => new QuotaStream(servers[i % 2].grpcPort));
    const envoys = streams.map((s, i) => new Envoy(s, { name: 'shared' }, [150, 150, 60, 60][i]));
    try {
      const elapsed = await run(envoys, 3000);
      checkShare(envoys, elapsed, 'redis, two servers');
    } finally {
      streams.forEach((s) => s.close());
    }
  });
});
