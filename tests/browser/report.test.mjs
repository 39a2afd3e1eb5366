// The HTML report of `spillway simulate`, opened from disk (file:) in headless Chromium: it
// loads without errors and without asking the network for anything, draws its charts
// (uPlot canvases inside div.chart), and its summary table agrees with the CSV that the same
// command printed on stdout.

import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  launchBrowser,
  openPage,
  closePage,
  problemsOf,
  canvasSizes,
  screenshot,
  runBinary,
  tempDir,
  waitFor,
} from './browser.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const TRACE = path.join(here, '..', '..', 'examples', 'traces', 'login-burst.csv');

// What `simulate` runs when no --algorithm is given, and the header of its stdout CSV.
const DEFAULT_ALGORITHMS = ['fixed_window', 'sliding_log', 'sliding_window', 'token_bucket', 'gcra'];
const CSV_HEADER = 'algorithm,offered,admitted,denied,max_admitted_in_any_period';

const CASES = [
  {
    name: 'burst',
    screenshot: 'report-burst.png',
    args: ['--pattern', 'burst', '--rate', '50', '--duration', '60s', '--keys', '3', '--seed', '7', '--limit', '10', '--period', '10s'],
  },
  {
    name: 'login-burst',
    screenshot: 'report-login-burst.png',
    args: ['--trace', TRACE, '--limit', '5', '--period', '1s'],
  },
];

// simulate's stdout: the header, then one line per algorithm. Returns
// [{algorithm, offered, admitted, denied, max}] with numbers as numbers.
function parseSummary(stdout) {
  const lines = stdout.split('\n').filter((line) => line.trim() !== '');
  assert.equal(lines[0], CSV_HEADER, `simulate's stdout header; stdout:\n${stdout}`);
  return lines.slice(1).map((line) => {
    const fields = line.split(',');
    assert.equal(fields.length, 5, `simulate's stdout line: ${line}`);
    for (const field of fields.slice(1)) assert.match(field, /^\d+$/, `an integer in: ${line}`);
    const [algorithm, offered, admitted, denied, max] = fields;
    return { algorithm, offered: Number(offered), admitted: Number(admitted), denied: Number(denied), max: Number(max) };
  });
}

// Setup runs once, on first use, inside the tests (not in before hooks): when Chromium or
// simulate fails, every test that needs it fails with that error, instead of being cancelled.
let browserPromise;
function getBrowser() {
  browserPromise ??= launchBrowser();
  return browserPromise;
}
after(async () => {
  if (browserPromise) await (await browserPromise.catch(() => null))?.close();
});

for (const testCase of CASES) {
  describe(`simulate report: ${testCase.name}`, () => {
    let setupPromise;
    let page;

    // Runs simulate, opens its report, waits for the charts and saves the screenshot.
    // Resolves {summary, page}.
    function setup() {
      setupPromise ??= (async () => {
        const dir = await tempDir('spillway-browser-report-');
        const out = path.join(dir, 'report.html');
        const args = ['simulate', ...testCase.args, '--out', out];
        const result = await runBinary(args);
        assert.equal(result.code, 0, `spillway ${args.join(' ')} exited ${result.code}; stderr:\n${result.stderr}`);
        const summary = parseSummary(result.stdout);
        await fsp.access(out);
        page = await openPage(await getBrowser(), pathToFileURL(out).href);
        // uPlot may draw after the load event: wait for the charts' canvases (the tests say
        // what is wrong when they do not come), then keep a picture either way.
        await waitFor(
          async () => (await canvasSizes(page, 'div.chart canvas')).filter((c) => c.clientWidth > 0 && c.clientHeight > 0).length >= 3,
          { timeoutMs: 10000, what: 'three drawn div.chart canvases' },
        ).catch(() => {});
        await screenshot(page, testCase.screenshot);
        return { summary, page };
      })();
      return setupPromise;
    }
    after(async () => {
      await closePage(page);
    });

    it('stdout has one line per default algorithm, each adding up', async () => {
      const { summary } = await setup();
      assert.deepEqual(summary.map((row) => row.algorithm).sort(), [...DEFAULT_ALGORITHMS].sort());
      for (const row of summary) {
        assert.equal(row.admitted + row.denied, row.offered, `${row.algorithm}: admitted + denied = offered`);
        assert.ok(row.offered > 0, `${row.algorithm}: something was offered`);
      }
    });

    it('loads with no console error, page error, failed or external request', async () => {
      const { page } = await setup();
      assert.deepEqual(problemsOf(page), []);
    });

    it('draws at least 3 charts, each a non-empty canvas', async () => {
      const { page } = await setup();
      const canvases = await canvasSizes(page, 'div.chart canvas');
      assert.ok(canvases.length >= 3, `expected ≥ 3 div.chart canvas, found ${canvases.length}`);
      for (const [i, canvas] of canvases.entries()) {
        const where = `canvas ${i}: ${JSON.stringify(canvas)}`;
        assert.ok(canvas.width > 0 && canvas.height > 0, `bitmap size, ${where}`);
        assert.ok(canvas.clientWidth > 0 && canvas.clientHeight > 0, `rendered size, ${where}`);
        assert.notEqual(canvas.painted, false, `nothing drawn, ${where}`);
      }
    });

    it('table#summary has one row per algorithm with the admitted count of stdout', async () => {
      const { summary, page } = await setup();
      const rows = await page.$$eval('table#summary tr[data-algorithm]', (trs) =>
        trs.map((tr) => {
          const cells = tr.querySelectorAll('td[data-field="admitted"]');
          return {
            algorithm: tr.getAttribute('data-algorithm'),
            admittedCells: cells.length,
            admitted: cells.length > 0 ? cells[0].textContent.trim() : null,
          };
        }),
      );
      assert.deepEqual(
        rows.map((row) => row.algorithm).sort(),
        summary.map((row) => row.algorithm).sort(),
        'one tr[data-algorithm] per algorithm in stdout',
      );
      for (const row of rows) {
        const expected = summary.find((s) => s.algorithm === row.algorithm);
        assert.equal(row.admittedCells, 1, `${row.algorithm}: one td[data-field="admitted"]`);
        assert.match(row.admitted, /^\d+$/, `${row.algorithm}: admitted is an integer`);
        assert.equal(Number(row.admitted), expected.admitted, `${row.algorithm}: admitted in the page and on stdout`);
      }
    });
  });
}
