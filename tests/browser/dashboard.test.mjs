// spillway serve's /dashboard in headless Chromium (memory backend, the seed policy): it
// loads without errors and without asking the network for anything, shows the decision
// total, the most denied keys, the backend's status and its charts, and follows traffic sent
// to /v1/check. `server.dashboard: off` turns the page off (404); /v1/stats is JSON. The
// chart's time axis shows the clock (HH:MM:SS, in the browser's time zone, which the test sets
// to one far from UTC) over a fixed window of the last 5 minutes: the tick labels are read
// from what is drawn on the canvas (browser.mjs' canvas recorder), the range from the uPlot
// instance, before and after more points arrive.

import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  launchBrowser,
  openPage,
  closePage,
  problemsOf,
  canvasSizes,
  canvasDrawings,
  screenshot,
  startServe,
  waitFor,
} from './browser.mjs';

// The seed policy allows /search 10 a minute per API key, so 30 checks are partly denied.
const CHECK_BODY = JSON.stringify({ ip: '203.0.113.7', api_key: 'k1', endpoint: '/search' });
const CHECKS = 30;

// The page's time zone: UTC+05:30, so that a clock shown in UTC, or off by whole hours, fails.
const TIME_ZONE = 'Asia/Kolkata';
const WINDOW_S = 300; // the chart's window: the last 5 minutes

// Seconds since midnight of "HH:MM:SS", or null when `text` is not of that form.
function secondsOfDay(text) {
  const match = /^(\d\d):(\d\d):(\d\d)$/.exec(text);
  if (!match) return null;
  const [h, m, s] = match.slice(1).map(Number);
  return h < 24 && m < 60 && s < 60 ? h * 3600 + m * 60 + s : null;
}

// Seconds since midnight now, on the clock of TIME_ZONE.
function nowOfDay() {
  const format = new Intl.DateTimeFormat('en-GB', {
    timeZone: TIME_ZONE, hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23',
  });
  return secondsOfDay(format.format(new Date()));
}

// `a` − `b` in seconds of day, across midnight: in [−12 h, 12 h).
const dayDifference = (a, b) => ((((a - b) % 86400) + 86400 + 43200) % 86400) - 43200;

// The x tick labels drawn on the chart's canvas: texts under the plot area, less the bold axis
// title (uPlot draws titles in bold).
async function xTickLabels(page) {
  const [drawing] = await canvasDrawings(page, 'div.chart[data-chart="decisions"] canvas');
  if (!drawing || !drawing.plot) throw new Error('no chart canvas with a plot area');
  return drawing.texts
    .filter((t) => t.top >= drawing.plot.bottom && !/\bbold\b/.test(t.font))
    .sort((a, b) => a.left - b.left)
    .map((t) => t.text);
}

// The chart's x scale and its newest x value, from the uPlot instance the page keeps.
function xScale(page) {
  return page.evaluate(() => {
    const u = window.spillwayDashboard && window.spillwayDashboard.chart;
    if (!u) throw new Error('no window.spillwayDashboard.chart');
    const x = u.data[0];
    return { min: u.scales.x.min, max: u.scales.x.max, points: x.length, newest: x.length > 0 ? x[x.length - 1] : null };
  });
}

// The integer an element shows (digit grouping allowed: "1,234"), or null when it shows
// something else or is missing.
async function shownInteger(page, selector) {
  const element = await page.$(selector);
  if (!element) return null;
  const text = (await element.textContent()).trim();
  const digits = text.replace(/[,\s\u00a0\u202f]/g, '');
  return /^\d+$/.test(digits) ? Number(digits) : null;
}

