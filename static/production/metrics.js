// The production page's charts: one uPlot chart per metric, one line per version, from the
// JSON the page embeds (`production_metrics`, the same as GET .../production/metrics/).
(function () {
  "use strict";
  var COLOURS = ["#175cd3", "#d92d20", "#079455", "#dc6803", "#6938ef", "#475467"];
  var CHARTS = [
    { id: "chart-volume", title: "traces", key: "volume", unit: "" },
    { id: "chart-errors", title: "error rate", key: "error_rate", unit: "%", scale: 100 },
    { id: "chart-latency", title: "latency p50 / p95", keys: ["latency_p50_ms", "latency_p95_ms"], unit: " ms" },
    { id: "chart-tokens", title: "tokens", key: "tokens", unit: "" },
    { id: "chart-cost", title: "cost", key: "cost_usd", unit: " $" },
  ];

  function tick(v) {
    if (v === null || v === undefined) { return ""; }
    var size = Math.abs(v);
    if (size === 0) { return "0"; }
    if (size < 0.01) { return v.toPrecision(2); }
    return Math.round(v * 100) / 100 + "";
  }

  function column(values, scale) {
    return values.map(function (v) { return v === null || v === undefined ? null : v * (scale || 1); });
  }

  function draw(holder, title, times, lines, unit) {
    holder.innerHTML = "";
    if (!lines.length) {
      holder.textContent = title + ": nothing measured in this period.";
      holder.className += " empty";
      return;
    }
    var width = Math.max(280, holder.clientWidth || 420);
    var series = [{}].concat(lines.map(function (line, i) {
      return {
        label: line.label,
        stroke: COLOURS[i % COLOURS.length],
        width: 2,
        dash: line.dash,
        points: { show: true, size: 4 },
        value: function (u, v) { return v === null ? "–" : (Math.round(v * 100) / 100) + unit; },
      };
    }));
    new uPlot({
      title: title,
      width: width,
      height: 200,
      series: series,
      axes: [{}, { size: 60, values: function (u, splits) { return splits.map(tick); } }],
      scales: { x: { time: true } },
    }, [times].concat(lines.map(function (line) { return line.values; })), holder);
  }

  function render() {
    var source = document.getElementById("metrics-data");
    if (!source || typeof uPlot === "undefined") { return; }
    var data = JSON.parse(source.textContent);
    var times = data.buckets.map(function (iso) { return Date.parse(iso) / 1000; });
    var versions = Object.keys(data.versions);
    CHARTS.forEach(function (chart) {
      var holder = document.getElementById(chart.id);
      if (!holder) { return; }
      var lines = [];
      versions.forEach(function (name) {
        var keys = chart.keys || [chart.key];
        keys.forEach(function (key, k) {
          var values = column(data.versions[name][key], chart.scale);
          if (values.some(function (v) { return v !== null && v !== 0; }) || key === "volume") {
            lines.push({ label: name + (keys.length > 1 ? " " + key.split("_")[1] : ""), values: values, dash: k ? [6, 4] : undefined });
          }
        });
      });
      draw(holder, chart.title, times, lines, chart.unit);
    });
    var checks = document.getElementById("chart-checks");
    if (checks) {
      var lines = [];
      versions.forEach(function (name) {
        Object.keys(data.versions[name].checks).forEach(function (label) {
          lines.push({ label: name + " " + label, values: data.versions[name].checks[label] });
        });
      });
      draw(checks, "online check scores (mean)", times, lines, "");
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", render);
  } else {
    render();
  }
})();
