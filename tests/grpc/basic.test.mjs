// Decisions of ShouldRateLimit on the memory backend: counting, matching, hits_addend,
// request limit overrides, unlimited / zero / replaces, bad input, health.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, unique, durationSeconds } from './harness.mjs';

const RULES = {
  'basic.yaml': `
domain: basic
descriptors:
  - key: basic_key
    rate_limit: {unit: hour, requests_per_unit: 3, name: basic_rule}
  - key: second_key
    rate_limit: {unit: day, requests_per_unit: 5, name: second_rule}
`,
  'match.yaml': `
domain: match
descriptors:
  - key: m
    value: exact
    rate_limit: {unit: hour, requests_per_unit: 1, name: exact_rule}
  - key: m
    value: pre*
    rate_limit: {unit: hour, requests_per_unit: 2, name: wildcard_rule}
  - key: m
    rate_limit: {unit: hour, requests_per_unit: 3, name: key_rule}
  - key: parent
    value: p
    descriptors:
      - key: child
        rate_limit: {unit: hour, requests_per_unit: 4, name: nested_rule}
  - key: white
    value: listed
`,
  'addend.yaml': `
domain: addend
descriptors:
  - key: a
    rate_limit: {unit: hour, requests_per_unit: 10}
`,
  'algorithms.yaml': `
domain: algorithms
descriptors:
  - key: fixed_window
    rate_limit: {unit: hour, requests_per_unit: 5, algorithm: fixed_window}
  - key: sliding_log
    rate_limit: {unit: hour, requests_per_unit: 5, algorithm: sliding_log}
  - key: sliding_window
    rate_limit: {unit: hour, requests_per_unit: 5, algorithm: sliding_window}
  - key: token_bucket
    rate_limit: {unit: hour, requests_per_unit: 5, algorithm: token_bucket}
  - key: gcra
    rate_limit: {unit: hour, requests_per_unit: 5, algorithm: gcra}
  - key: period
    rate_limit: {period: 5m, requests_per_unit: 5, algorithm: gcra}
  - key: burst
    rate_limit: {unit: hour, requests_per_unit: 5, algorithm: token_bucket, burst: 2}
`,
  'special.yaml': `
domain: special
descriptors:
  - key: unl
    rate_limit: {unlimited: true}
  - key: zero
    rate_limit: {unit: hour, requests_per_unit: 0}
  - key: rep
    rate_limit: {unit: hour, requests_per_unit: 1, name: rep_small}
  - key: rep2
    rate_limit: {unit: hour, requests_per_unit: 100, replaces: [{name: rep_small}]}
`,
};

let server;
before(async () => {
  server = await startServer({ rules: RULES });
});
after(async () => {
  if (server) await server.stop();
});

const rls = () => server.rls;

describe('basic counting', () => {
  it('N OK then OVER_LIMIT, one status per descriptor in order', async () => {
    const v = unique('basic');
    const request = {
      domain: 'basic',
      descriptors: [
        { entries: [{ key: 'basic_key', value: v }] },
        { entries: [{ key: 'second_key', value: v }] },
      ],
    };
    for (let i = 1; i <= 3; i += 1) {
      const response = await rls().shouldRateLimit(request);
      assert.equal(response.overall_code, 'OK', `call ${i}`);
      assert.equal(response.statuses.length, 2);
      const [first, second] = response.statuses;
      assert.equal(first.code, 'OK');
      assert.deepEqual(first.current_limit, { requests_per_unit: 3, unit: 'HOUR', name: 'basic_rule' });
      assert.equal(first.limit_remaining, 3 - i);
      assert.ok(durationSeconds(first.duration_until_reset) > 0, 'duration_until_reset > 0');
      assert.ok(durationSeconds(first.duration_until_reset) <= 3600);
      assert.equal(second.code, 'OK');
      assert.deepEqual(second.current_limit, { requests_per_unit: 5, unit: 'DAY', name: 'second_rule' });
      assert.equal(second.limit_remaining, 5 - i);
      assert.ok(durationSeconds(second.duration_until_reset) > 0);
    }
    const denied = await rls().shouldRateLimit(request);
    assert.equal(denied.overall_code, 'OVER_LIMIT');
    assert.equal(denied.statuses[0].code, 'OVER_LIMIT');
    assert.equal(denied.statuses[0].limit_remaining, 0);
    assert.ok(durationSeconds(denied.statuses[0].duration_until_reset) > 0);
    assert.deepEqual(denied.statuses[0].current_limit, { requests_per_unit: 3, unit: 'HOUR', name: 'basic_rule' });
    assert.equal(denied.statuses[1].current_limit.requests_per_unit, 5);

    // A different value of the same key has its own counter.
    const other = await rls().check('basic', [['basic_key', unique('basic-other')]]);
    assert.equal(other.overall_code, 'OK');
    assert.equal(other.statuses[0].limit_remaining, 2);
  });
});

