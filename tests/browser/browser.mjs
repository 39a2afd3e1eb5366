// Test library for spillway's HTML pages (the `simulate` report and `serve`'s /dashboard),
// loaded in a real headless Chromium: Debian's /usr/bin/chromium driven by playwright-core.
//
// What it gives the tests:
//   - launchBrowser(): Chromium, headless. It must start: a launch failure throws, so the
//     test fails (nothing here skips).
//   - openPage(browser, url): a fresh page that records every console error, uncaught page
//     error, failed request and request to a host other than the loopback (external
//     requests are also aborted before they leave the browser); problemsOf() lists them.
//   - canvasSizes(page, selector), screenshot(page, name), runBinary(args),
//     startServe(options), freePort(), tempDir(), waitFor(fn).
//   - openPage(..., { recordCanvas: true }) and canvasDrawings(page, selector): the boxes of
//     the text and the straight lines drawn on each canvas (a chart's tick labels, axis titles,
//     ticks and grid), and overlaps(drawing): which of them collide.
//
// Units: times in milliseconds; canvas sizes in pixels (bitmap and CSS); ports are numbers.
//
// Ownership: every `spillway serve` started here is tracked (tests/support/node/processes.mjs)
// and killed when the process exits, whatever happened (a failing test leaves nothing running), and so is Chromium (by
// playwright-core itself); each temp dir is removed then too. The caller still closes what it opened (browser.close(),
// server.stop()) so that one test file's processes end before the next file starts.
// Screenshots are kept: they go to $SPILLWAY_ARTIFACTS (created if missing), which the test
// run owns.

import { spawn, execFile } from 'node:child_process';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import {
  freePort,
  killChild,
  removeDir,
  sleep,
  tempDir as sharedTempDir,
  track,
  waitFor,
} from '../support/node/processes.mjs';

export const BINARY = process.env.SPILLWAY_BINARY || '/work/main/build/ci/src/spillway';
export const CHROMIUM = process.env.SPILLWAY_CHROMIUM || '/usr/bin/chromium';
export const ARTIFACTS = process.env.SPILLWAY_ARTIFACTS || path.join(os.tmpdir(), 'spillway-artifacts');

export { sleep, freePort, removeDir, waitFor };

export const tempDir = (prefix = 'spillway-browser-') => sharedTempDir(prefix);

// ---------------------------------------------------------------------------------------
// The spillway binary. It may be rebuilt while the tests run: a missing binary or a spawn
// that fails because the linker is writing it (ENOENT, ETXTBSY, ...) is retried for up to
// 30 s in all, then the error stands.

const RETRYABLE_SPAWN = new Set(['ENOENT', 'ETXTBSY', 'EACCES', 'ENOEXEC']);

async function retryingSpawn(fn, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (!RETRYABLE_SPAWN.has(err.code) || Date.now() > deadline) throw err;
      await sleep(500);
    }
  }
}

// Runs `spillway ARGS...` to completion. Resolves {code, stdout, stderr} whatever the exit
// status (the test asserts on it); rejects only when it cannot run or takes over timeoutMs.
export function runBinary(args, { timeoutMs = 60000 } = {}) {
  return retryingSpawn(
    () =>
      new Promise((resolve, reject) => {
        execFile(BINARY, args, { timeout: timeoutMs, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
          if (err && typeof err.code !== 'number') {
            // Not an exit status: a spawn error or the timeout's kill.
            err.message += `\nstderr:\n${stderr}`;
            reject(err);
          } else {
            resolve({ code: err ? err.code : 0, stdout, stderr });
          }
        });
      }),
  );
}

// Starts `spillway serve --listen 127.0.0.1:<free port> [--config FILE]` and resolves once it
// announces `spillway serve: listening on 127.0.0.1:PORT` on stderr.
//
// options:
//   configText: YAML written to a config file in a fresh temp dir, passed as --config.
//   args:       extra arguments.
//
// Resolves {port, url, stderr(), stop()}; `url` is http://127.0.0.1:PORT. A bind failure
// (the free port taken in between) is retried on another port, twice.
export async function startServe({ configText, args = [] } = {}) {
  const dir = await tempDir('spillway-browser-serve-');
  const extra = [...args];
  if (configText !== undefined) {
    const configPath = path.join(dir, 'spillway.yaml');
    await fsp.writeFile(configPath, configText);
    extra.push('--config', configPath);
  }
  for (let attempt = 1; ; attempt += 1) {
    const port = await freePort();
    try {
      const server = await retryingSpawn(() => launchServe(port, extra));
      const stop = server.stop;
      server.stop = async () => {
        await stop();
        await removeDir(dir);
      };
      return server;
    } catch (err) {
      if (attempt >= 3 || !/bind|in use/i.test(err.message)) {
        await removeDir(dir);
        throw err;
      }
    }
  }
}

