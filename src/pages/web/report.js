// Draws the charts of a `spillway simulate` report with uPlot. The numbers come from the JSON in
// <script id="report-data"> (written by src/cli/simulate_report.cc); each chart goes into the
// div.chart whose data-chart attribute names it. Times are seconds from the trace's start; rates
// are requests per second over one bucket of `bucket_s` seconds.
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('report-data').textContent);
  const colors = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b'];
  const width = (wide) => Math.min(wide ? 1060 : 520, document.body.clientWidth - 8);
  const place = (name) => document.querySelector('div.chart[data-chart="' + name + '"]');
  const xAxis = { label: 'seconds' };

  // All algorithms' admitted rates over the offered rate.
  const overview = place('overview');
  if (overview) {
    const series = [{ label: 't (s)' }, { label: 'offered', stroke: '#888', dash: [4, 4], width: 1 }];
    const columns = [data.t, data.offered];
    data.algorithms.forEach((a, i) => {
      series.push({ label: a.name, stroke: colors[i % colors.length], width: 1.5 });
      columns.push(a.admitted_rate);
    });
    new uPlot({ title: 'Admitted per second, every algorithm', width: width(true), height: 300,
                scales: { x: { time: false } }, series: series,
                axes: [xAxis, { label: 'requests / s' }] }, columns, overview);
  }

  // Per algorithm: offered, admitted and denied rates.
  data.algorithms.forEach((a, i) => {
    const target = place('algorithm-' + a.name);
    if (!target) return;
    new uPlot({ title: a.name + ': offered, admitted, denied per second', width: width(false),
                height: 220, scales: { x: { time: false } },
                series: [{ label: 't (s)' },
                         { label: 'offered', stroke: '#888', dash: [4, 4], width: 1 },
                         { label: 'admitted', stroke: colors[i % colors.length], width: 1.5 },
                         { label: 'denied', stroke: '#b3261e', width: 1 }],
                axes: [xAxis, { label: 'requests / s' }] },
              [data.t, data.offered, a.admitted_rate, a.denied_rate], target);
  });

  // How long denied requests are told to wait: a histogram, one group of bars per retry_after
  // bucket and one bar per algorithm. uPlot draws bars of one x each, so bucket b of algorithm a
  // sits at x = b * (n + 1) + a, with a gap of one slot between groups.
  const retry = place('retry-after');
  if (retry) {
    const n = data.algorithms.length;
    const slots = data.retry_buckets.length * (n + 1);
    const x = Array.from({ length: slots }, (_, i) => i);
    const bars = uPlot.paths.bars({ size: [0.9, 60] });
    const series = [{ label: 'slot' }];
    const columns = [x];
    data.algorithms.forEach((a, i) => {
      series.push({ label: a.name, stroke: colors[i % colors.length],
                    fill: colors[i % colors.length] + 'aa', paths: bars, points: { show: false } });
      columns.push(x.map((slot) => slot % (n + 1) === i
        ? a.retry_histogram[Math.floor(slot / (n + 1))] : null));
    });
    const centres = data.retry_buckets.map((_, b) => b * (n + 1) + (n - 1) / 2);
    new uPlot({ title: 'retry_after of denied requests', width: width(true), height: 260,
                scales: { x: { time: false, range: [-1, slots - 1] } }, series: series,
                axes: [{ label: 'retry_after', splits: () => centres,
                         values: (u, ticks) => ticks.map((t) =>
                           data.retry_buckets[Math.round((t - (n - 1) / 2) / (n + 1))] ?? '') },
                       { label: 'denied requests' }] }, columns, retry);
  }
})();
