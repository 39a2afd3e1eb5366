// What the uPlot charts of spillway's pages (the simulate report and the dashboard) share about
// their axes, as window.spillwayAxes:
//   - labelWidth: a y axis' `size` that fits its widest tick label, so that long labels
//     ("250,000") stay clear of the axis title (uPlot's default is a fixed 50 px);
//   - clock: a time as HH:MM:SS in the browser's local time.
// Sizes are CSS pixels; times are seconds since the Unix epoch.
window.spillwayAxes = (function () {
  'use strict';
  const SMALLEST = 50;  // uPlot's own default size
  const CLEARANCE = 4;  // between the widest label and the axis title

  // The width of `text` in `font` (a canvas font, in canvas pixels) on the chart's canvas.
  function measured(u, font, text) {
    u.ctx.save();
    u.ctx.font = font;
    const width = u.ctx.measureText(text).width;
    u.ctx.restore();
    return width;
  }

  // uPlot's axis `size`: the tick, the gap, the widest label and a clearance. Once uPlot has
  // sized its axes twice it gets the last size back, which ends its sizing loop.
  function labelWidth(u, values, axisIndex, cycle) {
    const axis = u.axes[axisIndex];
    if (cycle > 1) return axis._size;
    const font = axis.font[0];
    let widest = 0;
    for (const value of values || []) {
      if (value != null) widest = Math.max(widest, measured(u, font, String(value)) / uPlot.pxRatio);
    }
    const tick = axis.ticks.show ? axis.ticks.size : 0;
    return Math.max(SMALLEST, Math.ceil(tick + axis.gap + widest + CLEARANCE));
  }

  const twoDigits = (n) => String(n).padStart(2, '0');

  // "14:03:20" for 14:03:20 local time.
  function clock(unixSeconds) {
    const t = new Date(unixSeconds * 1000);
    return twoDigits(t.getHours()) + ':' + twoDigits(t.getMinutes()) + ':' + twoDigits(t.getSeconds());
  }

  return { labelWidth: labelWidth, clock: clock };
})();
