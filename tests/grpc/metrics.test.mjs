// shadow_mode and the Prometheus counters of the rate limit service.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, unique } from './harness.mjs';

const RULES = {
  'shadow.yaml': `
domain: shadow
descriptors:
  - key: s
    shadow_mode: true
    rate_limit: {unit: hour, requests_per_unit: 2}
`,
  'metrics.yaml': `
domain: metrics
descriptors:
  - key: mk
    value: mv
    descriptors:
      - key: sub
        rate_limit: {unit: hour, requests_per_unit: 10}
  - key: det
    detailed_metric: true
    rate_limit: {unit: hour, requests_per_unit: 2}
`,
};

let server;
before(async () => {
  server = await startServer({ rules: RULES });
});
after(async () => {
  if (server) await server.stop();
});

async function counters(domain, descriptor) {
  const samples = await server.metrics();
  const get = (stat) => {
    const s = samples.find(
      (x) => x.name === `spillway_rls_${stat === 'total_hits' ? 'hits' : stat}_total` && x.labels.domain === domain && x.labels.descriptor === descriptor,
    );
    return s ? s.value : 0;
  };
  return {
    total_hits: get('total_hits'),
    over_limit: get('over_limit'),
    within_limit: get('within_limit'),
    near_limit: get('near_limit'),
    shadow_mode: get('shadow_mode'),
  };
}

describe('shadow_mode', () => {
  it('never OVER_LIMIT past its limit; spillway_rls_shadow_mode_total rises', async () => {
    const before = await counters('shadow', 's');
    const v = unique('shadow');
    for (let i = 1; i <= 5; i += 1) {
      const r = await server.rls.check('shadow', [['s', v]]);
      assert.equal(r.overall_code, 'OK', `call ${i}`);
      assert.equal(r.statuses[0].code, 'OK', `call ${i}`);
    }
    const afterwards = await counters('shadow', 's');
    assert.equal(afterwards.shadow_mode - before.shadow_mode, 3, 'three calls past a limit of 2');
    assert.equal(afterwards.total_hits - before.total_hits, 5);
  });
});

describe('counters', () => {
  it('total_hits, over_limit, within_limit, near_limit per nested rule path', async () => {
    const path = 'mk_mv.sub';
    const before = await counters('metrics', path);
    const v = unique('m');
    const codes = [];
    for (let i = 0; i < 12; i += 1) {
      const r = await server.rls.check('metrics', [['mk', 'mv'], ['sub', v]]);
      codes.push(r.overall_code);
    }
    assert.deepEqual(codes, [...Array(10).fill('OK'), 'OVER_LIMIT', 'OVER_LIMIT']);
    const afterwards = await counters('metrics', path);
    assert.equal(afterwards.total_hits - before.total_hits, 12, 'total_hits');
    assert.equal(afterwards.within_limit - before.within_limit, 10, 'within_limit');
    assert.equal(afterwards.over_limit - before.over_limit, 2, 'over_limit');
    // Near: admitted with less than 20% left (the 9th and 10th of 10), as envoyproxy/ratelimit.
    assert.equal(afterwards.near_limit - before.near_limit, 2, 'near_limit');
  });

  it('hits_addend counts as that many hits', async () => {
    const path = 'mk_mv.sub';
    const before = await counters('metrics', path);
    const v = unique('m');
    await server.rls.check('metrics', [['mk', 'mv'], ['sub', v]], { hits_addend: 4 });
    const afterwards = await counters('metrics', path);
    assert.equal(afterwards.total_hits - before.total_hits, 4);
    assert.equal(afterwards.within_limit - before.within_limit, 4);
  });

  it('detailed_metric labels the series with the request values', async () => {
    const v = unique('det');
    for (let i = 0; i < 3; i += 1) await server.rls.check('metrics', [['det', v]]);
    const detailed = await counters('metrics', `det_${v}`);
    assert.equal(detailed.total_hits, 3);
    assert.equal(detailed.within_limit, 2);
    assert.equal(detailed.over_limit, 1);
  });

  it('spillway_grpc_requests_total{method="ShouldRateLimit",code="OK"} rises', async () => {
    const labels = { method: 'ShouldRateLimit', code: 'OK' };
    const before = await server.metric('spillway_grpc_requests_total', labels);
    for (let i = 0; i < 3; i += 1) await server.rls.check('metrics', [['mk', 'mv'], ['sub', unique()]]);
    const afterwards = await server.metric('spillway_grpc_requests_total', labels);
    assert.equal(afterwards - before, 3);
    // An OVER_LIMIT answer is still gRPC OK.
    const zeroBefore = afterwards;
    const v = unique('det');
    for (let i = 0; i < 3; i += 1) await server.rls.check('metrics', [['det', v]]);
    assert.equal((await server.metric('spillway_grpc_requests_total', labels)) - zeroBefore, 3);

    const invalid = { method: 'ShouldRateLimit', code: 'INVALID_ARGUMENT' };
    const invalidBefore = await server.metric('spillway_grpc_requests_total', invalid);
    await assert.rejects(server.rls.shouldRateLimit({ domain: '', descriptors: [{ entries: [{ key: 'k' }] }] }));
    assert.equal((await server.metric('spillway_grpc_requests_total', invalid)) - invalidBefore, 1);
  });
});
