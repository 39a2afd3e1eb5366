// Test harness for spillway serve's gRPC rate limit service (envoy.service.ratelimit.v3),
// driven with @grpc/grpc-js as the client: start/stop the server and a real redis-server,
// temp dirs, free ports, promise-returning gRPC helpers, Prometheus scraping.
//
// Every process started here is tracked (tests/support/node/processes.mjs): stop() kills it
// (SIGTERM, then SIGKILL), and an exit hook kills whatever a failing test left behind.

import { spawn, execFile } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import {
  freePort,
  killChild,
  removeDir,
  sleep,
  tempDir as sharedTempDir,
  track,
  waitFor,
} from '../support/node/processes.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

export const BINARY = process.env.SPILLWAY_BINARY || '/work/main/build/ci/src/spillway';
export const PROTO_DIR = process.env.SPILLWAY_PROTO_DIR || '/work/main/proto';
export const REDIS_SERVER = process.env.REDIS_SERVER || 'redis-server';
export const REDIS_CLI = process.env.REDIS_CLI || 'redis-cli';

export { sleep, freePort, removeDir, waitFor };

export const tempDir = (prefix = 'spillway-grpc-') => sharedTempDir(prefix);

// A unique suffix for descriptor values, so tests never share counters.
let uniqueCounter = 0;
export function unique(prefix = 'v') {
  uniqueCounter += 1;
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${uniqueCounter}`;
}

// ---------------------------------------------------------------------------------------
// gRPC clients.

const loadOptions = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };

let rlsPackage;
function rlsService() {
  if (!rlsPackage) {
    const definition = protoLoader.loadSync('envoy/service/ratelimit/v3/rls.proto', {
      ...loadOptions,
      includeDirs: [PROTO_DIR],
    });
    rlsPackage = grpc.loadPackageDefinition(definition);
  }
  return rlsPackage.envoy.service.ratelimit.v3.RateLimitService;
}

let healthPackage;
function healthService() {
  if (!healthPackage) {
    const definition = protoLoader.loadSync(path.join(here, 'health.proto'), loadOptions);
    healthPackage = grpc.loadPackageDefinition(definition);
  }
  return healthPackage.grpc.health.v1.Health;
}

// Promise wrapper: resolves with the response, rejects with the grpc-js ServiceError
// (err.code, err.details). Every call has a deadline so a hang fails instead of blocking; the
// default is long enough for a sanitized server on a loaded machine (tests never time calls).
// `metadata`: {name: value} sent as the call's metadata (e.g. a W3C traceparent).
function unary(client, method, request, { deadlineMs = 20000, metadata } = {}) {
  return new Promise((resolve, reject) => {
    const deadline = new Date(Date.now() + deadlineMs);
    const sent = new grpc.Metadata();
    for (const [name, value] of Object.entries(metadata || {})) sent.set(name, value);
    client[method](request, sent, { deadline }, (err, response) => {
      if (err) reject(err);
      else resolve(response);
    });
  });
}

// Builds a RateLimitRequest from a compact form:
//   rlsRequest('d', [[['k','v'],['k2','v2']], ...], {hits_addend})
// or descriptors already shaped as {entries:[{key,value}], limit, hits_addend}.
export function descriptor(entries, extra = {}) {
  return {
    entries: entries.map(([key, value]) => ({ key, value: value ?? '' })),
    ...extra,
  };
}

export class RlsClient {
  // credentials: grpc-js channel credentials (tls.test.mjs: createSsl); default plaintext.
  constructor(address, credentials = grpc.credentials.createInsecure()) {
    const Service = rlsService();
    this.client = new Service(address, credentials);
    const Health = healthService();
    this.health = new Health(address, credentials);
  }

  // request: {domain, descriptors, hits_addend}
  shouldRateLimit(request, options) {
    return unary(this.client, 'ShouldRateLimit', request, options);
  }

  // Shorthand: one descriptor of entries [[key, value], ...].
  check(domain, entries, { hits_addend, descriptorExtra, ...options } = {}) {
    const request = { domain, descriptors: [descriptor(entries, descriptorExtra)] };
    if (hits_addend !== undefined) request.hits_addend = hits_addend;
    return this.shouldRateLimit(request, options);
  }

  healthCheck(service = '', options) {
    return unary(this.health, 'Check', { service }, options);
  }

  close() {
    this.client.close();
    this.health.close();
  }
}

// duration_until_reset as seconds (number), or null when absent.
export function durationSeconds(duration) {
  if (!duration) return null;
  return Number(duration.seconds) + Number(duration.nanos || 0) / 1e9;
}

// ---------------------------------------------------------------------------------------
// Metrics.

function parseLabels(text) {
  const labels = {};
  const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  let m;
  while ((m = re.exec(text)) !== null) {
    labels[m[1]] = m[2].replace(/\\n/g, '\n').replace(/\\(.)/g, '$1');
  }
  return labels;
}

export function parseMetrics(text) {
  const samples = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    samples.push({ name: m[1], labels: m[3] ? parseLabels(m[3]) : {}, value: Number(m[4]) });
  }
  return samples;
}

// The value of the sample named `name` whose labels include all of `labels` (0 if none).
export function metricValue(samples, name, labels = {}) {
  let total = 0;
  let found = false;
  for (const s of samples) {
    if (s.name !== name) continue;
    if (!Object.entries(labels).every(([k, v]) => s.labels[k] === v)) continue;
    total += s.value;
    found = true;
  }
  return found ? total : 0;
}

export async function httpGet(port, urlPath) {
  const response = await fetch(`http://127.0.0.1:${port}${urlPath}`, {
    signal: AbortSignal.timeout(5000),
  });
  const body = await response.text();
  return { status: response.status, body };
}

