// The live dashboard of `spillway serve` (GET /dashboard): polls GET /v1/stats (docs/SPEC.md §5)
// once a second, turns the counters into per-second rates, and draws them with uPlot. Keeps the
// last 300 samples (5 minutes). Makes no request other than /v1/stats on its own server.
(function () {
  'use strict';
  const keep = 300;
  const text = (id, value) => { document.getElementById(id).textContent = value; };
  const number = (n) => Number(n).toLocaleString('en-US');
  let previous = null;   // the last stats object, for rates
  let plot = null;       // the uPlot chart, rebuilt when the set of series changes
  let seriesKeys = [];   // "layer|outcome" of each series after x
  const columns = [[]];  // x (seconds since the page opened), then one array per series

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
    const series = [{ label: 's' }].concat(keys.map((k) => {
      const [layer, outcome] = k.split('|');
      return { label: layer + ' ' + outcome, stroke: colors[outcome], width: 1.5,
               dash: dashes[layers.indexOf(layer) % dashes.length] };
    }));
    const target = document.querySelector('div.chart[data-chart="decisions"]');
    if (plot) plot.destroy();
    plot = new uPlot({ width: Math.min(1060, document.body.clientWidth - 8), height: 300,
                       scales: { x: { time: false } }, series: series,
                       axes: [{ label: 'seconds' }, { label: 'decisions / s' }] },
                     columns, target);
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

    const now = stats.uptime_s;
    if (previous && now > previous.uptime_s) {
      const seconds = now - previous.uptime_s;
      text('decision-rate', number(Math.round((stats.total_decisions - previous.total_decisions) / seconds)));
      const keys = seriesOf(stats);
      if (keys.join() !== seriesKeys.join() || !plot) rebuild(keys);
      columns[0].push(now);
      seriesKeys.forEach((key, i) => {
        columns[i + 1].push(Math.max(0, (count(stats, key) - count(previous, key)) / seconds));
      });
      if (columns[0].length > keep) for (const c of columns) c.shift();
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