function launchServe(port, extra) {
  const args = ['serve', '--listen', `127.0.0.1:${port}`, ...extra];
  return new Promise((resolve, reject) => {
    const child = track(spawn(BINARY, args, { stdio: ['ignore', 'pipe', 'pipe'] }));
    let stderr = '';
    let settled = false;
    const server = {
      port,
      url: `http://127.0.0.1:${port}`,
      process: child,
      stderr: () => stderr,
      stop: () => killChild(child),
    };
    const timer = setTimeout(() => {
      fail(new Error(`spillway serve did not listen within 15 s; args ${args.join(' ')}; stderr:\n${stderr}`));
    }, 15000);
    function fail(err) {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      killChild(child).finally(() => reject(err));
    }
    // A spawn error carries err.code, which retryingSpawn reads.
    child.once('error', fail);
    child.stdout.on('data', () => {});
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      if (settled) return;
      if (stderr.includes(`spillway serve: listening on 127.0.0.1:${port}`)) {
        settled = true;
        clearTimeout(timer);
        resolve(server);
      }
    });
    child.once('exit', (code, signal) => {
      fail(new Error(`spillway serve exited (code ${code}, signal ${signal}) before listening; args ${args.join(' ')}; stderr:\n${stderr}`));
    });
  });
}

// ---------------------------------------------------------------------------------------
// The browser.

// Loopback and local schemes are allowed; anything else is an external request.
const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);
const LOCAL_SCHEMES = new Set(['file:', 'data:', 'blob:', 'about:']);

export function isLocalUrl(url) {
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  if (LOCAL_SCHEMES.has(parsed.protocol)) return true;
  return LOCAL_HOSTS.has(parsed.hostname.toLowerCase());
}

// Starts headless Chromium; throws (failing the test) when it cannot start.
//   --no-sandbox: Chromium's sandbox refuses to run as root, and containers often lack the
//     user namespaces it needs.
//   --host-resolver-rules: no host but the loopback resolves (the rules apply to address
//     literals too), so nothing the browser does on its own, nor a page request that slipped
//     past the abort in openPage, can leave the machine.
// playwright-core adds the usual quiet switches (--disable-background-networking,
// --disable-component-update, --disable-dev-shm-usage, ...).
export async function launchBrowser() {
  const started = Date.now();
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    timeout: 30000,
    args: [
      '--no-sandbox',
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1, EXCLUDE [::1]',
    ],
  });
  browser.launchMs = Date.now() - started;
  return browser;
}

// Runs in the page before its own scripts (openPage's recordCanvas): wraps the 2D context's
// fillText, moveTo, lineTo and clearRect to keep, per canvas, the box of every text drawn and
// every straight segment drawn through the context itself. uPlot draws its tick labels, axis
// titles, ticks and grid so; its series go through Path2D and are not kept. A clearRect of the
// whole canvas starts that canvas' record afresh (uPlot clears before each redraw), so the
// record is what the canvas shows. Boxes are the glyphs' actual bounds (measureText) under the
// transform in force, in canvas pixels; a segment keeps its line width.
// window.__canvasDrawing(canvas) reads a record: {texts: [{text, font, left, top, right,
// bottom}], lines: [{x0, y0, x1, y1, width}]}.
function installCanvasRecorder() {
  const records = new WeakMap();
  const fresh = () => ({ texts: [], lines: [] });
  const recordOf = (canvas) => {
    if (!records.has(canvas)) records.set(canvas, fresh());
    return records.get(canvas);
  };
  const pens = new WeakMap();
  const onCanvas = (context, x, y) => context.getTransform().transformPoint(new DOMPoint(x, y));
  const proto = CanvasRenderingContext2D.prototype;
  const { fillText, moveTo, lineTo, clearRect } = proto;
  proto.fillText = function (text, x, y, ...rest) {
    const m = this.measureText(text);
    const corners = [
      [x - m.actualBoundingBoxLeft, y - m.actualBoundingBoxAscent],
      [x + m.actualBoundingBoxRight, y - m.actualBoundingBoxAscent],
      [x - m.actualBoundingBoxLeft, y + m.actualBoundingBoxDescent],
      [x + m.actualBoundingBoxRight, y + m.actualBoundingBoxDescent],
    ].map(([cx, cy]) => onCanvas(this, cx, cy));
    const xs = corners.map((p) => p.x);
    const ys = corners.map((p) => p.y);
    recordOf(this.canvas).texts.push({
      text: String(text), font: this.font,
      left: Math.min(...xs), top: Math.min(...ys), right: Math.max(...xs), bottom: Math.max(...ys),
    });
    return fillText.call(this, text, x, y, ...rest);
  };
  proto.moveTo = function (x, y) {
    pens.set(this, onCanvas(this, x, y));
    return moveTo.call(this, x, y);
  };
  proto.lineTo = function (x, y) {
    const from = pens.get(this);
    const to = onCanvas(this, x, y);
    if (from) recordOf(this.canvas).lines.push({ x0: from.x, y0: from.y, x1: to.x, y1: to.y, width: this.lineWidth });
    pens.set(this, to);
    return lineTo.call(this, x, y);
  };
  proto.clearRect = function (x, y, w, h) {
    if (x <= 0 && y <= 0 && x + w >= this.canvas.width && y + h >= this.canvas.height) records.set(this.canvas, fresh());
    return clearRect.call(this, x, y, w, h);
  };
  window.__canvasDrawing = (canvas) => records.get(canvas) || fresh();
}