// Setup runs once, on first use, inside the tests (not in before hooks): when Chromium or
// the server fails, every test that needs it fails with that error, instead of being
// cancelled.
describe('dashboard (seed policy, memory backend)', () => {
  let server;
  let browser;
  let page;
  let setupPromise;

  // Starts serve and Chromium and opens /dashboard. Resolves {server, page}.
  function setup() {
    setupPromise ??= (async () => {
      server = await startServe();
      browser = await launchBrowser();
      page = await openPage(browser, `${server.url}/dashboard`, { timezoneId: TIME_ZONE, recordCanvas: true });
      return { server, page };
    })();
    return setupPromise;
  }
  after(async () => {
    // The page polls the server: close it before the server goes, or it logs errors.
    await closePage(page);
    if (browser) await browser.close();
    if (server) await server.stop();
  });

  it('GET /dashboard is 200 text/html', async () => {
    const { page } = await setup();
    assert.equal(page.response.status(), 200);
    assert.match(page.response.headers()['content-type'] || '', /^text\/html/);
  });

  it('#total-decisions grows by the checks sent, and table#top-denied lists a key', async () => {
    const { server, page } = await setup();
    // Each waitFor below throws what the page shows while it is not there yet, which
    // waitFor reports if it never comes.
    const start = await waitFor(async () => {
      const shown = await shownInteger(page, '#total-decisions');
      if (shown === null) {
        const text = await page.textContent('#total-decisions', { timeout: 1000 });
        throw new Error(`#total-decisions shows ${JSON.stringify(text)}`);
      }
      return { shown };
    }, { timeoutMs: 10000, what: '#total-decisions to show an integer' });

    const statuses = [];
    for (let i = 0; i < CHECKS; i += 1) {
      const response = await fetch(`${server.url}/v1/check`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: CHECK_BODY,
        signal: AbortSignal.timeout(5000),
      });
      await response.arrayBuffer();
      statuses.push(response.status);
    }
    assert.ok(statuses.every((s) => s === 200 || s === 429), `statuses: ${statuses.join(' ')}`);
    assert.ok(statuses.includes(429), `some checks denied; statuses: ${statuses.join(' ')}`);

    await waitFor(async () => {
      const shown = await shownInteger(page, '#total-decisions');
      const deniedRows = await page.$$eval('table#top-denied tbody tr', (rows) => rows.length);
      if (shown === null || shown < start.shown + CHECKS || deniedRows < 1) {
        throw new Error(`#total-decisions ${shown}, table#top-denied rows ${deniedRows}`);
      }
      return true;
    }, { timeoutMs: 10000, what: `#total-decisions ≥ ${start.shown} + ${CHECKS} and a row in table#top-denied` });
    // Each denied key's row names the plan its layer applied (empty for layers without plans).
    const headers = await page.$$eval('table#top-denied thead th', (cells) => cells.map((c) => c.textContent));
    assert.deepEqual(headers, ['key', 'layer', 'plan', 'denials (at least)', 'over-count at most']);
    const cells = await page.$$eval('table#top-denied tbody tr:first-child td', (tds) => tds.length);
    assert.equal(cells, 5);
  });

  it('#backend-status says up', async () => {
    const { page } = await setup();
    const text = await page.textContent('#backend-status', { timeout: 5000 });
    assert.match(text || '', /\bup\b/i);
  });

  it('draws at least one chart in a non-empty canvas', async () => {
    const { page } = await setup();
    const drawn = await waitFor(async () => {
      const canvases = await canvasSizes(page, 'div.chart canvas');
      const sized = canvases.filter((c) => c.width > 0 && c.height > 0 && c.clientWidth > 0 && c.clientHeight > 0);
      if (sized.length === 0) throw new Error(`div.chart canvases: ${JSON.stringify(canvases)}`);
      return sized;
    }, { timeoutMs: 10000, what: 'a div.chart canvas with a non-zero size' });
    assert.ok(drawn.some((c) => c.painted !== false), `a sized canvas with something drawn: ${JSON.stringify(drawn)}`);
  });

  it('the time axis shows HH:MM:SS of the last 5 minutes, in the browser\'s time zone', async () => {
    const { page } = await setup();
    // Wait for a drawn point (the second answer of /v1/stats), then read the drawn labels.
    const labels = await waitFor(async () => {
      const shown = await xTickLabels(page);
      const points = await page.evaluate(() => window.spillwayDashboard?.chart?.data[0].length ?? 0);
      if (points < 1 || shown.length < 3) throw new Error(`${points} points; x tick labels ${JSON.stringify(shown)}`);
      return shown;
    }, { timeoutMs: 15000, what: 'a point on the chart and 3 x tick labels' });
    const now = nowOfDay();
    for (const label of labels) {
      const at = secondsOfDay(label);
      assert.notEqual(at, null, `x tick label ${JSON.stringify(label)} is not HH:MM:SS; all: ${JSON.stringify(labels)}`);
      const ago = -dayDifference(at, now);
      assert.ok(ago >= -60 && ago <= WINDOW_S + 60,
        `x tick label ${label} is ${ago} s before ${TIME_ZONE}'s ${new Date().toLocaleTimeString('en-GB', { timeZone: TIME_ZONE })} (want within the last ${WINDOW_S} s, ± 60); all: ${JSON.stringify(labels)}`);
    }
    // Together they span most of the window: the first within its first third, the last within
    // its last third.
    const first = -dayDifference(secondsOfDay(labels[0]), now);
    const last = -dayDifference(secondsOfDay(labels[labels.length - 1]), now);
    assert.ok(first >= (2 * WINDOW_S) / 3 - 60 && last <= WINDOW_S / 3 + 60, `labels from ${labels[0]} to ${labels[labels.length - 1]}`);
    const stated = await page.textContent('#chart-window');
    assert.equal(stated, 'last 5 min');
  });

  it('the x range is the fixed window [newest − 5 min, newest], as points arrive', async () => {
    const { page } = await setup();
    const before = await waitFor(async () => {
      const scale = await xScale(page);
      if (scale.points < 1) throw new Error(`x scale ${JSON.stringify(scale)}`);
      return scale;
    }, { timeoutMs: 15000, what: 'a point on the chart' });
    const after = await waitFor(async () => {
      const scale = await xScale(page);
      if (scale.points < before.points + 2) throw new Error(`x scale ${JSON.stringify(scale)}, before ${JSON.stringify(before)}`);
      return scale;
    }, { timeoutMs: 15000, what: 'two more points on the chart' });
    for (const scale of [before, after]) {
      const where = `x scale ${JSON.stringify(scale)} (seconds since the epoch)`;
      assert.ok(Math.abs(scale.max - scale.min - WINDOW_S) < 1e-6, `${where}: spans ${scale.max - scale.min} s, not ${WINDOW_S}`);
      assert.ok(Math.abs(scale.max - scale.newest) < 1e-6, `${where}: ends at the newest point`);
      assert.ok(Math.abs(scale.max - Date.now() / 1000) < 60, `${where}: ends within a minute of now (${Date.now() / 1000})`);
    }
    assert.ok(after.max > before.max, `the window moved on with the newer points: ${before.max} → ${after.max}`);
  });

  it('saves dashboard.png', async () => {
    const { page } = await setup();
    await screenshot(page, 'dashboard.png');
  });

  // Last, so that it covers the whole visit, polling included.
  it('has had no console error, page error, failed or external request', async () => {
    const { page } = await setup();
    assert.deepEqual(problemsOf(page), []);
  });

  it('GET /v1/stats is JSON', async () => {
    const { server } = await setup();
    const response = await fetch(`${server.url}/v1/stats`, { signal: AbortSignal.timeout(5000) });
    const body = await response.text();
    assert.equal(response.status, 200, body);
    assert.match(response.headers.get('content-type') || '', /^application\/json/);
    const stats = JSON.parse(body);
    assert.ok(stats !== null && typeof stats === 'object' && !Array.isArray(stats), `a JSON object: ${body}`);
  });
});

describe('dashboard: off', () => {
  let server;

  after(async () => {
    if (server) await server.stop();
  });

  it('GET /dashboard is 404', async () => {
    server = await startServe({ configText: 'server:\n  dashboard: off\n' });
    const response = await fetch(`${server.url}/dashboard`, { signal: AbortSignal.timeout(5000) });
    await response.arrayBuffer();
    assert.equal(response.status, 404);
  });
});