describe('matching', () => {
  it('exact value beats wildcard beats key-only', async () => {
    const exact = await rls().check('match', [['m', 'exact']]);
    assert.equal(exact.statuses[0].current_limit?.name, 'exact_rule');
    assert.equal(exact.statuses[0].current_limit.requests_per_unit, 1);

    const wildcard = await rls().check('match', [['m', `pre${unique()}`]]);
    assert.equal(wildcard.statuses[0].current_limit?.name, 'wildcard_rule');
    assert.equal(wildcard.statuses[0].current_limit.requests_per_unit, 2);

    const keyOnly = await rls().check('match', [['m', unique('other')]]);
    assert.equal(keyOnly.statuses[0].current_limit?.name, 'key_rule');
    assert.equal(keyOnly.statuses[0].current_limit.requests_per_unit, 3);
  });

  it('nested descriptors (2 entries) match the child rule', async () => {
    const v = unique('child');
    for (let i = 1; i <= 4; i += 1) {
      const r = await rls().check('match', [['parent', 'p'], ['child', v]]);
      assert.equal(r.overall_code, 'OK');
      assert.equal(r.statuses[0].current_limit?.name, 'nested_rule');
      assert.equal(r.statuses[0].current_limit.requests_per_unit, 4);
      assert.equal(r.statuses[0].limit_remaining, 4 - i);
    }
    const denied = await rls().check('match', [['parent', 'p'], ['child', v]]);
    assert.equal(denied.overall_code, 'OVER_LIMIT');
  });

  it('a depth with no rule is OK with no current_limit', async () => {
    // The parent node alone has no rate_limit.
    for (let i = 0; i < 3; i += 1) {
      const r = await rls().check('match', [['parent', 'p']]);
      assert.equal(r.overall_code, 'OK');
      assert.equal(r.statuses.length, 1);
      assert.equal(r.statuses[0].code, 'OK');
      assert.equal(r.statuses[0].current_limit, null);
    }
    // Deeper than the rule tree: no rule.
    const deeper = await rls().check('match', [['parent', 'p'], ['child', unique()], ['grandchild', 'g']]);
    assert.equal(deeper.overall_code, 'OK');
    assert.equal(deeper.statuses[0].current_limit, null);
    // A parent value with no node.
    const unknownValue = await rls().check('match', [['parent', unique('nope')], ['child', 'c']]);
    assert.equal(unknownValue.statuses[0].current_limit, null);
  });

  it('unknown domain: OK for every descriptor, no current_limit', async () => {
    const r = await rls().shouldRateLimit({
      domain: unique('no-such-domain'),
      descriptors: [
        { entries: [{ key: 'basic_key', value: 'x' }] },
        { entries: [{ key: 'm', value: 'exact' }] },
        { entries: [{ key: 'a', value: 'b' }, { key: 'c', value: 'd' }] },
      ],
    });
    assert.equal(r.overall_code, 'OK');
    assert.equal(r.statuses.length, 3);
    for (const status of r.statuses) {
      assert.equal(status.code, 'OK');
      assert.equal(status.current_limit, null);
    }
  });

  it('a node with no rate_limit and no children (whitelist) is OK with no limit', async () => {
    for (let i = 0; i < 6; i += 1) {
      const r = await rls().check('match', [['white', 'listed']]);
      assert.equal(r.overall_code, 'OK');
      assert.equal(r.statuses[0].code, 'OK');
      assert.equal(r.statuses[0].current_limit, null);
    }
  });
});