// ---------------------------------------------------------------------------------------
// spillway serve.

// A tiny YAML emitter for the config file: mappings, and lists of scalars or of mappings.
function toYaml(value, indent = '') {
  let out = '';
  for (const [key, v] of Object.entries(value)) {
    if (Array.isArray(v)) {
      out += `${indent}${key}:\n`;
      for (const item of v) {
        out += item !== null && typeof item === 'object'
          ? `${indent}  - ${toYaml(item, `${indent}    `).trimStart()}`
          : `${indent}  - ${JSON.stringify(String(item))}\n`;
      }
    } else if (v !== null && typeof v === 'object') {
      out += `${indent}${key}:\n${toYaml(v, indent + '  ')}`;
    } else {
      out += `${indent}${key}: ${JSON.stringify(String(v))}\n`;
    }
  }
  return out;
}

async function waitForBinary(timeoutMs = 60000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await fsp.access(BINARY, fs.constants.X_OK);
      return;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`spillway binary ${BINARY} missing: ${err.message}`);
      await sleep(500);
    }
  }
}

// Starts `spillway serve` and resolves once both listeners are announced.
//
// options:
//   rules:   {filename: yamlText} written into a fresh rules dir (the --rls-config path),
//            or rulesPath: an existing file or directory.
//   config:  an object written as YAML to a config file (--config); rls.config is set to
//            the rules path when the config has an rls section (and --rls-config too).
//   backend: a URL for --backend.
export async function startServer(options = {}) {
  const dir = await tempDir('spillway-grpc-serve-');
  let rulesPath = options.rulesPath;
  if (!rulesPath) {
    rulesPath = path.join(dir, 'rules');
    await fsp.mkdir(rulesPath);
    for (const [name, text] of Object.entries(options.rules || {})) {
      await fsp.writeFile(path.join(rulesPath, name), text);
    }
  }
  const args = ['serve', '--listen', '127.0.0.1:0', '--grpc-listen', '127.0.0.1:0', '--rls-config', rulesPath];
  if (options.config) {
    const config = structuredClone(options.config);
    if (config.rls) config.rls = { config: rulesPath, ...config.rls };
    const configPath = path.join(dir, 'spillway.yaml');
    await fsp.writeFile(configPath, toYaml(config));
    args.push('--config', configPath);
  }
  if (options.backend) args.push('--backend', options.backend);

  // The binary may be rebuilt under us: a missing binary or a spawn failure (ENOENT,
  // ETXTBSY while the linker writes it) is retried for up to 30 s in all, then fails.
  const deadline = Date.now() + 30000;
  for (;;) {
    await waitForBinary(Math.max(0, deadline - Date.now()));
    try {
      return await launch(args, dir, rulesPath);
    } catch (err) {
      if (!err.retryable || Date.now() > deadline) {
        await removeDir(dir);
        throw err;
      }
      await sleep(500);
    }
  }
}

