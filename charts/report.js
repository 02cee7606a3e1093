/* membench report: the helpers chart options refer to, and the loader.
   Options are JSON; a string "__f__name__f__" in one stands for MB.fn.name
   (go-echarts writes JavaScript functions that way). */
var MB = (function () {
  "use strict";
  var units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  function bytes(v) {
    if (v === null || v === undefined || isNaN(v)) { return "–"; }
    var n = Math.abs(v), i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    var s = i === 0 ? n.toFixed(0) : n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2);
    return (v < 0 ? "-" : "") + s + " " + units[i];
  }
  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" }[c];
    });
  }
  function dot(color) {
    return "<span style=\"display:inline-block;margin-right:5px;width:9px;height:9px;border-radius:5px;background:" + esc(color) + "\"></span>";
  }
  function yOf(p) { return Array.isArray(p.value) ? p.value[1] : p.value; }
  function barTip(params, format) {
    if (!params.length) { return ""; }
    var out = [esc(params[0].axisValueLabel)];
    params.forEach(function (p) {
      var v = yOf(p);
      if (v === null || v === undefined) { return; }
      var d = p.data;
      if (d && typeof d === "object" && !Array.isArray(d) && d.failed) {
        out.push(dot(p.color) + esc(p.seriesName) + ": <b style=\"color:#c23531\">✕ " + esc(d.failed) + "</b>");
        return;
      }
      out.push(dot(p.color) + esc(p.seriesName) + ": " + format(v));
    });
    return out.join("<br>");
  }

  var fn = {
    bytes: bytes,
    pct: function (v) { return v === null || v === undefined ? "–" : Number(v).toFixed(1) + "%"; },
    // Axis numbers (seconds, events) without float noise.
    axisNum: function (v) { return String(Number(Number(v).toPrecision(6))); },
    // Axis tooltip of a timeline: bytes per series; an OOM point tells
    // the request that failed.
    // On a log axis values under its floor were drawn on it (this is the
    // chart's option: see revive).
    timelineTip: function (params) {
      if (!params.length) { return ""; }
      var y = this && this.yAxis && this.yAxis[0], floor = y && y.type === "log" ? y.min : null;
      function b(v) { return floor !== null && v <= floor ? "under " + bytes(floor) : bytes(v); }
      var x = params[0].axisValue;
      var out = [esc(this && this.xAxis && this.xAxis[0].name === "event" ? "event " + x : x + " s")];
      params.forEach(function (p) {
        var v = p.value, line = dot(p.color) + esc(p.seriesName) + ": ";
        if (p.seriesType === "scatter") {
          line += "request of " + bytes(v[2]) + " failed with " + b(v[1]) + " reserved";
        } else {
          line += b(v[1]);
        }
        out.push(line);
      });
      return out.join("<br>");
    },
    // Axis tooltip of the bar charts: bytes per strategy and the floor;
    // a run that did not fit says so instead of a figure.
    peaksTip: function (params) {
      return barTip(params, bytes);
    },
    // The same for the percentage charts.
    pctTip: function (params) {
      return barTip(params, function (v) { return Number(v).toFixed(1) + "%"; });
    },
    // The peak-live floor: a line across the whole category band.
    floorRender: function (params, api) {
      var c = api.coord([api.value(0), api.value(1)]);
      var w = api.size([1, 0])[0] * 0.86;
      return {
        type: "line",
        shape: { x1: c[0] - w / 2, y1: c[1], x2: c[0] + w / 2, y2: c[1] },
        style: { stroke: api.visual("color"), lineWidth: 2.5, lineDash: [6, 3] }
      };
    },
    // A block of the allocator state map: x0 %, x1 %, row, bytes,
    // requested, blocks, allocated bytes, offset. Allocated blocks are
    // lighter over the bytes the allocator's rounding added.
    blockRender: function (params, api) {
      var row = api.value(2);
      var a = api.coord([api.value(0), row]), b = api.coord([api.value(1), row]);
      var h = api.size([0, 1])[1] * 0.62;
      var cs = params.coordSys;
      var shape = echarts.graphic.clipRectByRect(
        { x: a[0], y: a[1] - h / 2, width: Math.max(b[0] - a[0], 1), height: h },
        { x: cs.x, y: cs.y, width: cs.width, height: cs.height });
      if (!shape) { return null; }
      var color = api.visual("color");
      var children = [{ type: "rect", shape: shape, style: { fill: color } }];
      var alloc = api.value(6), req = api.value(4);
      if (alloc > 0 && req < alloc) {
        var sx = a[0] + (b[0] - a[0]) * (1 - (alloc - req) / api.value(3));
        var slack = echarts.graphic.clipRectByRect(
          { x: sx, y: a[1] - h / 2, width: Math.max(b[0] - sx, 0), height: h },
          { x: cs.x, y: cs.y, width: cs.width, height: cs.height });
        if (slack && slack.width >= 1) {
          children.push({ type: "rect", shape: slack, style: { fill: "rgba(255,255,255,0.45)" } });
        }
      }
      return { type: "group", children: children };
    },
    // A segment's outline on top of its blocks.
    segmentRender: function (params, api) {
      var row = api.value(2);
      var a = api.coord([api.value(0), row]), b = api.coord([api.value(1), row]);
      var h = api.size([0, 1])[1] * 0.78;
      var cs = params.coordSys;
      var shape = echarts.graphic.clipRectByRect(
        { x: a[0], y: a[1] - h / 2, width: Math.max(b[0] - a[0], 1), height: h },
        { x: cs.x, y: cs.y, width: cs.width, height: cs.height });
      if (!shape) { return null; }
      if (shape.width < 5) {
        // A narrow segment: a faint edge, not an outline that would
        // paint a run of small segments black.
        return { type: "line", shape: { x1: shape.x, y1: shape.y, x2: shape.x, y2: shape.y + shape.height }, style: { stroke: "rgba(0,0,0,0.35)", lineWidth: 1 } };
      }
      return { type: "rect", shape: shape, style: { fill: "none", stroke: api.visual("color"), lineWidth: 1 } };
    },
    // The part of a preallocated region no allocation ever reached: a
    // thin white item with a dashed frame, hatched.
    unusedRender: function (params, api) {
      var row = api.value(2);
      var a = api.coord([api.value(0), row]), b = api.coord([api.value(1), row]);
      var h = api.size([0, 1])[1] * 0.62;
      var cs = params.coordSys;
      var shape = echarts.graphic.clipRectByRect(
        { x: a[0], y: a[1] - h / 2, width: Math.max(b[0] - a[0], 2), height: h },
        { x: cs.x, y: cs.y, width: cs.width, height: cs.height });
      if (!shape) { return null; }
      var children = [{ type: "rect", shape: shape, style: { fill: "#ffffff", stroke: "#888888", lineWidth: 1, lineDash: [3, 2] } }];
      // Hatching: lines of slope -1, x + y = k, clipped to the item.
      var L = shape.x, R = shape.x + shape.width, T = shape.y, H = shape.height;
      for (var k = L + 4; k < R + H; k += 5) {
        var xa = Math.min(k, R), xb = Math.max(k - H, L);
        children.push({ type: "line", shape: { x1: xa, y1: T + (k - xa), x2: xb, y2: T + (k - xb) }, style: { stroke: "#cccccc", lineWidth: 1 } });
      }
      return { type: "group", children: children };
    },
    stateTip: function (p) {
      var v = p.value;
      if (p.seriesName === "segment") { return esc(p.name); }
      if (p.seriesName === "preallocated, never used") {
        return dot("#999") + "preallocated, never used: " + bytes(v[3]) +
          "<br>the region above its peak footprint (offset 0x" + Number(v[7]).toString(16) + " up), which no allocation ever reached" +
          "<br>drawn shortened to a thin item";
      }
      var s = dot(p.color) + esc(p.seriesName) + ": " + bytes(v[3]);
      if (v[5] > 1) {
        s += "<br>" + v[5] + " small blocks drawn as one (" + bytes(v[6]) + " of them allocated)";
      }
      if (v[6] > 0) {
        s += "<br>requested " + bytes(v[4]) + ", rounding " + bytes(v[6] - v[4]);
      }
      s += "<br>offset 0x" + Number(v[7]).toString(16) + " in its segment";
      return s;
    }
  };

  // revive replaces helper names in an option with the helpers, each
  // called with the option as this.
  function revive(x, root) {
    if (typeof x === "string") {
      var m = /^__f__(\w+)__f__$/.exec(x);
      if (m) {
        var f = fn[m[1]];
        if (!f) { throw new Error("membench report: unknown helper " + m[1]); }
        return function () { return f.apply(root, arguments); };
      }
      return x;
    }
    if (Array.isArray(x)) {
      for (var i = 0; i < x.length; i++) { x[i] = revive(x[i], root); }
      return x;
    }
    if (x && typeof x === "object") {
      Object.keys(x).forEach(function (k) { x[k] = revive(x[k], root); });
    }
    return x;
  }

  // drawn[id] is set once a chart has finished drawing (the browser test
  // waits for every chart).
  var drawn = {}, charts = [];
  // legend wires a chart's HTML legend (the page's, above the chart): a
  // click shows or hides the series of that name, through ECharts' own
  // (hidden) legend.
  function legend(id, chart) {
    var box = document.getElementById(id + "-legend");
    if (!box) { return; }
    Array.prototype.forEach.call(box.querySelectorAll(".li"), function (item) {
      if (item.classList.contains("static")) { return; }
      item.addEventListener("click", function () {
        chart.dispatchAction({ type: "legendToggleSelect", name: item.getAttribute("data-name") });
        item.classList.toggle("off");
      });
    });
  }
  function load() {
    var els = document.querySelectorAll("script.chart-option");
    Array.prototype.forEach.call(els, function (el) {
      var id = el.getAttribute("data-chart");
      var div = document.getElementById(id);
      var chart = echarts.init(div, null, { renderer: "canvas" });
      chart.on("finished", function () { drawn[id] = true; });
      var option = JSON.parse(el.textContent);
      chart.setOption(revive(option, option));
      legend(id, chart);
      charts.push(chart);
    });
    var t = null;
    window.addEventListener("resize", function () {
      clearTimeout(t);
      t = setTimeout(function () { charts.forEach(function (c) { c.resize(); }); }, 100);
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", load);
  } else {
    load();
  }
  return { fn: fn, drawn: drawn, bytes: bytes };
})();
