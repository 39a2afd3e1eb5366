// rate_limit.charge: after_response (docs/SPEC.md §9.2) driven the way Envoy's rate limit filter
// drives it for an LLM API's tokens per minute: the request-time call sends the API key's
// descriptor without a hits_addend (checked, at the request's cost of 1), and the call made
// when the stream is done (apply_on_stream_done) sends the same descriptor with its own
// hits_addend, the tokens the response used (charged without a check, as debt, always OK).
// The scenario runs on the memory backend and on a real redis-server, where the two calls of one
// request go to two serve processes sharing it (as Envoy's calls may reach different replicas).
// A rules file with an unknown charge stops serve, and validate, with an error naming the field.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fsp from 'node:fs/promises';
import path from 'node:path';
import {
  BINARY,
  durationSeconds,
  removeDir,
  sleep,
  startRedis,
  startServer,
  tempDir,
  unique,
} from './harness.mjs';
import { killChild, track } from '../support/node/processes.mjs';

const LIMIT = 10000; // tokens a minute per API key
const TPM = { requests_per_unit: LIMIT, unit: 'MINUTE', name: 'tpm' };

const RULES = {
  'llm.yaml': `domain: llm
descriptors:
  - key: api_key
    rate_limit:
      name: tpm
      unit: minute
      requests_per_unit: ${LIMIT}
      algorithm: fixed_window
      charge: after_response
  # The same limit without the option: a descriptor's own hits_addend is checked, as before.
  - key: plain_key
    rate_limit: {unit: minute, requests_per_unit: ${LIMIT}}
`,
};

// The request-time call: the descriptor as Envoy's request-path rate_limits entry builds it, no
// hits_addend of its own (and the request's left at 0, which counts 1).
function atRequest(rls, key, value) {
  return rls.shouldRateLimit({ domain: 'llm', descriptors: [{ entries: [{ key, value }] }] });
}

// The stream-done call: the same descriptor with its own hits_addend (a UInt64Value).
function onStreamDone(rls, key, value, tokens) {
  return rls.shouldRateLimit({
    domain: 'llm',
    descriptors: [{ entries: [{ key, value }], hits_addend: { value: tokens } }],
  });
}

function assertResetWithinAMinute(status, what) {
  const seconds = durationSeconds(status.duration_until_reset);
  assert.ok(seconds > 0 && seconds <= 60, `${what}: duration_until_reset ${seconds} s in (0, 60]`);
}

// fixed_window counts per minute of the wall clock (this machine's, which serve and Redis share):
// the scenario must not straddle a minute's end, so one started in a minute's last 20 s waits
// for the next minute (at most 20 s).
async function awayFromTheMinutesEnd() {
  const intoMinute = Date.now() % 60000;
  if (intoMinute > 40000) await sleep(60000 - intoMinute + 250);
}

// requestSide answers the request-time calls, doneSide the stream-done ones.
async function tokensPerMinute(requestSide, doneSide) {
  await awayFromTheMinutesEnd();
  const k1 = unique('k1');
  const k2 = unique('k2');

  // (a) The request-time call: checked, OK, the check itself counts 1.
  let r = await atRequest(requestSide, 'api_key', k1);
  assert.equal(r.overall_code, 'OK', '(a) request-time call');
  assert.equal(r.statuses.length, 1);
  assert.equal(r.statuses[0].code, 'OK');
  assert.deepEqual(r.statuses[0].current_limit, TPM);
  assert.equal(r.statuses[0].limit_remaining, LIMIT - 1, '(a) the check costs 1');

  // (b) The stream is done: 9000 tokens used, charged.
  r = await onStreamDone(doneSide, 'api_key', k1, 9000);
  assert.equal(r.overall_code, 'OK', '(b) stream-done call with hits_addend 9000');
  assert.equal(r.statuses[0].code, 'OK');
  assert.deepEqual(r.statuses[0].current_limit, TPM);
  assert.equal(r.statuses[0].limit_remaining, LIMIT - 1 - 9000, '(b) 9001 used');

  // (c) Another stream of the same key ends with 5000 more than the 999 left: charged anyway (the
  // work has run), the key owes the rest; still OK.
  r = await onStreamDone(doneSide, 'api_key', k1, 5000);
  assert.equal(r.overall_code, 'OK', '(c) a charge past the limit is never denied');
  assert.equal(r.statuses[0].code, 'OK');
  assert.equal(r.statuses[0].limit_remaining, 0, '(c) in debt: nothing remains');

  // (d) The next request of that key is over the limit until the debt is paid off.
  r = await atRequest(requestSide, 'api_key', k1);
  assert.equal(r.overall_code, 'OVER_LIMIT', '(d) request-time call of a key in debt');
  assert.equal(r.statuses[0].code, 'OVER_LIMIT');
  assert.deepEqual(r.statuses[0].current_limit, TPM);
  assert.equal(r.statuses[0].limit_remaining, 0);
  assertResetWithinAMinute(r.statuses[0], '(d)');

  // (e) Another API key has its own budget.
  r = await atRequest(requestSide, 'api_key', k2);
  assert.equal(r.overall_code, 'OK', '(e) another api_key is unaffected');
  assert.equal(r.statuses[0].limit_remaining, LIMIT - 1);

  // A stream that ends while its key is in debt is still charged and answered OK.
  r = await onStreamDone(doneSide, 'api_key', k1, 1);
  assert.equal(r.overall_code, 'OK', 'a stream-done call of a key in debt');
  assert.equal(r.statuses[0].limit_remaining, 0);
  r = await atRequest(requestSide, 'api_key', k1);
  assert.equal(r.overall_code, 'OVER_LIMIT', 'still in debt');

  // Without charge: after_response, the same calls are checks: the second one does not fit.
  const p = unique('p');
  r = await onStreamDone(doneSide, 'plain_key', p, 9000);
  assert.equal(r.overall_code, 'OK');
  assert.equal(r.statuses[0].limit_remaining, LIMIT - 9000);
  r = await onStreamDone(doneSide, 'plain_key', p, 5000);
  assert.equal(r.overall_code, 'OVER_LIMIT', 'an on_request rule checks the hits_addend');
  assert.equal(r.statuses[0].limit_remaining, LIMIT - 9000, 'a denied check charges nothing');
}

