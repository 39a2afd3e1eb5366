// All-or-nothing charging (and charge_on_deny), and the response headers option.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, unique } from './harness.mjs';

const AON = `
domain: aon
descriptors:
  - key: A
    rate_limit: {unit: hour, requests_per_unit: 1}
  - key: B
    rate_limit: {unit: hour, requests_per_unit: 5}
`;

const HEADERS = `
domain: hdr
descriptors:
  - key: h
    rate_limit: {unit: hour, requests_per_unit: 3}
  - key: g
    rate_limit: {unit: minute, requests_per_unit: 10, algorithm: gcra, burst: 5}
  - key: t
    rate_limit: {unit: minute, requests_per_unit: 10, algorithm: token_bucket, burst: 20}
`;

const servers = {};
before(async () => {
  const starts = {
    allOrNothing: startServer({ rules: { 'aon.yaml': AON } }),
    chargeOnDeny: startServer({ rules: { 'aon.yaml': AON }, config: { rls: { charge_on_deny: true } } }),
    draft: startServer({ rules: { 'hdr.yaml': HEADERS }, config: { rls: { response_headers: 'draft' } } }),
    xratelimit: startServer({ rules: { 'hdr.yaml': HEADERS }, config: { rls: { response_headers: 'x-ratelimit' } } }),
    off: startServer({ rules: { 'hdr.yaml': HEADERS }, config: { rls: { response_headers: 'off' } } }),
  };
  // Wait for all of them (even when one fails) so every started process gets stopped.
  const results = await Promise.allSettled(Object.values(starts));
  Object.keys(starts).forEach((name, i) => {
    if (results[i].status === 'fulfilled') servers[name] = results[i].value;
  });
  const failed = results.find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
});
after(async () => {
  await Promise.all(Object.values(servers).map((s) => s.stop()));
});

function both(v) {
  return {
    domain: 'aon',
    descriptors: [{ entries: [{ key: 'A', value: v }] }, { entries: [{ key: 'B', value: v }] }],
  };
}

describe('all-or-nothing', () => {
  it('a denied request charges none of its descriptors (default)', async () => {
    const rls = servers.allOrNothing.rls;
    const v = unique('aon');
    const first = await rls.shouldRateLimit(both(v));
    assert.equal(first.overall_code, 'OK');
    assert.equal(first.statuses[1].limit_remaining, 4);
    for (let i = 0; i < 3; i += 1) {
      const r = await rls.shouldRateLimit(both(v));
      assert.equal(r.overall_code, 'OVER_LIMIT');
      assert.equal(r.statuses[0].code, 'OVER_LIMIT');
    }
    const bAlone = await rls.check('aon', [['B', v]]);
    assert.equal(bAlone.overall_code, 'OK');
    assert.equal(bAlone.statuses[0].limit_remaining, 3, 'B was charged only by the admitted calls');
  });

  it('charge_on_deny: true charges the other descriptors too (envoyproxy/ratelimit)', async () => {
    const rls = servers.chargeOnDeny.rls;
    const v = unique('cod');
    const first = await rls.shouldRateLimit(both(v));
    assert.equal(first.overall_code, 'OK');
    assert.equal(first.statuses[1].limit_remaining, 4);
    for (let i = 0; i < 3; i += 1) {
      const r = await rls.shouldRateLimit(both(v));
      assert.equal(r.overall_code, 'OVER_LIMIT');
      assert.equal(r.statuses[0].code, 'OVER_LIMIT');
    }
    const bAlone = await rls.check('aon', [['B', v]]);
    assert.equal(bAlone.overall_code, 'OK');
    assert.equal(bAlone.statuses[0].limit_remaining, 0, 'B was charged by the denied calls too');
    assert.equal((await rls.check('aon', [['B', v]])).overall_code, 'OVER_LIMIT');
  });
});

function headerMap(response) {
  const map = {};
  for (const h of response.response_headers_to_add) map[h.key] = h.value;
  return map;
}

describe('response headers', () => {
  it('draft → RateLimit-Limit / -Remaining / -Reset', async () => {
    const v = unique('draft');
    const r = await servers.draft.rls.check('hdr', [['h', v]]);
    const h = headerMap(r);
    assert.deepEqual(Object.keys(h).sort(), ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']);
    assert.equal(h['RateLimit-Limit'], '3');
    assert.equal(h['RateLimit-Remaining'], '2');
    assert.ok(Number(h['RateLimit-Reset']) > 0 && Number(h['RateLimit-Reset']) <= 3600, h['RateLimit-Reset']);
    await servers.draft.rls.check('hdr', [['h', v]]);
    await servers.draft.rls.check('hdr', [['h', v]]);
    const denied = await servers.draft.rls.check('hdr', [['h', v]]);
    assert.equal(denied.overall_code, 'OVER_LIMIT');
    assert.equal(headerMap(denied)['RateLimit-Remaining'], '0');
  });

  // The limit is what the remaining counts down from: a bucket's burst, as the HTTP endpoints'
  // X-RateLimit-Limit says; current_limit keeps the rule's rate.
  it('a bucket with a burst → its burst as the limit', async () => {
    for (const [key, burst] of [['g', 5], ['t', 20]]) {
      const r = await servers.draft.rls.check('hdr', [[key, unique(`burst_${key}`)]]);
      assert.equal(r.overall_code, 'OK');
      assert.equal(Number(r.statuses[0].current_limit.requests_per_unit), 10, key);
      const h = headerMap(r);
      assert.equal(h['RateLimit-Limit'], String(burst), key);
      assert.equal(h['RateLimit-Remaining'], String(burst - 1), key);
    }
    const x = await servers.xratelimit.rls.check('hdr', [['g', unique('burst_x')]]);
    assert.equal(headerMap(x)['X-RateLimit-Limit'], '5');
    assert.equal(headerMap(x)['X-RateLimit-Remaining'], '4');
  });

  it('x-ratelimit → X-RateLimit-Limit / -Remaining / -Reset', async () => {
    const r = await servers.xratelimit.rls.check('hdr', [['h', unique('x')]]);
    const h = headerMap(r);
    assert.deepEqual(Object.keys(h).sort(), ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']);
    assert.equal(h['X-RateLimit-Limit'], '3');
    assert.equal(h['X-RateLimit-Remaining'], '2');
    assert.ok(Number(h['X-RateLimit-Reset']) > 0);
  });

  it('off → no headers', async () => {
    const r = await servers.off.rls.check('hdr', [['h', unique('off')]]);
    assert.equal(r.overall_code, 'OK');
    assert.deepEqual(r.response_headers_to_add, []);
  });

  it('default (no config) → no headers', async () => {
    const r = await servers.allOrNothing.rls.check('aon', [['B', unique('nohdr')]]);
    assert.deepEqual(r.response_headers_to_add, []);
  });
});
