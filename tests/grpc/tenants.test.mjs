// Tenant records on Envoy's paths (docs/SPEC.md §9.8): with rls.tenant_key, a caller blocked
// through the admin API is OVER_LIMIT on ShouldRateLimit, nothing charged, and admitted again
// once the record is deleted; a server without rls.tenant_key says at start that blocks do not
// apply there.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { startServer, unique, waitFor, tempDir, removeDir } from './harness.mjs';

const RULES = `
domain: tenants
descriptors:
  - key: api_key
    rate_limit: {unit: hour, requests_per_unit: 5}
`;
const TOKEN = 'tok-grpc-tenants-6b2f91c4';

let dir;
const servers = {};
before(async () => {
  dir = await tempDir('spillway-grpc-tenants-');
  const tokens = path.join(dir, 'tokens');
  await fsp.writeFile(tokens, `ops ${TOKEN}\n`);
  const config = (rls) => ({
    server: { admin_listen: '127.0.0.1:0', admin_token_file: tokens },
    rls,
    layers: [{
      name: 'gateway',
      key: ['api_key'],
      by_plan: { source: 'store', default: 'free', plans: { free: '100/min' } },
    }],
  });
  const starts = {
    gated: startServer({ rules: { 't.yaml': RULES }, config: config({ tenant_key: 'api_key' }) }),
    plain: startServer({ rules: { 't.yaml': RULES }, config: config({ watch: '1s' }) }),
  };
  const results = await Promise.allSettled(Object.values(starts));
  Object.keys(starts).forEach((name, i) => {
    if (results[i].status === 'fulfilled') servers[name] = results[i].value;
  });
  const failed = results.find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
});
after(async () => {
  await Promise.all(Object.values(servers).map((s) => s.stop()));
  if (dir) await removeDir(dir);
});

async function admin(server, method, key, body) {
  const port = await waitFor(() => {
    const m = /admin API listening on 127\.0\.0\.1:(\d+)/.exec(server.stderr);
    return m && Number(m[1]);
  }, { what: 'the admin listener', timeoutMs: 30000 });
  const response = await fetch(`http://127.0.0.1:${port}/v1/tenants/${encodeURIComponent(key)}`, {
    method,
    headers: { Authorization: `Bearer ${TOKEN}` },
    body,
    signal: AbortSignal.timeout(30000),
  });
  return { status: response.status, body: await response.text() };
}

describe('tenant records on ShouldRateLimit', () => {
  it('rls.tenant_key: a blocked caller is OVER_LIMIT and charged nothing', async () => {
    const server = servers.gated;
    const key = unique('blk');
    const put = await admin(server, 'PUT', key, '{"blocked":true}');
    assert.equal(put.status, 200, put.body);
    for (let i = 0; i < 3; i += 1) {
      const r = await server.rls.check('tenants', [['api_key', key]]);
      assert.equal(r.overall_code, 'OVER_LIMIT');
      assert.equal(r.statuses[0].code, 'OVER_LIMIT');
    }
    const other = await server.rls.check('tenants', [['api_key', unique('ok')]]);
    assert.equal(other.overall_code, 'OK');
    assert.equal(other.statuses[0].limit_remaining, 4);
    const erased = await admin(server, 'DELETE', key);
    assert.equal(erased.status, 200, erased.body);
    const again = await server.rls.check('tenants', [['api_key', key]]);
    assert.equal(again.overall_code, 'OK');
    assert.equal(again.statuses[0].limit_remaining, 4, 'the blocked calls charged nothing');
  });

  it('without rls.tenant_key the rules alone decide, and serve says so at start', async () => {
    const server = servers.plain;
    assert.match(server.stderr, /warning: server\.grpc_listen: tenant records apply to POST \/v1\/check and GET \/v1\/auth only/);
    const key = unique('blk');
    assert.equal((await admin(server, 'PUT', key, '{"blocked":true}')).status, 200);
    const r = await server.rls.check('tenants', [['api_key', key]]);
    assert.equal(r.overall_code, 'OK');
  });
});
