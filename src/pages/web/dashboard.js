// The live dashboard of `spillway serve` (GET /dashboard): polls GET /v1/stats (docs/SPEC.md §5)
// once a second, turns the counters into per-second rates, and draws them with uPlot over a fixed
// window of the last 5 minutes. The x values are the server's wall clock at each answer
// (now_unix_ms, as seconds since the Unix epoch); the axis shows them as HH:MM:SS in the
// browser's local time, and its range is [newest − 5 min, newest], so it scrolls rather than
// rescales as points arrive. Rates divide by uptime_s (the server's monotonic clock), which a
// change of the wall clock cannot upset. The chart is kept in window.spillwayDashboard.chart
// (the browser test reads its scale from there). Makes no request other than /v1/stats on its
// own server.
(function () {
  'use strict';
  const windowSeconds = 300;
  const text = (id, value) => { document.getElementById(id).textContent = value; };
  const number = (n) => Number(n).toLocaleString('en-US');
  let previous = null;   // the last stats object, for rates
  let plot = null;       // the uPlot chart, rebuilt when the set of series changes
  let seriesKeys = [];   // "layer|outcome" of each series after x
  const columns = [[]];  // x (the server's clock, s since the epoch), then one array per series
  window.spillwayDashboard = { chart: null, windowSeconds: windowSeconds };
  text('chart-window', 'last ' + windowSeconds / 60 + ' min');

  // [newest − window, newest]: the newest sample's time, or the browser's before there is one.
  function xRange() {
    const newest = columns[0].length > 0 ? columns[0][columns[0].length - 1] : Date.now() / 1000;
    return [newest - windowSeconds, newest];
  }

  // The series worth drawing: allowed and denied for enforced layers (and "limit", POST
  // /v1/limit's), allowed and shadow_denied for shadow layers, once a layer has decided.
  function seriesOf(stats) {
    const shadow = new Set(stats.config.layers.filter((l) => l.mode === 'shadow').map((l) => l.name));
    const keys = [];
    for (const d of stats.decisions) {
      const outcomes = shadow.has(d.layer) ? ['allowed', 'shadow_denied'] : ['allowed', 'denied'];
      for (const outcome of outcomes) keys.push(d.layer + '|' + outcome);
    }
    return keys;
  }

  function rebuild(keys) {
    seriesKeys = keys;
    columns.length = 1;
    for (let i = 0; i < keys.length; ++i) columns.push(columns[0].map(() => null));
    const colors = { allowed: '#1b7f3b', denied: '#b3261e', shadow_denied: '#ff7f0e' };
    const dashes = [[], [6, 3], [2, 3], [8, 3, 2, 3]];
    const layers = [...new Set(keys.map((k) => k.split('|')[0]))];
    const time = { label: 'time', value: (u, t) => (t == null ? '--' : spillwayAxes.clock(t)) };
    const series = [time].concat(keys.map((k) => {
      const [layer, outcome] = k.split('|');
      return { label: layer + ' ' + outcome, stroke: colors[outcome], width: 1.5,
               dash: dashes[layers.indexOf(layer) % dashes.length] };
    }));
    const target = document.querySelector('div.chart[data-chart="decisions"]');
    if (plot) plot.destroy();
    // Ticks at round times (uPlot's time steps), at least 70 px apart: room for "14:03:20".
    const xAxis = { label: 'local time', space: 70,
                    values: (u, ticks) => ticks.map((t) => spillwayAxes.clock(t)) };
    plot = new uPlot({ width: Math.min(1060, document.body.clientWidth - 8), height: 300,
                       scales: { x: { time: true, range: xRange } }, series: series,
                       axes: [xAxis, { label: 'decisions / s', size: spillwayAxes.labelWidth }] },
                     columns, target);
    window.spillwayDashboard.chart = plot;
  }

  // Adds the sample at `t` (s since the epoch). A wall clock set back starts the chart afresh
  // (uPlot needs ascending x); samples that have left the window go, all but the newest of them
  // (the line still reaches the window's left edge).
  function append(t, values) {
    const x = columns[0];
    if (x.length > 0 && t <= x[x.length - 1]) for (const c of columns) c.length = 0;
    x.push(t);
    values.forEach((v, i) => columns[i + 1].push(v));
    while (x.length > 1 && x[1] <= t - windowSeconds) for (const c of columns) c.shift();
  }

  function count(stats, key) {
    const [layer, outcome] = key.split('|');
    const d = stats.decisions.find((x) => x.layer === layer);
    return d ? d[outcome] : 0;
  }

  function show(stats) {
    text('total-decisions', number(stats.total_decisions));
    text('denied-decisions', number(stats.denied_decisions));
    const b = stats.backend;
    const status = document.getElementById('backend-status');
    status.textContent = b.up ? 'up' : 'down';
    status.className = 'value ' + (b.up ? 'up' : 'down');
    text('backend-kind', 'backend: ' + b.kind + ' (' + b.status + ')');
    text('latency', b.latency_ms.p50 + ' / ' + b.latency_ms.p99);
    text('backend-errors', number(b.errors));
    text('config-version', 'v' + stats.config.version);
    text('config-loaded', 'config loaded ' + stats.config.loaded_at);
    text('keys-note', stats.top_denied_masked
      ? 'Key values are masked (server.dashboard_keys: masked). Counts are a bounded top-k: exact ' +
        'to within the over-count shown.'
      : 'Counts are a bounded top-k: exact to within the over-count shown.');
    const body = document.querySelector('#top-denied tbody');
    body.replaceChildren(...stats.top_denied.map((k) => {
      const row = document.createElement('tr');
      for (const value of [k.key, k.layer, k.plan || '', number(k.count - k.error), number(k.error)]) {
        const cell = document.createElement('td');
        cell.textContent = value;
        row.appendChild(cell);
      }
      return row;
    }));

    if (previous && stats.uptime_s > previous.uptime_s) {
      const seconds = stats.uptime_s - previous.uptime_s;
      text('decision-rate', number(Math.round((stats.total_decisions - previous.total_decisions) / seconds)));
      const keys = seriesOf(stats);
      if (keys.join() !== seriesKeys.join() || !plot) rebuild(keys);
      append(stats.now_unix_ms / 1000, seriesKeys.map((key) =>
        Math.max(0, (count(stats, key) - count(previous, key)) / seconds)));
      plot.setData(columns);
    } else if (!plot) {
      rebuild(seriesOf(stats));
    }
    previous = stats;
  }

  async function poll() {
    try {
      const response = await fetch('/v1/stats', { cache: 'no-store' });
      if (response.ok) show(await response.json());
    } catch (e) {
      document.getElementById('backend-status').textContent = 'no answer';
    }
    setTimeout(poll, 1000);
  }
  poll();
})();