// Opens url in a new context and page (1280×800 CSS px, device scale 1) and waits for the
// load event. Options: timeoutMs; timezoneId (an IANA zone for the page's clock, e.g.
// 'Asia/Kolkata'; default the machine's); recordCanvas (installCanvasRecorder, above, for
// canvasDrawings). Returns the page; page.problems holds what went wrong, filled as it happens:
//   consoleErrors:    console messages of type error ('text (url:line)')
//   pageErrors:       uncaught exceptions and unhandled rejections
//   failedRequests:   requests that failed, or were answered with a status ≥ 400
//   externalRequests: requests (and WebSockets) to anything but the loopback or file:;
//                     each is aborted before it is sent
// page.response is the main document's response (null for file: URLs).
export async function openPage(browser, url, { timeoutMs = 15000, timezoneId, recordCanvas = false } = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1, timezoneId });
  if (recordCanvas) await context.addInitScript(installCanvasRecorder);
  const page = await context.newPage();
  const problems = { consoleErrors: [], pageErrors: [], failedRequests: [], externalRequests: [] };
  page.problems = problems;

  await context.route(
    (requestUrl) => !isLocalUrl(requestUrl.href),
    (route) => route.abort('blockedbyclient'),
  );
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const { url: where, lineNumber } = message.location();
    problems.consoleErrors.push(where ? `${message.text()} (${where}:${lineNumber})` : message.text());
  });
  page.on('pageerror', (error) => {
    problems.pageErrors.push(error.stack || String(error));
  });
  page.on('request', (request) => {
    if (!isLocalUrl(request.url())) problems.externalRequests.push(`${request.method()} ${request.url()}`);
  });
  page.on('websocket', (socket) => {
    if (!isLocalUrl(socket.url())) problems.externalRequests.push(`WebSocket ${socket.url()}`);
  });
  page.on('requestfailed', (request) => {
    if (!isLocalUrl(request.url())) return; // already listed as external
    const failure = request.failure();
    problems.failedRequests.push(`${request.method()} ${request.url()}: ${failure ? failure.errorText : 'failed'}`);
  });
  page.on('response', (response) => {
    if (response.status() >= 400) {
      problems.failedRequests.push(`${response.request().method()} ${response.url()}: HTTP ${response.status()}`);
    }
  });

  page.response = await page.goto(url, { waitUntil: 'load', timeout: timeoutMs });
  return page;
}

// Closes the page's context (and so the page).
export async function closePage(page) {
  if (page) await page.context().close();
}

// Every problem recorded on the page, as lines; [] when it behaved.
export function problemsOf(page) {
  const lines = [];
  for (const [kind, list] of Object.entries(page.problems)) {
    for (const item of list) lines.push(`${kind}: ${item}`);
  }
  return lines;
}

