// spillway serve's /dashboard in headless Chromium (memory backend, the seed policy): it
// loads without errors and without asking the network for anything, shows the decision
// total, the most denied keys, the backend's status and its charts, and follows traffic sent
// to /v1/check. `server.dashboard: off` turns the page off (404); /v1/stats is JSON.

import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  launchBrowser,
  openPage,
  closePage,
  problemsOf,
  canvasSizes,
  screenshot,
  startServe,
  waitFor,
} from './browser.mjs';

// The seed policy allows /search 10 a minute per API key, so 30 checks are partly denied.
const CHECK_BODY = JSON.stringify({ ip: '203.0.113.7', api_key: 'k1', endpoint: '/search' });
const CHECKS = 30;

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
      page = await openPage(browser, `${server.url}/dashboard`);
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
