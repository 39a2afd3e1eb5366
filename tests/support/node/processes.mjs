// Shared by the Node test harnesses (tests/grpc/harness.mjs, tests/browser/browser.mjs):
// child processes that cannot outlive the test process, free loopback ports, temp dirs removed
// at exit, and polling. Plain Node, no npm dependency.
//
// Ownership: a child passed to track() is killed (SIGKILL) when the process exits or gets
// SIGINT/SIGTERM, whatever the test did; killChild() stops one earlier, politely. A dir made
// by tempDir() is removed at exit unless removeDir() removed it first.
// Units: milliseconds; ports are numbers.

import fs from 'node:fs';
import fsp from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const live = new Set();
const tempDirs = new Set();

process.on('exit', () => {
  for (const child of live) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  live.clear();
  for (const dir of tempDirs) {
    try {
      fs.rmSync(dir, { recursive: true, force: true });
    } catch {
      // best effort
    }
  }
});
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => process.exit(130));  // runs the exit hook above
}

// Remembers a child and adds `child.exited`, a promise of {code, signal}. Returns the child.
export function track(child) {
  live.add(child);
  child.exited = new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    });
  });
  return child;
}

// SIGTERM, then SIGKILL after graceMs; resolves once the child is gone (or 2 s after SIGKILL).
export async function killChild(child, graceMs = 3000) {
  const running =
      child && child.pid !== undefined && child.exitCode === null && child.signalCode === null;
  if (running) {
    try {
      child.kill('SIGTERM');
    } catch {
      // gone
    }
    const ended = await Promise.race([child.exited, sleep(graceMs).then(() => null)]);
    if (ended === null) {
      try {
        child.kill('SIGKILL');
      } catch {
        // gone
      }
      await Promise.race([child.exited, sleep(2000)]);
    }
  }
  live.delete(child);
}

// A port that was free on 127.0.0.1 a moment ago (the caller binds it soon after, and retries
// on another one if something took it in between).
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

// A fresh directory under the system temp dir, removed at exit (or by removeDir).
export async function tempDir(prefix) {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

export async function removeDir(dir) {
  tempDirs.delete(dir);
  await fsp.rm(dir, { recursive: true, force: true });
}

// Polls fn until it returns a truthy value (returned) or timeoutMs passes; then throws with
// the last value or error, so a failure says what was last seen.
export async function waitFor(fn, { timeoutMs = 10000, intervalMs = 100, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const seen = last instanceof Error ? last.message : JSON.stringify(last);
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last: ${seen}`);
    }
    await sleep(intervalMs);
  }
}
