// Reloading the rules: an edited file, a ConfigMap-style symlink swap, a bad file, SIGHUP.

import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { startServer, tempDir, removeDir, unique, waitFor, sleep } from './harness.mjs';

const rules = (limit) => `
domain: reload
descriptors:
  - key: r
    rate_limit: {unit: hour, requests_per_unit: ${limit}}
`;

const started = [];
const dirs = [];
after(async () => {
  await Promise.all(started.map((s) => s.stop()));
  await Promise.all(dirs.map((d) => removeDir(d)));
});

async function serve(rulesPath, rls) {
  const server = await startServer({ rulesPath, config: { rls } });
  started.push(server);
  return server;
}

async function currentLimit(server) {
  const r = await server.rls.check('reload', [['r', unique('probe')]]);
  return r.statuses[0].current_limit?.requests_per_unit ?? null;
}

function limitBecomes(server, limit, what) {
  return waitFor(async () => (await currentLimit(server)) === limit, {
    timeoutMs: 10000,
    intervalMs: 100,
    what,
  });
}

describe('reload', () => {
  it('an edited rules file is picked up by the watcher', async () => {
    const dir = await tempDir('spillway-grpc-rules-');
    dirs.push(dir);
    const file = path.join(dir, 'rules.yaml');
    await fsp.writeFile(file, rules(2));
    const server = await serve(dir, { watch: '200ms' });
    assert.equal(await currentLimit(server), 2);
    await fsp.writeFile(file, rules(7)); // same size: content, not size, must be compared
    await limitBecomes(server, 7, 'the edited limit 7');
    // In force, not just reported: 7 calls admitted, the 8th denied.
    const v = unique('edited');
    for (let i = 0; i < 7; i += 1) assert.equal((await server.rls.check('reload', [['r', v]])).overall_code, 'OK');
    assert.equal((await server.rls.check('reload', [['r', v]])).overall_code, 'OVER_LIMIT');
    assert.ok((await server.metric('spillway_rls_config_reloads_total', { result: 'ok' })) >= 1);
  });

  it('a Kubernetes ConfigMap-style symlink swap is picked up', async () => {
    const dir = await tempDir('spillway-grpc-configmap-');
    dirs.push(dir);
    await fsp.mkdir(path.join(dir, '..v1'));
    await fsp.writeFile(path.join(dir, '..v1', 'rules.yaml'), rules(3));
    await fsp.symlink('..v1', path.join(dir, '..data'));
    await fsp.symlink('..data/rules.yaml', path.join(dir, 'rules.yaml'));
    const server = await serve(dir, { watch: '200ms' });
    assert.equal(await currentLimit(server), 3);

    await fsp.mkdir(path.join(dir, '..v2'));
    await fsp.writeFile(path.join(dir, '..v2', 'rules.yaml'), rules(11));
    await fsp.symlink('..v2', path.join(dir, '..data_tmp'));
    await fsp.rename(path.join(dir, '..data_tmp'), path.join(dir, '..data')); // atomic swap
    await fsp.rm(path.join(dir, '..v1'), { recursive: true });
    await limitBecomes(server, 11, 'the swapped-in limit 11');
  });

  it('a bad YAML file keeps the old rules and counts a reload error', async () => {
    const dir = await tempDir('spillway-grpc-rules-');
    dirs.push(dir);
    const file = path.join(dir, 'rules.yaml');
    await fsp.writeFile(file, rules(4));
    const server = await serve(dir, { watch: '200ms' });
    assert.equal(await currentLimit(server), 4);
    const errorsBefore = await server.metric('spillway_rls_config_reloads_total', { result: 'error' });
    await fsp.writeFile(file, 'domain: reload\ndescriptors: [\n  - key: r\n    rate_limit: {unit: hour\n');
    await waitFor(
      async () => (await server.metric('spillway_rls_config_reloads_total', { result: 'error' })) > errorsBefore,
      { timeoutMs: 10000, what: 'spillway_rls_config_reloads_total{result="error"} to rise' },
    );
    assert.equal(await currentLimit(server), 4, 'the old rules stay in force');
    const v = unique('bad');
    for (let i = 0; i < 4; i += 1) assert.equal((await server.rls.check('reload', [['r', v]])).overall_code, 'OK');
    assert.equal((await server.rls.check('reload', [['r', v]])).overall_code, 'OVER_LIMIT');
    // A fixed file is loaded again.
    await fsp.writeFile(file, rules(9));
    await limitBecomes(server, 9, 'the fixed limit 9');
  });

  it('SIGHUP reloads (watcher off)', async () => {
    const dir = await tempDir('spillway-grpc-rules-');
    dirs.push(dir);
    const file = path.join(dir, 'rules.yaml');
    await fsp.writeFile(file, rules(5));
    const server = await serve(dir, { watch: 'off' });
    assert.equal(await currentLimit(server), 5);
    await fsp.writeFile(file, rules(8));
    await sleep(1500);
    assert.equal(await currentLimit(server), 5, 'no watcher: nothing reloaded before SIGHUP');
    server.signal('SIGHUP');
    await limitBecomes(server, 8, 'the limit 8 after SIGHUP');
    assert.equal(server.process.exitCode, null, 'still running after SIGHUP');
  });
});
