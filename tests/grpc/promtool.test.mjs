// /metrics as a platform's Prometheus sees it: `promtool check metrics` (Debian's prometheus
// package) finds nothing to say about the whole exposition while the rate limit service (RLS,
// shadow_mode and over-limit answers included) and the quota service (RLQS) have been used, and
// the families a platform expects are there: spillway_build_info, process_* and
// spillway_config_reloads_total counting a good and a bad SIGHUP reload of --config.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fsp from 'node:fs/promises';
import path from 'node:path';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import { startServer, httpGet, parseMetrics, metricValue, unique, waitFor, PROTO_DIR } from './harness.mjs';

const PROMTOOL_RULES = {
  'lint.yaml': `
domain: lint
descriptors:
  - key: tight
    rate_limit: {unit: hour, requests_per_unit: 1}
  - key: shadowed
    shadow_mode: true
    rate_limit: {unit: hour, requests_per_unit: 1}
`,
  'quota.yaml': `
domain: quota
descriptors:
  - key: name
    value: shared
    rate_limit: {unit: second, requests_per_unit: 100, algorithm: gcra}
`,
};

// One RLQS report on a fresh stream, resolved with the first answer (or the stream's error).
function promtoolQuotaReport(port) {
  const definition = protoLoader.loadSync('envoy/service/rate_limit_quota/v3/rlqs.proto', {
    keepCase: true,
    longs: Number,
    enums: String,
    defaults: true,
    oneofs: true,
    includeDirs: [PROTO_DIR],
  });
  const Service = grpc.loadPackageDefinition(definition).envoy.service.rate_limit_quota.v3.RateLimitQuotaService;
  const client = new Service(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const call = client.StreamRateLimitQuotas({ deadline: Date.now() + 30000 });
  return new Promise((resolve, reject) => {
    call.on('data', (response) => {
      call.end();
      client.close();
      resolve(response);
    });
    call.on('error', (err) => {
      client.close();
      reject(err);
    });
    call.write({
      domain: 'quota',
      bucket_quota_usages: [{
        bucket_id: { bucket: { name: 'shared' } },
        time_elapsed: { seconds: 1, nanos: 0 },
        num_requests_allowed: 3,
        num_requests_denied: 0,
      }],
    });
  });
}

// promtool check metrics on `text`: its exit status and everything it printed.
function promtoolCheck(text) {
  const run = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 60000 });
  if (run.error) throw new Error(`promtool did not run (install Debian's prometheus, scripts/setup.sh): ${run.error.message}`);
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

let server;
before(async () => {
  server = await startServer({ rules: PROMTOOL_RULES, config: { rls: {} } });
});
after(async () => {
  if (server) await server.stop();
});

describe('promtool check metrics', () => {
  it('is clean with the RLS and RLQS paths active', async () => {
    const tight = unique('tight');
    assert.equal((await server.rls.check('lint', [['tight', tight]])).overall_code, 'OK');
    assert.equal((await server.rls.check('lint', [['tight', tight]])).overall_code, 'OVER_LIMIT');
    const shadowed = unique('shadow');
    for (let i = 0; i < 3; i += 1) {
      assert.equal((await server.rls.check('lint', [['shadowed', shadowed]])).overall_code, 'OK');
    }
    const answer = await promtoolQuotaReport(server.grpcPort);
    assert.ok(answer.bucket_action.length > 0, JSON.stringify(answer));
    assert.equal((await httpGet(server.httpPort, '/healthz')).status, 200);

    const { status, body } = await httpGet(server.httpPort, '/metrics');
    assert.equal(status, 200);
    assert.match(body, /^spillway_rls_hits_total\{domain="lint",descriptor="tight"\} 2$/m);
    assert.match(body, /^spillway_rls_shadow_mode_total\{domain="lint",descriptor="shadowed"\} 2$/m);
    const lint = promtoolCheck(body);
    assert.equal(lint.output, '', `promtool check metrics:\n${lint.output}\non:\n${body}`);
    assert.equal(lint.status, 0, body);
  });

  it('has build info, process metrics and counts main config reloads by result', async () => {
    const samples = parseMetrics((await httpGet(server.httpPort, '/metrics')).body);
    const build = samples.find((s) => s.name === 'spillway_build_info');
    assert.ok(build && build.value === 1 && /^\d+\.\d+\.\d+/.test(build.labels.version), JSON.stringify(build));
    // CPU time is counted in the kernel's ticks (10 ms): a quick server may not have used one.
    const cpu = metricValue(samples, 'process_cpu_seconds_total');
    assert.ok(samples.some((s) => s.name === 'process_cpu_seconds_total') && cpu >= 0, `process_cpu_seconds_total ${cpu}`);
    assert.ok(metricValue(samples, 'process_resident_memory_bytes') > 1e6);
    assert.ok(metricValue(samples, 'process_open_fds') >= 3);
    const started = metricValue(samples, 'process_start_time_seconds');
    assert.ok(Math.abs(started - Date.now() / 1000) < 3600, `start time ${started}`);
    assert.equal(metricValue(samples, 'spillway_config_reloads_total', { result: 'success' }), 0);
    assert.equal(metricValue(samples, 'spillway_config_reloads_total', { result: 'failure' }), 0);

    const configPath = path.join(server.dir, 'spillway.yaml');
    const good = await fsp.readFile(configPath, 'utf8');
    const reloads = async (result) => server.metric('spillway_config_reloads_total', { result });
    await fsp.writeFile(configPath, 'policy: [not, a, mapping\n');
    server.signal('SIGHUP');
    await waitFor(async () => (await reloads('failure')) === 1, { timeoutMs: 30000, what: 'a failed reload counted' });
    await fsp.writeFile(configPath, good);
    server.signal('SIGHUP');
    await waitFor(async () => (await reloads('success')) === 1, { timeoutMs: 30000, what: 'a good reload counted' });
    assert.equal(await reloads('failure'), 1);

    const lint = promtoolCheck((await httpGet(server.httpPort, '/metrics')).body);
    assert.equal(lint.output, '', lint.output);
    assert.equal(lint.status, 0);
  });
});
