// The HTML report of `spillway simulate`, opened from disk (file:) in headless Chromium: it
// loads without errors and without asking the network for anything, draws its charts
// (uPlot canvases inside div.chart), and its summary table agrees with the CSV that the same
// command printed on stdout. In every chart admitted is drawn in cool colours and denied in warm
// ones, each legend says which is which, and algorithms whose lines coincide (token_bucket and
// gcra decide alike for an equal burst) all still show: read from the uPlot series themselves
// (window.spillwayReport.charts) and from the overview's pixels. No chart's tick label meets a
// tick, a grid line, another label or an axis title, also where the counts run to hundreds of
// thousands: read from what is drawn on each canvas (the boxes of its text and lines,
// browser.mjs' canvas recorder), and from the SVG chart (`--svg`) as the browser lays it out.

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
  canvasDrawings,
  overlaps,
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
    // Algorithms whose admitted series are equal in this run (asserted: the case needs them).
    coinciding: ['token_bucket', 'gcra'],
    args: ['--pattern', 'burst', '--rate', '50', '--duration', '60s', '--keys', '3', '--seed', '7', '--limit', '10', '--period', '10s'],
  },
  {
    name: 'login-burst',
    screenshot: 'report-login-burst.png',
    coinciding: [],
    args: ['--trace', TRACE, '--limit', '5', '--period', '1s'],
  },
  {
    // Over 2 million requests a second at the peak (a burst offers 5 × the rate): y tick labels
    // of 7 characters and more, up the whole axis, the middle ones beside its title.
    name: 'heavy',
    screenshot: 'report-heavy.png',
    coinciding: [],
    args: ['--pattern', 'burst', '--rate', '450000', '--duration', '4s', '--keys', '50', '--seed', '1', '--limit', '1000', '--period', '1s'],
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

// A CSS colour of the forms the report uses (#rgb, #rrggbb, #rrggbbaa, rgb(), rgba()) as
// {r, g, b} in 0..255 and its hue in degrees (0..360) and saturation (0..1, HSL).
function parseColour(text) {
  let r, g, b;
  const hex = /^#([0-9a-f]{3}|[0-9a-f]{6}|[0-9a-f]{8})$/i.exec(text);
  const fn = /^rgba?\((\d+),\s*(\d+),\s*(\d+)/i.exec(text);
  if (hex) {
    const h = hex[1].length === 3 ? [...hex[1]].map((c) => c + c).join('') : hex[1];
    [r, g, b] = [0, 2, 4].map((i) => parseInt(h.slice(i, i + 2), 16));
  } else if (fn) {
    [r, g, b] = fn.slice(1, 4).map(Number);
  } else {
    assert.fail(`not a colour the test reads: ${JSON.stringify(text)}`);
  }
  const [rf, gf, bf] = [r / 255, g / 255, b / 255];
  const max = Math.max(rf, gf, bf);
  const min = Math.min(rf, gf, bf);
  const light = (max + min) / 2;
  const d = max - min;
  const saturation = d === 0 ? 0 : d / (1 - Math.abs(2 * light - 1));
  let hue = 0;
  if (d > 0) {
    if (max === rf) hue = 60 * (((gf - bf) / d) % 6);
    else if (max === gf) hue = 60 * ((bf - rf) / d + 2);
    else hue = 60 * ((rf - gf) / d + 4);
  }
  return { r, g, b, hue: (hue + 360) % 360, saturation };
}

// Cool (green, cyan, blue, purple) and warm (red, orange, amber, pink) hues.
const isCool = (c) => c.saturation > 0.25 && c.hue >= 75 && c.hue <= 290;
const isWarm = (c) => c.saturation > 0.25 && (c.hue <= 60 || c.hue >= 300);

// What a series counts, from its label: "admitted" (`admitted`, `<algorithm> admitted`),
// "denied" or "offered"; null when the label does not say.
function kindOf(label) {
  const match = /^(?:([a-z_]+) )?(admitted|denied)$|^(offered)\b/.exec(label);
  return match ? match[2] ?? match[3] : null;
}

// Every uPlot of the report: [{chart, series: [{label, stroke, dash, width, legend}]}], the
// x series left out; `stroke` as the series draws it, `legend` the text of its legend label.
function chartSeries(page) {
  return page.evaluate(() => {
    const charts = (window.spillwayReport && window.spillwayReport.charts) || {};
    return Object.entries(charts).map(([chart, u]) => {
      const legend = [...u.root.querySelectorAll('.u-legend .u-series .u-label')].map((e) => e.textContent);
      return {
        chart,
        series: u.series.slice(1).map((s, i) => ({
          label: s.label,
          stroke: typeof s.stroke === 'function' ? s.stroke(u, i + 1) : s.stroke,
          dash: s.dash ?? [],
          width: s.width,
          legend: legend[i + 1] ?? null,
        })),
      };
    });
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

    // Runs simulate, opens its report (recording what its canvases draw), waits for the
    // charts and saves the screenshot. Resolves {summary, page, svg} (svg: the --svg file).
    function setup() {
      setupPromise ??= (async () => {
        const dir = await tempDir('spillway-browser-report-');
        const out = path.join(dir, 'report.html');
        const svg = path.join(dir, 'chart.svg');
        const args = ['simulate', ...testCase.args, '--out', out, '--svg', svg];
        // The heavy case simulates ~3 million requests per algorithm: about a minute under
        // ThreadSanitizer on an idle 2-core machine, more beside other tests. The deadline only
        // turns a hang into a failure (ctest's own is 300 s for the whole file).
        const result = await runBinary(args, { timeoutMs: 240000 });
        assert.equal(result.code, 0, `spillway ${args.join(' ')} exited ${result.code}; stderr:\n${result.stderr}`);
        const summary = parseSummary(result.stdout);
        await fsp.access(out);
        page = await openPage(await getBrowser(), pathToFileURL(out).href, { recordCanvas: true });
        // uPlot may draw after the load event: wait for the charts' canvases (the tests say
        // what is wrong when they do not come), then keep a picture either way.
        await waitFor(
          async () => (await canvasSizes(page, 'div.chart canvas')).filter((c) => c.clientWidth > 0 && c.clientHeight > 0).length >= 3,
          { timeoutMs: 10000, what: 'three drawn div.chart canvases' },
        ).catch(() => {});
        await screenshot(page, testCase.screenshot);
        return { summary, page, svg };
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

    it('every chart is a uPlot whose legend says admitted, denied or offered for each series', async () => {
      const { page } = await setup();
      const names = await page.$$eval('div.chart', (divs) => divs.map((d) => d.getAttribute('data-chart')));
      const charts = await chartSeries(page);
      assert.deepEqual(charts.map((c) => c.chart).sort(), [...names].sort(), 'one uPlot per div.chart, kept in window.spillwayReport.charts');
      for (const { chart, series } of charts) {
        for (const s of series) {
          assert.notEqual(kindOf(s.label), null, `${chart}: series "${s.label}" does not say admitted, denied or offered`);
          assert.equal(s.legend, s.label, `${chart}: the legend shows the series' label`);
        }
      }
      const kinds = Object.fromEntries(charts.map((c) => [c.chart, new Set(c.series.map((s) => kindOf(s.label)))]));
      assert.deepEqual([...kinds.overview].sort(), ['admitted', 'offered'], 'the overview');
      assert.deepEqual([...kinds['retry-after']], ['denied'], 'the retry_after histogram counts denials');
      for (const algorithm of DEFAULT_ALGORITHMS) {
        assert.deepEqual([...kinds[`algorithm-${algorithm}`]].sort(), ['admitted', 'denied', 'offered'], algorithm);
      }
    });

    it('admitted is in cool colours and denied in warm ones, the same for an algorithm in every chart', async () => {
      const { page } = await setup();
      const charts = await chartSeries(page);
      assert.ok(charts.length >= 3, `uPlot charts found: ${charts.length}`);
      const colourOf = { admitted: new Map(), denied: new Map() }; // algorithm -> stroke
      for (const { chart, series } of charts) {
        const strokes = { admitted: new Set(), denied: new Set() };
        for (const s of series) {
          const kind = kindOf(s.label);
          if (kind === 'offered') continue;
          assert.ok(kind, `${chart}: series "${s.label}" does not say whether it is admitted or denied`);
          const colour = parseColour(s.stroke);
          const where = `${chart}: "${s.label}" drawn in ${s.stroke} (hue ${colour.hue.toFixed(0)}°)`;
          assert.ok(kind === 'admitted' ? isCool(colour) : isWarm(colour),
            `${where}: ${kind} must be ${kind === 'admitted' ? 'blue/green/purple' : 'red/orange'}`);
          strokes[kind].add(s.stroke.toLowerCase());
          const algorithm = chart.startsWith('algorithm-') ? chart.slice('algorithm-'.length) : s.label.split(' ')[0];
          const seen = colourOf[kind].get(algorithm);
          if (seen !== undefined) assert.equal(s.stroke.toLowerCase(), seen, `${where}: ${algorithm} ${kind} elsewhere is ${seen}`);
          colourOf[kind].set(algorithm, s.stroke.toLowerCase());
        }
        const shared = [...strokes.admitted].filter((c) => strokes.denied.has(c));
        assert.deepEqual(shared, [], `${chart}: colours used for both admitted and denied`);
      }
      for (const algorithm of DEFAULT_ALGORITHMS) {
        assert.ok(colourOf.admitted.has(algorithm) && colourOf.denied.has(algorithm), `${algorithm}: an admitted and a denied colour`);
      }
    });

    it('no two algorithm lines share colour and dash, and a line drawn over another leaves it showing', async () => {
      const { page } = await setup();
      const charts = await chartSeries(page);
      const overview = charts.find((c) => c.chart === 'overview');
      assert.ok(overview, 'the overview chart');
      const lines = overview.series.filter((s) => kindOf(s.label) !== 'offered');
      assert.equal(lines.length, DEFAULT_ALGORITHMS.length, 'one admitted line per algorithm');
      for (const [i, earlier] of lines.entries()) {
        for (const later of lines.slice(i + 1)) {
          const pair = `"${earlier.label}" (${earlier.stroke} ${JSON.stringify(earlier.dash)} ${earlier.width}px) and "${later.label}" (${later.stroke} ${JSON.stringify(later.dash)} ${later.width}px)`;
          assert.ok(earlier.stroke.toLowerCase() !== later.stroke.toLowerCase(), `${pair}: one colour`);
          assert.notDeepEqual(earlier.dash, later.dash, `${pair}: one dash`);
          // Drawn later = on top: thinner (the earlier one shows at its edges) and, unless the
          // earlier one is solid and much wider, broken (the earlier one shows in its gaps).
          assert.ok(later.width < earlier.width, `${pair}: the one on top is not thinner`);
          assert.ok(later.dash.length > 0, `${pair}: the one on top is a solid line`);
        }
      }
      // In each algorithm's own chart, denied is drawn over admitted: thinner, so both show.
      for (const { chart, series } of charts.filter((c) => c.chart.startsWith('algorithm-'))) {
        const admitted = series.find((s) => kindOf(s.label) === 'admitted');
        const denied = series.find((s) => kindOf(s.label) === 'denied');
        assert.ok(series.indexOf(denied) > series.indexOf(admitted), `${chart}: denied drawn last`);
        assert.ok(denied.width < admitted.width, `${chart}: denied (${denied.width}px) thinner than admitted (${admitted.width}px)`);
      }
    });

    it('no tick label meets a tick, a grid line, another label or an axis title, on every chart', async () => {
      const { page } = await setup();
      const names = await page.$$eval('div.chart canvas', (canvases) =>
        canvases.map((c) => c.closest('div.chart').getAttribute('data-chart')));
      const drawings = await canvasDrawings(page, 'div.chart canvas');
      assert.ok(drawings.length >= 3, `charts drawn: ${drawings.length}`);
      const found = [];
      drawings.forEach((drawing, i) => {
        // Something was recorded: tick labels on both axes (left of and under the plot) and the
        // ticks themselves, so that no overlap is not for want of anything drawn.
        const { plot } = drawing;
        assert.ok(plot, `${names[i]}: a uPlot plot area`);
        const left = drawing.texts.filter((t) => t.right <= plot.left);
        const under = drawing.texts.filter((t) => t.top >= plot.bottom);
        assert.ok(left.length >= 3 && under.length >= 3, `${names[i]}: texts left of the plot ${JSON.stringify(left.map((t) => t.text))}, under it ${JSON.stringify(under.map((t) => t.text))}`);
        assert.ok(drawing.lines.length >= 4, `${names[i]}: ticks and grid lines drawn: ${drawing.lines.length}`);
        for (const problem of overlaps(drawing)) found.push(`${names[i]}: ${problem}`);
      });
      assert.deepEqual(found, []);
    });

    it('the SVG chart (--svg): no text meets another text or a line, nor runs off the chart', async () => {
      const { svg } = await setup();
      const svgPage = await openPage(await getBrowser(), pathToFileURL(svg).href);
      try {
        // Boxes as laid out, in the SVG's pixels (it is drawn at 1:1 from the page's corner).
        const drawing = await svgPage.$eval('svg', (root) => {
          const box = (e) => {
            const r = e.getBoundingClientRect();
            return { left: r.left, top: r.top, right: r.right, bottom: r.bottom };
          };
          return {
            width: root.width.baseVal.value,
            height: root.height.baseVal.value,
            texts: [...root.querySelectorAll('text')].map((t) => ({ text: t.textContent, ...box(t) })),
            lines: [...root.querySelectorAll('line')].map((l) => {
              const r = box(l);
              return { x0: r.left, y0: r.top, x1: r.right, y1: r.bottom, width: Number(l.getAttribute('stroke-width') || 1) };
            }),
          };
        });
        assert.ok(drawing.texts.length >= 10, `texts in the SVG: ${drawing.texts.length}`);
        assert.deepEqual(overlaps(drawing), []);
      } finally {
        await closePage(svgPage);
      }
    });

    it('every algorithm\'s admitted line shows in the overview\'s pixels, also where lines coincide', async () => {
      const { page } = await setup();
      const data = await page.evaluate(() => JSON.parse(document.getElementById('report-data').textContent));
      const rates = Object.fromEntries(data.algorithms.map((a) => [a.name, a.admitted_rate]));
      for (const name of testCase.coinciding.slice(1)) {
        assert.deepEqual(rates[name], rates[testCase.coinciding[0]], `${name} and ${testCase.coinciding[0]} admit alike in this run (the case needs it)`);
        assert.ok(rates[name].some((r) => r > 0), `${name} admitted something`);
      }
      const charts = await chartSeries(page);
      const overview = charts.find((c) => c.chart === 'overview');
      assert.ok(overview, 'the overview chart');
      const colours = overview.series.filter((s) => kindOf(s.label) !== 'offered').map((s) => ({ label: s.label, ...parseColour(s.stroke) }));
      assert.equal(colours.length, DEFAULT_ALGORITHMS.length, 'one line per algorithm in the overview');
      // Pixels of the overview's canvas within a small distance of each line's colour.
      const counts = await page.$eval('div.chart[data-chart="overview"] canvas', (canvas, wanted) => {
        const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
        const found = wanted.map(() => 0);
        for (let p = 0; p < pixels.length; p += 4) {
          if (pixels[p + 3] < 250) continue;
          wanted.forEach((c, i) => {
            const d = Math.hypot(pixels[p] - c.r, pixels[p + 1] - c.g, pixels[p + 2] - c.b);
            if (d <= 24) found[i] += 1;
          });
        }
        return found;
      }, colours);
      const seen = Object.fromEntries(colours.map((c, i) => [c.label, counts[i]]));
      for (const c of colours) {
        assert.ok(seen[c.label] >= 100, `"${c.label}" shows in ${seen[c.label]} pixels of the overview (want ≥ 100); all: ${JSON.stringify(seen)}`);
      }
    });
  });
}
