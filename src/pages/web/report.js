// Draws the charts of a `spillway simulate` report with uPlot. The numbers come from the JSON in
// <script id="report-data"> (written by src/cli/simulate_report.cc); each chart goes into the
// div.chart whose data-chart attribute names it. Times are seconds from the trace's start; rates
// are requests per second over one bucket of `bucket_s` seconds.
//
// The look comes with the data (src/pages/series_style.h): each algorithm's `style` gives its
// admitted colour (cool), its denied colour (warm), its dash and width; the offered traffic is a
// wide pale band drawn first. Every series' legend label says whether it is admitted, denied or
// offered. Each uPlot made here is kept in window.spillwayReport.charts under its chart's name
// (the browser test reads their series from there).
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('report-data').textContent);
  const charts = {};
  window.spillwayReport = { charts: charts };
  const width = (wide) => Math.min(wide ? 1060 : 520, document.body.clientWidth - 8);
  const place = (name) => document.querySelector('div.chart[data-chart="' + name + '"]');
  const xAxis = { label: 'seconds' };
  // A y axis as wide as its widest tick label (src/pages/web/axes.js), so that labels like
  // "250,000" stay clear of the axis title.
  const yAxis = (label) => ({ label: label, size: spillwayAxes.labelWidth });
  const offered = () => ({ label: 'offered', stroke: data.offered_style.color,
                           width: data.offered_style.width, points: { show: false } });
  const draw = (name, options, columns, target) => {
    charts[name] = new uPlot(options, columns, target);
  };

  // All algorithms' admitted rates over the offered rate, each in its own colour, dash and
  // width: the later an algorithm is drawn the thinner and more broken its line, so one that
  // equals an earlier one leaves that one showing. The y axis is scaled to what was admitted:
  // where the offered traffic is far above it (more than twice), the band runs off the top (its
  // label says so; each algorithm's own chart below shows all of it).
  const overview = place('overview');
  if (overview) {
    const top = (values) => values.reduce((m, v) => Math.max(m, v ?? 0), 0);
    const admittedTop = Math.max(...data.algorithms.map((a) => top(a.admitted_rate)), 1);
    const cut = top(data.offered) > 2 * admittedTop;
    const band = offered();
    if (cut) band.label = 'offered (cut off at the top)';
    const series = [{ label: 't (s)' }, band];
    const columns = [data.t, data.offered];
    data.algorithms.forEach((a) => {
      series.push({ label: a.name + ' admitted', stroke: a.style.admitted, dash: a.style.dash,
                    width: a.style.width, points: { show: false } });
      columns.push(a.admitted_rate);
    });
    // The top: 1.2 × the most admitted, rounded up to a multiple of half its power of ten.
    const step = Math.pow(10, Math.floor(Math.log10(admittedTop * 1.2))) / 2;
    const y = cut ? { range: () => [0, Math.ceil((admittedTop * 1.2) / step) * step] } : {};
    draw('overview', { title: 'Admitted per second, every algorithm', width: width(true),
                       height: 300, scales: { x: { time: false }, y: y }, series: series,
                       axes: [xAxis, yAxis('requests / s')] }, columns, overview);
  }

  // Per algorithm: offered, admitted and denied rates. Admitted is the wider line; denied, drawn
  // over it, the thinner one, so where they are equal both still show.
  data.algorithms.forEach((a) => {
    const name = 'algorithm-' + a.name;
    const target = place(name);
    if (!target) return;
    const series = [{ label: 't (s)' }, offered(),
                    { label: 'admitted', stroke: a.style.admitted, width: 3,
                      points: { show: false } },
                    { label: 'denied', stroke: a.style.denied, width: 1.5,
                      points: { show: false } }];
    const columns = [data.t, data.offered, a.admitted_rate, a.denied_rate];
    // With a max_delay: the admitted requests that waited their turn, dotted in the admitted
    // colour (part of admitted, drawn below it).
    if (a.delayed_rate) {
      series.push({ label: 'delayed', stroke: a.style.admitted, width: 1.5, dash: [2, 4],
                    points: { show: false } });
      columns.push(a.delayed_rate);
    }
    draw(name, { title: a.name + ': offered, admitted, denied' + (a.delayed_rate ? ', delayed' : '') +
                   ' per second', width: width(false),
                 height: 220, scales: { x: { time: false } }, series: series,
                 axes: [xAxis, yAxis('requests / s')] }, columns, target);
  });

  // How long denied requests are told to wait: a histogram, one group of bars per retry_after
  // bucket and one bar per algorithm, in the algorithm's denied colour. uPlot draws bars of one x
  // each, so bucket b of algorithm a sits at x = b * (n + 1) + a, with a gap of one slot between
  // groups.
  const retry = place('retry-after');
  if (retry) {
    const n = data.algorithms.length;
    const slots = data.retry_buckets.length * (n + 1);
    const x = Array.from({ length: slots }, (_, i) => i);
    const bars = uPlot.paths.bars({ size: [0.9, 60] });
    const series = [{ label: 'slot' }];
    const columns = [x];
    data.algorithms.forEach((a, i) => {
      series.push({ label: a.name + ' denied', stroke: a.style.denied,
                    fill: a.style.denied + 'cc', paths: bars, points: { show: false } });
      columns.push(x.map((slot) => slot % (n + 1) === i
        ? a.retry_histogram[Math.floor(slot / (n + 1))] : null));
    });
    const centres = data.retry_buckets.map((_, b) => b * (n + 1) + (n - 1) / 2);
    draw('retry-after', {
      title: 'retry_after of denied requests', width: width(true), height: 260,
      scales: { x: { time: false, range: [-1, slots - 1] } }, series: series,
      axes: [{ label: 'retry_after', splits: () => centres,
               values: (u, ticks) => ticks.map((t) =>
                 data.retry_buckets[Math.round((t - (n - 1) / 2) / (n + 1))] ?? '') },
             yAxis('denied requests')] }, columns, retry);
  }
})();