function launch(args, dir, rulesPath) {
  return new Promise((resolve, reject) => {
    let child;
    try {
      child = track(spawn(BINARY, args, { stdio: ['ignore', 'pipe', 'pipe'] }));
    } catch (err) {
      err.retryable = true;
      reject(err);
      return;
    }
    let stderr = '';
    let httpPort = null;
    let grpcPort = null;
    let settled = false;
    const timer = setTimeout(() => {
      fail(new Error(`spillway serve did not announce its listeners within 15 s; stderr:\n${stderr}`));
    }, 15000);
    let stopping = false;  // set when this harness kills the server (not a death under a test)
    function fail(err) {
      if (settled) return;
      settled = true;
      stopping = true;
      clearTimeout(timer);
      killChild(child).finally(() => reject(err));
    }
    child.on('error', (err) => {
      err.retryable = err.code === 'ENOENT' || err.code === 'ETXTBSY' || err.code === 'EACCES' || err.code === 'ENOEXEC';
      fail(err);
    });
    child.stdout.on('data', () => {});
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      server.stderr = stderr;
      if (settled) return;
      const http = /spillway serve: listening on 127\.0\.0\.1:(\d+)/.exec(stderr);
      const rpc = /spillway serve: gRPC rate limit service listening on 127\.0\.0\.1:(\d+)/.exec(stderr);
      if (http) httpPort = Number(http[1]);
      if (rpc) grpcPort = Number(rpc[1]);
      if (httpPort && grpcPort) {
        settled = true;
        clearTimeout(timer);
        server.httpPort = httpPort;
        server.grpcPort = grpcPort;
        server.rls = new RlsClient(`127.0.0.1:${grpcPort}`);
        resolve(server);
      }
    });
    child.once('exit', (code, signal) => {
      fail(new Error(`spillway serve exited (code ${code}, signal ${signal}) before listening; args ${args.join(' ')}; stderr:\n${stderr}`));
      // A server that dies under a test (a crash, a sanitizer's report) shows why at once, in
      // the test's output, whatever the test then asserts.
      if (settled && !stopping) {
        process.stderr.write(`spillway serve (pid ${child.pid}) exited under the test (code ${code}, signal ${signal}); its stderr:\n${stderr}\n`);
      }
    });

    const server = {
      process: child,
      dir,
      rulesPath,
      stderr: '',
      httpPort: null,
      grpcPort: null,
      rls: null,
      async metrics() {
        const { status, body } = await httpGet(this.httpPort, '/metrics');
        if (status !== 200) throw new Error(`/metrics answered ${status}`);
        return parseMetrics(body);
      },
      async metric(name, labels) {
        return metricValue(await this.metrics(), name, labels);
      },
      signal(sig) {
        child.kill(sig);
      },
      // Stops the server; throws if it had died before (a crash) or its stderr holds a
      // sanitizer's report, so that no test passes over either.
      async stop() {
        if (this.rls) this.rls.close();
        const died = child.exitCode !== null || child.signalCode !== null;
        stopping = true;
        await killChild(child);
        await removeDir(dir);
        if (died || /Sanitizer|runtime error:/.test(stderr)) {
          throw new Error(`spillway serve (pid ${child.pid}) ${died ? `had exited (code ${child.exitCode}, signal ${child.signalCode})` : 'reported a sanitizer finding'}; its stderr:\n${stderr}`);
        }
      },
    };
  });
}

// ---------------------------------------------------------------------------------------
// redis-server.

function run(file, args, { timeoutMs = 5000 } = {}) {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: timeoutMs }, (err, stdout, stderr) => {
      if (err) {
        err.stderr = stderr;
        reject(err);
      } else {
        resolve(stdout);
      }
    });
  });
}

// Starts a throwaway redis-server on a free loopback port; rejects if it cannot start. A port
// taken between freePort() and redis-server's bind is retried on another one, twice.
export async function startRedis() {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await startRedisOnce();
    } catch (err) {
      if (attempt >= 3 || !/Address already in use/.test(err.message)) throw err;
    }
  }
}

async function startRedisOnce() {
  const dir = await tempDir('spillway-grpc-redis-');
  const port = await freePort();
  const child = track(
    spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  let output = '';
  child.stdout.on('data', (c) => (output += c));
  child.stderr.on('data', (c) => (output += c));
  const closed = new Promise((resolve) => child.once('close', resolve));
  const spawnError = new Promise((_, reject) => child.once('error', reject));
  spawnError.catch(() => {});
  const redis = {
    port,
    process: child,
    url: `redis://127.0.0.1:${port}`,
    cli(...args) {
      return run(REDIS_CLI, ['-p', String(port), ...args]);
    },
    // Calls of EVAL/EVALSHA (the scripts spillway runs) from INFO commandstats.
    async scriptCalls() {
      const info = await this.cli('info', 'commandstats');
      let calls = 0;
      for (const m of info.matchAll(/cmdstat_(evalsha|eval|evalsha_ro|eval_ro):calls=(\d+)/g)) {
        calls += Number(m[2]);
      }
      return calls;
    },
    async stop() {
      await killChild(child);
      await removeDir(dir);
    },
  };
  try {
    await Promise.race([
      spawnError,
      child.exited.then(async ({ code }) => {
        await Promise.race([closed, sleep(1000)]);  // its last output may still be in the pipes
        throw new Error(`redis-server exited with ${code}: ${output}`);
      }),
      waitFor(async () => (await redis.cli('ping')).trim() === 'PONG', {
        timeoutMs: 10000,
        what: `redis-server on port ${port}`,
      }),
    ]);
  } catch (err) {
    await redis.stop();
    throw new Error(`redis-server could not start: ${err.message}`);
  }
  return redis;
}

export { grpc };
