// The JSON access log of the gRPC listener (server.log_format: json, server.access_log on): one
// line per ShouldRateLimit call, with the trace id of a valid W3C traceparent sent as metadata by
// another implementation's client (@grpc/grpc-js); an invalid traceparent gives no trace_id and
// is never written; no descriptor value (a caller's key) and no unknown domain is ever in the log.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import grpc from '@grpc/grpc-js';
import { startServer, waitFor } from './harness.mjs';

// Two a year: the third call of the test is over the limit whatever the hour (a day's window
// could end between two calls of a run near midnight UTC).
const RULES = {
  'edge.yaml': `
domain: edge
descriptors:
  - key: api_key
    rate_limit: {unit: year, requests_per_unit: 2, name: per_key}
`,
};

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;
// Caller text that must never reach the log: a key, an invalid traceparent's id, a domain no
// rule names.
const SECRET_KEY = 'sk-grpc-trace-5d1e7c9a';
const BAD_TRACE = '0badc0ffee0badc0ffee0badc0ffee0b';
const UNKNOWN_DOMAIN = 'domain-nobody-configured-77';

// The access log lines of gRPC calls in the server's stderr, as objects, in order.
function grpcLines(stderr) {
  const lines = [];
  for (const text of stderr.split('\n')) {
    if (!text.startsWith('{')) continue;
    const line = JSON.parse(text);
    if (line.protocol === 'grpc') lines.push(line);
  }
  return lines;
}

let server;
before(async () => {
  server = await startServer({ rules: RULES, config: { server: { log_format: 'json' } } });
});
after(async () => {
  if (server) await server.stop();
});

describe('the gRPC access log (server.log_format: json)', () => {
  it('carries a valid traceparent\'s trace id, and nothing of an invalid one or of the caller', async () => {
    const entries = [['api_key', SECRET_KEY]];
    const traced = await server.rls.check('edge', entries, { metadata: { traceparent: TRACEPARENT } });
    assert.equal(traced.overall_code, 'OK');
    // Upper-case hex and an all-zero parent id are not W3C trace context.
    const invalid = await server.rls.check('edge', entries, {
      metadata: { traceparent: `00-${BAD_TRACE.toUpperCase()}-00f067aa0ba902b7-01` },
    });
    assert.equal(invalid.overall_code, 'OK');
    const zeroParent = await server.rls.check('edge', entries, {
      metadata: { traceparent: `00-${BAD_TRACE}-0000000000000000-01` },
    });
    assert.equal(zeroParent.overall_code, 'OVER_LIMIT');
    const untraced = await server.rls.check(UNKNOWN_DOMAIN, entries);
    assert.equal(untraced.overall_code, 'OK');
    await assert.rejects(
      server.rls.check('', entries, { metadata: { traceparent: TRACEPARENT } }),
      (err) => err.code === grpc.status.INVALID_ARGUMENT,
    );

    // Lines leave in blocks (every 100 ms): wait for all five.
    const lines = await waitFor(() => {
      const found = grpcLines(server.stderr);
      return found.length >= 5 ? found : null;
    }, { what: 'five gRPC access log lines' });
    assert.equal(lines.length, 5, JSON.stringify(lines));
    for (const line of lines) {
      assert.equal(line.msg, 'request');
      assert.equal(line.level, 'info');
      assert.match(line.ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.equal(line.method, 'POST');
      assert.equal(line.path, '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit');
      assert.equal(line.peer, '127.0.0.1');
      assert.equal(typeof line.latency_us, 'number');
      assert.equal(line.descriptors, 1);
    }
    const [first, second, third, fourth, fifth] = lines;
    assert.deepEqual(
      { status: first.grpc_status, domain: first.domain, allowed: first.allowed, over: first.over_limit, trace: first.trace_id },
      { status: 'OK', domain: 'edge', allowed: true, over: 0, trace: TRACE_ID },
    );
    assert.equal(second.allowed, true);
    assert.equal('trace_id' in second, false, JSON.stringify(second));
    assert.deepEqual({ allowed: third.allowed, over: third.over_limit }, { allowed: false, over: 1 });
    assert.equal('trace_id' in third, false, JSON.stringify(third));
    assert.deepEqual({ domain: fourth.domain, allowed: fourth.allowed }, { domain: 'other', allowed: true });
    assert.equal('trace_id' in fourth, false);
    assert.deepEqual(
      { status: fifth.grpc_status, domain: fifth.domain, trace: fifth.trace_id, allowed: 'allowed' in fifth },
      { status: 'INVALID_ARGUMENT', domain: 'other', trace: TRACE_ID, allowed: false },
    );

    for (const secret of [SECRET_KEY, BAD_TRACE, BAD_TRACE.toUpperCase(), UNKNOWN_DOMAIN]) {
      assert.equal(server.stderr.includes(secret), false, `${secret} is in the log:\n${server.stderr}`);
    }
  });
});