describe('hits_addend', () => {
  it('request-level hits_addend (0 means 1)', async () => {
    const v = unique('addend');
    let r = await rls().check('addend', [['a', v]], { hits_addend: 0 });
    assert.equal(r.statuses[0].limit_remaining, 9);
    r = await rls().check('addend', [['a', v]], { hits_addend: 3 });
    assert.equal(r.statuses[0].limit_remaining, 6);
    r = await rls().check('addend', [['a', v]], { hits_addend: 7 });
    assert.equal(r.overall_code, 'OVER_LIMIT', '6 left, 7 asked');
  });

  it('per-descriptor hits_addend wins over the request-level one', async () => {
    const v = unique('addend');
    const r = await rls().shouldRateLimit({
      domain: 'addend',
      hits_addend: 5,
      descriptors: [{ entries: [{ key: 'a', value: v }], hits_addend: { value: 2 } }],
    });
    assert.equal(r.overall_code, 'OK');
    assert.equal(r.statuses[0].limit_remaining, 8);
  });

  it('per-descriptor hits_addend 0 checks without counting', async () => {
    const v = unique('addend');
    let r = await rls().check('addend', [['a', v]], { hits_addend: 4 });
    assert.equal(r.statuses[0].limit_remaining, 6);
    for (let i = 0; i < 3; i += 1) {
      r = await rls().shouldRateLimit({
        domain: 'addend',
        hits_addend: 3,
        descriptors: [{ entries: [{ key: 'a', value: v }], hits_addend: { value: 0 } }],
      });
      assert.equal(r.overall_code, 'OK');
      assert.equal(r.statuses[0].limit_remaining, 6, 'a zero addend does not count');
    }
    r = await rls().check('addend', [['a', v]]);
    assert.equal(r.statuses[0].limit_remaining, 5);
  });
});

describe('request limit override', () => {
  it('applies and is shown in current_limit', async () => {
    const v = unique('override');
    const limit = { requests_per_unit: 2, unit: 'HOUR' };
    for (let i = 1; i <= 2; i += 1) {
      const r = await rls().check('addend', [['a', v]], { descriptorExtra: { limit } });
      assert.equal(r.overall_code, 'OK');
      assert.equal(r.statuses[0].current_limit?.requests_per_unit, 2);
      assert.equal(r.statuses[0].current_limit.unit, 'HOUR');
      assert.equal(r.statuses[0].limit_remaining, 2 - i);
    }
    const denied = await rls().check('addend', [['a', v]], { descriptorExtra: { limit } });
    assert.equal(denied.overall_code, 'OVER_LIMIT');
  });

  it('applies in a known domain even where no rule matches (as envoyproxy/ratelimit)', async () => {
    const v = unique('override-nomatch');
    const limit = { requests_per_unit: 1, unit: 'HOUR' };
    const first = await rls().check('addend', [['no_rule_key', v]], { descriptorExtra: { limit } });
    assert.equal(first.overall_code, 'OK');
    assert.equal(first.statuses[0].current_limit?.requests_per_unit, 1);
    const second = await rls().check('addend', [['no_rule_key', v]], { descriptorExtra: { limit } });
    assert.equal(second.overall_code, 'OVER_LIMIT');
  });

  it('unknown domain is still OK with an override', async () => {
    const domain = unique('no-domain');
    for (let i = 0; i < 3; i += 1) {
      const r = await rls().check(domain, [['a', 'b']], {
        descriptorExtra: { limit: { requests_per_unit: 1, unit: 'HOUR' } },
      });
      assert.equal(r.overall_code, 'OK');
      assert.equal(r.statuses[0].code, 'OK');
      assert.equal(r.statuses[0].current_limit, null);
    }
  });
});