// One entry per element matching selector (a canvas), in document order:
//   width, height:             the bitmap size (canvas.width / canvas.height), device px
//   clientWidth, clientHeight: the rendered size (bounding box), CSS px; 0 when not laid out
//   painted:                   true when some pixel is not fully transparent, false when the
//                              bitmap is blank, null when it has no 2D context to read
export function canvasSizes(page, selector) {
  return page.$$eval(selector, (canvases) =>
    canvases.map((canvas) => {
      const box = canvas.getBoundingClientRect();
      let painted = null;
      const context = canvas.width > 0 && canvas.height > 0 ? canvas.getContext('2d') : null;
      if (context) {
        const pixels = context.getImageData(0, 0, canvas.width, canvas.height).data;
        painted = false;
        for (let i = 3; i < pixels.length; i += 4) {
          if (pixels[i] !== 0) {
            painted = true;
            break;
          }
        }
      }
      return {
        width: canvas.width,
        height: canvas.height,
        clientWidth: Math.round(box.width),
        clientHeight: Math.round(box.height),
        painted,
      };
    }),
  );
}

// What is drawn on each canvas matching selector, in document order (openPage must have been
// given recordCanvas): {width, height} (the bitmap's, device px), plot (the uPlot plot area
// around it, from its div.u-over: {left, top, right, bottom}, or null), and the recorded
// texts and lines (installCanvasRecorder), all in the canvas' pixels.
export function canvasDrawings(page, selector) {
  return page.$$eval(selector, (canvases) =>
    canvases.map((canvas) => {
      const box = canvas.getBoundingClientRect();
      const over = canvas.closest('.uplot')?.querySelector('.u-over');
      const scale = box.width > 0 ? canvas.width / box.width : 1;
      let plot = null;
      if (over) {
        const o = over.getBoundingClientRect();
        plot = {
          left: (o.left - box.left) * scale, top: (o.top - box.top) * scale,
          right: (o.right - box.left) * scale, bottom: (o.bottom - box.top) * scale,
        };
      }
      if (!window.__canvasDrawing) throw new Error('the canvas recorder is not installed (openPage recordCanvas)');
      const { texts, lines } = window.__canvasDrawing(canvas);
      return { width: canvas.width, height: canvas.height, plot, texts, lines };
    }),
  );
}

// Boxes a and b ({left, top, right, bottom}) overlap by more than `slack` pixels both ways.
function boxesOverlap(a, b, slack) {
  return Math.min(a.right, b.right) - Math.max(a.left, b.left) > slack &&
         Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > slack;
}

// A segment's box, widened by half its line width.
function lineBox(l) {
  const half = l.width / 2;
  return {
    left: Math.min(l.x0, l.x1) - half, right: Math.max(l.x0, l.x1) + half,
    top: Math.min(l.y0, l.y1) - half, bottom: Math.max(l.y0, l.y1) + half,
  };
}

// What collides in a drawing of canvasDrawings, as sentences ([] when nothing does): two texts
// whose boxes overlap, a text over a line (a tick, a grid line), a text that runs off the
// canvas. Overlaps up to `slack` pixels (anti-aliasing's fringe) are let pass. Lines are
// assumed straight and axis-parallel (ticks and grid), so their box is their extent.
export function overlaps(drawing, { slack = 0.5 } = {}) {
  const found = [];
  const name = (t) => `"${t.text}" [${[t.left, t.top, t.right, t.bottom].map((v) => v.toFixed(1)).join(', ')}]`;
  const canvas = { left: 0, top: 0, right: drawing.width, bottom: drawing.height };
  drawing.texts.forEach((t, i) => {
    if (t.left < canvas.left - slack || t.top < canvas.top - slack || t.right > canvas.right + slack || t.bottom > canvas.bottom + slack) {
      found.push(`${name(t)} runs off the ${drawing.width}×${drawing.height} canvas`);
    }
    for (const u of drawing.texts.slice(i + 1)) {
      if (boxesOverlap(t, u, slack)) found.push(`${name(t)} overlaps ${name(u)}`);
    }
    for (const l of drawing.lines) {
      if (boxesOverlap(t, lineBox(l), slack)) {
        found.push(`${name(t)} crosses the line (${[l.x0, l.y0, l.x1, l.y1].map((v) => v.toFixed(1)).join(', ')})`);
      }
    }
  });
  return found;
}

// Writes a PNG of the page to $SPILLWAY_ARTIFACTS/name (the whole page by default) and
// returns its path.
export async function screenshot(page, name, { fullPage = true } = {}) {
  await fsp.mkdir(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, name);
  await page.screenshot({ path: file, fullPage, type: 'png' });
  return file;
}