describe('memory backend', () => {
  let server;
  before(async () => {
    server = await startServer({ rules: RULES });
  });
  after(async () => {
    await server?.stop();
  });

  it('tokens per minute: checked at request time, charged as debt when the stream is done', async () => {
    await tokensPerMinute(server.rls, server.rls);
  });
});

describe('redis backend', () => {
  let redis;
  let first; // answers the request-time calls
  let second; // answers the stream-done calls
  before(async () => {
    redis = await startRedis();
    // The over-limit cache on, as in production: a charge passes it by, a denial is cached.
    const config = { backend: { url: redis.url, over_limit_cache: 1000, timeout: '2s' } };
    const [a, b] = await Promise.allSettled([
      startServer({ rules: RULES, config }),
      startServer({ rules: RULES, config }),
    ]);
    if (a.status === 'fulfilled') first = a.value;
    if (b.status === 'fulfilled') second = b.value;
    if (a.status === 'rejected') throw a.reason;
    if (b.status === 'rejected') throw b.reason;
  });
  after(async () => {
    await Promise.all([first?.stop(), second?.stop()]);
    await redis?.stop();
  });

  it('tokens per minute across two serve processes sharing one Redis', async () => {
    const scriptsBefore = await redis.scriptCalls();
    await tokensPerMinute(first.rls, second.rls);
    assert.ok((await redis.scriptCalls()) > scriptsBefore, 'the counts live in Redis');
  });
});

// Runs the spillway binary to its end (at most timeoutMs, then killed): {code, signal, stderr}.
function runBinary(args, timeoutMs = 20000) {
  return new Promise((resolve, reject) => {
    const child = track(spawn(BINARY, args, { stdio: ['ignore', 'pipe', 'pipe'] }));
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => {
      killChild(child);
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

describe('a rules file with an unknown charge', () => {
  let dir;
  let file;
  before(async () => {
    dir = await tempDir('spillway-grpc-charge-');
    file = path.join(dir, 'llm.yaml');
    await fsp.writeFile(
      file,
      [
        'domain: llm',
        'descriptors:',
        '  - key: api_key',
        '    rate_limit:',
        '      unit: minute',
        '      requests_per_unit: 10000',
        '      charge: sometimes',
        '',
      ].join('\n'),
    );
  });
  after(async () => {
    if (dir) await removeDir(dir);
  });

  const namesTheField = (stderr) => {
    assert.match(stderr, /line 7: descriptors\[0\]\.rate_limit\.charge: /, stderr);
    assert.match(stderr, /unknown charge .*sometimes.*\(expected on_request or after_response\)/, stderr);
  };

  it('serve refuses to start, naming the field', async () => {
    const run = await runBinary([
      'serve', '--listen', '127.0.0.1:0', '--grpc-listen', '127.0.0.1:0', '--rls-config', file,
    ]);
    assert.equal(run.signal, null, `serve ended by itself, not killed: ${run.stderr}`);
    assert.equal(run.code, 1, run.stderr);
    assert.doesNotMatch(run.stderr, /listening on/, 'nothing was served');
    namesTheField(run.stderr);
  });

  it('validate --rls fails the same way', async () => {
    const run = await runBinary(['validate', '--rls', file]);
    assert.equal(run.code, 1, run.stderr);
    assert.equal(run.stdout, '');
    namesTheField(run.stderr);
  });
});