describe('unlimited, zero, replaces', () => {
  it('unlimited → OK with limit_remaining 4294967295', async () => {
    const v = unique('unl');
    for (let i = 0; i < 5; i += 1) {
      const r = await rls().check('special', [['unl', v]]);
      assert.equal(r.overall_code, 'OK');
      assert.equal(r.statuses[0].code, 'OK');
      assert.equal(r.statuses[0].limit_remaining, 4294967295);
    }
  });

  it('requests_per_unit: 0 → always OVER_LIMIT', async () => {
    const v = unique('zero');
    for (let i = 0; i < 3; i += 1) {
      const r = await rls().check('special', [['zero', v]]);
      assert.equal(r.overall_code, 'OVER_LIMIT');
      assert.equal(r.statuses[0].code, 'OVER_LIMIT');
      assert.equal(r.statuses[0].current_limit?.requests_per_unit, 0);
    }
  });

  it('replaces drops the named limit', async () => {
    const v = unique('rep');
    // Alone, rep_small allows one call.
    const alone = unique('rep-alone');
    assert.equal((await rls().check('special', [['rep', alone]])).overall_code, 'OK');
    assert.equal((await rls().check('special', [['rep', alone]])).overall_code, 'OVER_LIMIT');

    const request = {
      domain: 'special',
      descriptors: [{ entries: [{ key: 'rep', value: v }] }, { entries: [{ key: 'rep2', value: v }] }],
    };
    for (let i = 1; i <= 3; i += 1) {
      const r = await rls().shouldRateLimit(request);
      assert.equal(r.overall_code, 'OK', `call ${i}: rep_small is replaced`);
      assert.equal(r.statuses[0].code, 'OK');
      assert.equal(r.statuses[0].current_limit, null, 'the replaced limit is not reported');
      assert.equal(r.statuses[1].current_limit?.requests_per_unit, 100);
      assert.equal(r.statuses[1].limit_remaining, 100 - i);
    }
  });
});

describe('algorithms (spillway extensions)', () => {
  for (const key of ['fixed_window', 'sliding_log', 'sliding_window', 'token_bucket', 'gcra', 'period']) {
    it(`${key}: 5 per window admits 5 then denies`, async () => {
      const v = unique(key);
      for (let i = 1; i <= 5; i += 1) {
        const r = await rls().check('algorithms', [[key, v]]);
        assert.equal(r.overall_code, 'OK', `call ${i}`);
        assert.equal(r.statuses[0].current_limit?.requests_per_unit, 5);
        assert.equal(r.statuses[0].limit_remaining, 5 - i, `remaining after call ${i}`);
      }
      const denied = await rls().check('algorithms', [[key, v]]);
      assert.equal(denied.overall_code, 'OVER_LIMIT');
      assert.ok(durationSeconds(denied.statuses[0].duration_until_reset) > 0);
    });
  }

  it('token_bucket with burst 2 admits a burst of 2', async () => {
    const v = unique('burst');
    const codes = [];
    for (let i = 0; i < 4; i += 1) codes.push((await rls().check('algorithms', [['burst', v]])).overall_code);
    assert.deepEqual(codes, ['OK', 'OK', 'OVER_LIMIT', 'OVER_LIMIT']);
  });
});

describe('bad input', () => {
  it('empty domain → INVALID_ARGUMENT naming "domain"', async () => {
    await assert.rejects(
      rls().shouldRateLimit({ domain: '', descriptors: [{ entries: [{ key: 'basic_key', value: 'x' }] }] }),
      (err) => {
        assert.equal(err.code, 3);
        assert.match(err.details, /domain/);
        return true;
      },
    );
  });

  it('no descriptors → INVALID_ARGUMENT', async () => {
    await assert.rejects(rls().shouldRateLimit({ domain: 'basic', descriptors: [] }), (err) => {
      assert.equal(err.code, 3);
      return true;
    });
  });

  it('a descriptor with no entries → INVALID_ARGUMENT', async () => {
    await assert.rejects(rls().shouldRateLimit({ domain: 'basic', descriptors: [{ entries: [] }] }), (err) => {
      assert.equal(err.code, 3);
      return true;
    });
  });

  it('the server keeps serving afterwards', async () => {
    const r = await rls().check('basic', [['basic_key', unique('after-bad')]]);
    assert.equal(r.overall_code, 'OK');
    assert.equal(r.statuses[0].limit_remaining, 2);
  });
});

describe('health', () => {
  it('Check({service: ""}) and Check of the service\'s name → SERVING', async () => {
    const r = await rls().healthCheck('');
    assert.equal(r.status, 'SERVING');
    const named = await rls().healthCheck('envoy.service.ratelimit.v3.RateLimitService');
    assert.equal(named.status, 'SERVING');
  });
});
