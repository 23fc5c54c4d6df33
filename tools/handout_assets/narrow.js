/* Reflows a handout figure for a narrow page: a phone (390 px) or a tablet (768 px).

   The figure builders (mha_core.figures) lay a figure out for a laptop's 820 px: margins,
   side-by-side panels, tick labels and a number in every heatmap cell. On a narrower page
   plotly's responsive mode only squeezes that design, and its text piles up. This script
   changes the layout instead of the text size: panels side by side are stacked in one
   column (the figure grows taller), a grid of heads drawn as one heatmap is re-cut into one
   column of heads, cell numbers that no longer fit their cells are left to the hover and the
   figure's "In words" text, crowded tick labels turn upright or thin out, margins shrink to
   what the labels need, a wide table is split into parts, a legend that runs into anything moves
   below the plot, long axis titles and sentence tick labels wrap.

   window.mhaFitNarrow(plot): plot is a drawn plotly div; returns a Promise. figures.js calls it
   after each draw and each resize. The first call keeps a copy of the figure as designed
   (plot._mhaOriginal); every call starts again from that copy, so it can be called at any
   width, any number of times. At 820 px and wider the figure is drawn exactly as designed.
   The title and the top margin belong to figures.js (it re-wraps long titles): they are
   taken from the figure as it is drawn now. A figure redrawn from another spec (states.js)
   becomes the new design.

   Whole parts (panels side by side, a grid of heads in one heatmap, a wide table) are laid out
   again by narrow_layout.js, which the page loads before this file; the rest is here.

   Each step is measured, not guessed: the script draws, reads every text box of the figure,
   and changes only what overlaps or runs past the figure's edge (the same rule as the
   browser test, tests/browser/page_text.py), for a few rounds.
*/
(function () {
  "use strict";

  var WIDE = 820;      // the width the builders design for: at or above it nothing changes
  var PHONE = 600;     // below it, panels side by side are always stacked in one column
  var OVERLAP = 2;     // px both ways, as the browser test counts an overlap
  var ROUNDS = 6;      // measure-and-fix rounds per call

  // Helpers and the re-layouts of whole parts (panels, head grids, tables): narrow_layout.js, loaded first.
  var L = window.mhaNarrowLayout || null;
  function clone(x) { return L.clone(x); }
  function num(x, d) { return L.num(x, d); }
  function axisKey(id) { return L.axisKey(id); }
  function plain(text) { return L.plain(text); }
  function wrapWords(text, chars) { return L.wrapWords(text, chars); }
  var panels = L && L.panels, sideBySide = L && L.sideBySide, paperXY = L && L.paperXY, nearest = L && L.nearest;
  var stack = L && L.stack, recutGrid = L && L.recutGrid, splitTable = L && L.splitTable;

  // --------------------------------------------------------------- measuring what the page shows

  function shown(el, stop) {
    for (var e = el; e && e !== stop && e.nodeType === 1; e = e.parentNode) {
      var s = window.getComputedStyle(e);
      if (s.display === "none" || s.visibility === "hidden" || parseFloat(s.opacity) === 0) return false;
      var c = e.getAttribute("class") || "";
      if (/(^|\s)(hoverlayer|modebar-container)(\s|$)/.test(c)) return false;
    }
    return true;
  }

  // What a text belongs to: a trace's numbers, an axis's ticks or title, an annotation, the legend...
  function owner(t, plot) {
    var trace = null, kind = "other", axis = null, index = null;
    for (var e = t.parentNode; e && e !== plot; e = e.parentNode) {
      var c = (e.getAttribute && e.getAttribute("class")) || "";
      var m = /(^|\s)([xy]\d*)tick(\s|$)/.exec(c);
      if (m && kind === "other") { kind = "tick"; axis = m[2]; }
      m = /(^|\s)g-([xy]\d*)title(\s|$)/.exec(c);
      if (m && kind === "other") { kind = "axistitle"; axis = m[2]; }
      if (/(^|\s)g-gtitle(\s|$)/.test(c)) kind = "title";
      if (/(^|\s)annotation(\s|$)/.test(c) && e.getAttribute("data-index") !== null) { kind = "annotation"; index = Number(e.getAttribute("data-index")); }
      if (/(^|\s)legend(\s|$)/.test(c)) kind = "legend";
      if (/(^|\s)colorbar(\s|$)/.test(c)) kind = "colorbar";
      if (/(^|\s)table(\s|$)/.test(c) && kind === "other") kind = "table";
      var d = e.__data__;
      if (trace === null && d) {
        var cd = Array.isArray(d) ? d[0] : d;
        if (cd && cd.trace && typeof cd.trace.index === "number") trace = cd.trace.index;
        else if (Array.isArray(cd) && cd[0] && cd[0].trace) trace = cd[0].trace.index;
      }
    }
    if (kind === "other" && trace !== null) kind = "points";  // numbers drawn on a trace: cells, bars, points
    return {kind: kind, axis: axis, index: index, trace: trace};
  }

  function texts(plot) {
    var svg = plot.querySelector(".main-svg");
    if (!svg) return [];
    var edge = svg.getBoundingClientRect(), out = [];
    plot.querySelectorAll("svg text").forEach(function (t) {
      if (!(t.textContent || "").trim() || !shown(t, plot)) return;
      var r = t.getBoundingClientRect();
      if (!r.width || !r.height) return;
      // An <svg> hides what runs past it: only the visible part counts, as in the test.
      var box = {left: Math.max(r.left, edge.left), top: Math.max(r.top, edge.top),
                 right: Math.min(r.right, edge.right), bottom: Math.min(r.bottom, edge.bottom)};
      if (box.right <= box.left || box.bottom <= box.top) return;
      var who = owner(t, plot);
      who.el = t; who.box = box; who.raw = r;
      who.cut = r.left < edge.left - 2 || r.right > edge.right + 2 || r.top < edge.top - 2 || r.bottom > edge.bottom + 2;
      out.push(who);
    });
    return out;
  }

  function overlapping(a, b) {
    var dx = Math.min(a.box.right, b.box.right) - Math.max(a.box.left, b.box.left);
    var dy = Math.min(a.box.bottom, b.box.bottom) - Math.max(a.box.top, b.box.top);
    return dx > OVERLAP && dy > OVERLAP;
  }

  function problems(plot) {
    var all = texts(plot), pairs = [];
    all.sort(function (a, b) { return a.box.top - b.box.top; });
    for (var i = 0; i < all.length; i++) {
      for (var j = i + 1; j < all.length; j++) {
        if (all[j].box.top >= all[i].box.bottom - OVERLAP) break;
        if (overlapping(all[i], all[j])) pairs.push([all[i], all[j]]);
      }
    }
    return {texts: all, pairs: pairs, cut: all.filter(function (t) { return t.cut; })};
  }

  // --------------------------------------------------------------- smaller fixes, one problem at a time

  function titleText(obj) {
    if (!obj) return "";
    return typeof obj.title === "string" ? obj.title : obj.title && obj.title.text ? obj.title.text : "";
  }

  function setTitleText(obj, text) {
    if (typeof obj.title === "string" || !obj.title) obj.title = {text: text}; else obj.title.text = text;
  }

  function fixAxisTicks(plot, spec, axis, done) {
    var key = axisKey(axis), ax = spec.layout[key] = spec.layout[key] || {}, full = plot._fullLayout[key];
    if (!full || count(done, key) > 4) return false;
    var labels = Array.isArray(ax.ticktext) || full.type === "category" || full.type === "multicategory";
    if (axis.charAt(0) === "x" && labels && ax.tickangle !== -90) { ax.tickangle = -90; return true; }
    if (axis.charAt(0) === "y" && Array.isArray(ax.ticktext) && ax.ticktext.some(function (t) { return /<br>/.test(t); })) {
      // Sentences wrapped onto lines (wrapLongTicks) are never dropped: the rows get taller.
      var fl = plot._fullLayout;
      spec.layout.height = Math.round(fl.height + 0.25 * fl._size.h);
      return true;
    }
    var vals = Array.isArray(ax.tickvals) ? ax.tickvals : null;
    if (!vals && labels && full.type === "category") {
      // Every category labelled so far: label every k-th one instead.
      var cats = (full._categories || []).slice();
      if (cats.length > 2) { vals = cats; ax.tickvals = cats.slice(); ax.ticktext = cats.map(String); }
    }
    if (vals && vals.length > 2) {
      // Every other tick (the first and the last kept): words and numbers alike, once upright is not enough.
      var keep = function (v, i) { return i % 2 === 0 || i === vals.length - 1 && vals.length % 2 === 1; };
      var text = Array.isArray(ax.ticktext) ? ax.ticktext.filter(keep) : null;
      ax.tickvals = vals.filter(keep); if (text) ax.ticktext = text;
      ax.tickmode = "array";
      return true;
    }
    if (!vals) {
      var shownTicks = (full._vals || []).length || 6;
      if (shownTicks <= 2) return false;
      ax.nticks = Math.max(2, Math.floor(shownTicks / 2));
      if (ax.dtick) delete ax.dtick;
      ax.tickmode = "auto";
      return true;
    }
    return false;
  }

  function hideNumbers(spec, index, done) {
    var tr = spec.data[index];
    if (!tr || done["t" + index]) return false;
    done["t" + index] = true;
    if (tr.type === "heatmap" || tr.type === "histogram2d") {
      if (!tr.texttemplate) return false;
      tr.texttemplate = ""; return true;
    }
    if (tr.type === "scatter" && typeof tr.mode === "string" && tr.mode.indexOf("text") >= 0) {
      tr.mode = tr.mode.replace(/\+?text/, "").replace(/^\+/, "") || "markers"; return true;
    }
    if (tr.type === "bar" && (tr.text || tr.texttemplate)) { tr.textposition = "none"; return true; }
    return false;
  }

  // The legend below everything under the plot (ticks, axis titles), in rows across the page.
  function placeLegend(plot, spec, done) {
    var lg = spec.layout.legend = spec.layout.legend || {};
    if (count(done, "legend") > 3) return false;
    var fl = plot._fullLayout, top = plot.querySelector(".main-svg").getBoundingClientRect().top;
    var plotBottom = fl._size.t + fl._size.h, lowest = plotBottom;
    problems(plot).texts.forEach(function (t) {
      if (t.kind === "legend" || t.kind === "title") return;
      if (t.raw.top - top > plotBottom - 4) lowest = Math.max(lowest, t.raw.bottom - top);
    });
    var legendBox = plot.querySelector(".legend"), legendPx = legendBox ? legendBox.getBoundingClientRect().height : 24;
    var below = lowest - plotBottom + 8;
    lg.orientation = "h"; lg.x = 0; lg.xanchor = "left"; lg.y = -below / fl._size.h; lg.yanchor = "top";
    var m = spec.layout.margin = spec.layout.margin || {};
    var want = Math.round(below + legendPx + 8);
    var grow = want - fl._size.b;
    if (grow > 0) {
      m.b = Math.round(num(m.b, fl.margin.b) + grow);
      spec.layout.height = Math.round(fl.height + grow);
      lg.y = -below / fl._size.h;  // the plot area keeps its height: the figure grows instead
    }
    return true;
  }

  function wrapCut(plot, spec, t, done) {
    var fl = plot._fullLayout, room = Math.max(10, Math.floor(fl.width / 9));
    if (t.kind === "axistitle") {
      var key = axisKey(t.axis), ax = spec.layout[key] = spec.layout[key] || {};
      if (done["w" + key]) return false;
      done["w" + key] = true;
      var full = fl[key], chars = Math.max(10, Math.floor((full ? full._length : fl._size.w) / 8.5));
      setTitleText(ax, wrapWords(titleText(ax), chars));
      return true;
    }
    if (t.kind === "annotation") {
      var ann = spec.layout.annotations[t.index];
      if (!ann || done["a" + t.index]) return false;
      done["a" + t.index] = true;
      ann.text = wrapWords(ann.text, room);
      return true;
    }
    if (t.kind === "tick") {
      var k2 = axisKey(t.axis), a2 = spec.layout[k2] = spec.layout[k2] || {};
      if (done["c" + k2] || !Array.isArray(a2.ticktext)) return false;
      done["c" + k2] = true;
      a2.ticktext = a2.ticktext.map(function (s) { return wrapWords(s, Math.max(12, Math.floor(fl.width / 20))); });
      return true;
    }
    if (t.kind === "legend") {
      if (done.legendwrap) return false;
      done.legendwrap = true;
      spec.data.forEach(function (tr) { if (tr.name) tr.name = wrapWords(tr.name, Math.max(14, Math.floor(fl.width / 11))); });
      return true;
    }
    return false;
  }

  // Margins as small as the labels allow: plotly's automargin grows them back to what the
  // ticks, axis titles and colour bars need. Kept where something placed on the paper lives there.
  function tightMargins(spec) {
    var layout = spec.layout, m = layout.margin = layout.margin || {};
    var anns = layout.annotations || [], left = false, right = false;
    anns.forEach(function (a) {
      var xy = paperXY(a);
      if (xy.x !== null && (xy.x < 0 || (xy.x === 0 && a.xanchor === "right"))) left = true;
      if (xy.x !== null && (xy.x > 1 || (xy.x === 1 && a.xanchor !== "right"))) right = true;
    });
    var changed = false;
    if (!left && num(m.l, 80) > 16) { m.l = 16; changed = true; }
    if (!right && num(m.r, 80) > 16) { m.r = 16; changed = true; }
    ["xaxis", "yaxis"].forEach(function (k) {
      Object.keys(layout).forEach(function (key) {
        if (key.indexOf(k) === 0 && layout[key] && layout[key].automargin === undefined) layout[key].automargin = true;
      });
    });
    if (layout.xaxis === undefined) layout.xaxis = {automargin: true};
    if (layout.yaxis === undefined) layout.yaxis = {automargin: true};
    return changed;
  }

  // Tick labels that are sentences (more than a third of the figure wide) wrap onto lines, and the
  // figure grows so every row keeps room for its lines.
  function wrapLongTicks(plot, spec) {
    var fl = plot._fullLayout, changed = false;
    Object.keys(spec.layout).forEach(function (key) {
      if (!/^yaxis\d*$/.test(key)) return;
      var ax = spec.layout[key], full = fl[key];
      if (!ax || !Array.isArray(ax.ticktext) || !full) return;
      var size = num(full.tickfont && full.tickfont.size, 14), room = fl.width / 3;
      var longest = Math.max.apply(null, ax.ticktext.map(function (t) { return plain(t).length; }));
      if (longest * 0.55 * size <= room) return;
      var chars = Math.max(8, Math.floor(room / (0.55 * size)));
      ax.ticktext = ax.ticktext.map(function (t) { return wrapWords(t, chars); });
      var lines = Math.max.apply(null, ax.ticktext.map(function (t) { return t.split("<br>").length; }));
      var rowPx = lines * 1.25 * size + 6, rows = ax.ticktext.length, span = full.domain[1] - full.domain[0];
      var need = rows * rowPx / span;
      if (need > fl._size.h) spec.layout.height = Math.round(fl.height + need - fl._size.h);
      changed = true;
    });
    return changed;
  }

  // --------------------------------------------------------------- putting it together

  function draw(plot, spec) {
    return window.Plotly.react(plot, spec.data, spec.layout).then(function () {
      plot._mhaFitted = {data: plot.data, layout: plot.layout};
    });
  }

  // The figure as designed, with the title and top margin figures.js has set for this width.
  function design(plot) {
    var o = plot._mhaOriginal, spec = {data: clone(o.data), layout: clone(o.layout)};
    var now = plot.layout || {};
    if (now.title !== undefined) spec.layout.title = clone(now.title);
    spec.layout.margin = spec.layout.margin || {};
    if (now.margin && now.margin.t !== undefined) spec.layout.margin.t = now.margin.t;
    return spec;
  }

  function owners(plot, spec) {
    // Which panel each text belongs to (by its axis; annotations by their axes or their place).
    var list = panels(plot, spec), byAxis = {};
    list.forEach(function (p) { byAxis[p.x] = p; byAxis[p.y] = p; });
    return {list: list, of: function (t) {
      if (t.kind === "tick" || t.kind === "axistitle") return byAxis[t.axis] || null;
      if (t.kind === "annotation") {
        var ann = (spec.layout.annotations || [])[t.index];
        if (!ann) return null;
        var xr = (ann.xref || "paper").split(" ")[0], yr = (ann.yref || "paper").split(" ")[0];
        if (byAxis[xr]) return byAxis[xr];
        if (byAxis[yr]) return byAxis[yr];
        var xy = paperXY(ann);
        return nearest(list, xy.x, xy.y);
      }
      if (t.kind === "points" && t.trace !== null) {
        var tr = spec.data[t.trace];
        return tr ? byAxis[tr.xaxis || "x"] || null : null;
      }
      return null;
    }};
  }

  function count(done, key) { done[key] = (done[key] || 0) + 1; return done[key]; }

  function growTop(plot, spec, px, done) {
    if (count(done, "top") > 3) return false;
    var fl = plot._fullLayout, m = spec.layout.margin = spec.layout.margin || {};
    m.t = Math.round(Math.max(num(m.t, 80), fl._size.t) + px + 4);
    spec.layout.height = Math.round(fl.height + (m.t - fl._size.t));
    return true;
  }

  // Labels placed side by side on data (head titles over column blocks, labels of reference lines)
  // that run into each other: the whole row of them is wrapped to the room between neighbours,
  // the same way for each, and made smaller (never below 12 px) when a word is wider than that room.
  function wrapNeighbours(plot, spec, a, found, done) {
    var anns = spec.layout.annotations || [], first = anns[a.index];
    if (!first) return false;
    var key = [first.xref, first.yref, first.y, first.yanchor].join("|");
    if (count(done, "row" + key) > 2) return false;
    var row = found.texts.filter(function (t) {
      var ann = t.kind === "annotation" && anns[t.index];
      return ann && [ann.xref, ann.yref, ann.y, ann.yanchor].join("|") === key;
    }).sort(function (p, q) { return p.raw.left - q.raw.left; });
    if (row.length < 2) return false;
    var pitch = Infinity;
    for (var i = 1; i < row.length; i++) pitch = Math.min(pitch, ((row[i].raw.left + row[i].raw.right) - (row[i - 1].raw.left + row[i - 1].raw.right)) / 2);
    var size = num(first.font && first.font.size, num(spec.layout.font && spec.layout.font.size, 14));
    var word = 1, before = 1;
    row.forEach(function (t) {
      var text = String(anns[t.index].text);
      before = Math.max(before, text.split(/<br\s*\/?>/i).length);
      plain(text).split(/\s+/).forEach(function (w) { word = Math.max(word, w.length); });
    });
    var fits = Math.floor((pitch - 6) / (0.58 * word));
    if (fits < size) size = Math.max(12, fits);
    var chars = Math.max(word, Math.floor((pitch - 6) / (0.58 * size))), after = 1;
    row.forEach(function (t) {
      var ann = anns[t.index];
      ann.text = wrapWords(ann.text, chars);
      ann.font = Object.assign({}, ann.font || {}, {size: size});
      after = Math.max(after, ann.text.split("<br>").length);
    });
    // A row of labels above the plot grows upwards: the top margin takes the lines it gained.
    var above = a.raw.top < plot.querySelector(".main-svg").getBoundingClientRect().top + plot._fullLayout._size.t;
    if (above && after > before) growTop(plot, spec, (after - before) * Math.round(1.3 * size), done);
    return true;
  }

  function round(plot, spec, done) {
    var found = problems(plot), changed = false;
    if (!found.pairs.length && !found.cut.length) return false;
    var who = owners(plot, spec), restack = false;
    found.pairs.forEach(function (pair) {
      var a = pair[0], b = pair[1];
      var kinds = [a.kind, b.kind];
      function has(k) { return kinds.indexOf(k) >= 0; }
      function other(k) { return a.kind === k ? b : a; }
      // Numbers in cells or on bars that touch anything: left to the hover and the words.
      if (has("points")) {
        [a, b].forEach(function (t) { if (t.kind === "points" && t.trace !== null && hideNumbers(spec, t.trace, done)) changed = true; });
        return;
      }
      if (a.kind === "tick" && b.kind === "tick" && a.axis === b.axis) {
        if (fixAxisTicks(plot, spec, a.axis, done)) changed = true;
        return;
      }
      if (has("title")) {
        var t = other("title");
        if (t.kind !== "legend") {
          var title = a.kind === "title" ? a : b;
          if (growTop(plot, spec, title.box.bottom - t.box.top, done)) changed = true;
          return;
        }
      }
      if (has("legend") && !(a.kind === "legend" && b.kind === "legend")) {
        if (placeLegend(plot, spec, done)) changed = true;
        return;
      }
      if (a.kind === "legend" && b.kind === "legend") {
        if (wrapCut(plot, spec, a, done)) changed = true;
        return;
      }
      var pa = who.of(a), pb = who.of(b);
      if (pa && pb && pa !== pb && who.list.length > 1) { restack = true; return; }
      if (a.kind === "annotation" && b.kind === "annotation") {
        if (wrapNeighbours(plot, spec, a, found, done)) changed = true;
        return;
      }
      if (has("annotation") && (has("tick") || has("axistitle"))) {
        var label = a.kind === "annotation" ? a : b, axisText = label === a ? b : a;
        var A = (spec.layout.annotations || [])[label.index];
        // A panel title above the plot, over ticks drawn on top: the top margin grows.
        if (A && (A.yref || "paper") === "paper" && num(A.y, 0) >= 1 && growTop(plot, spec, label.box.bottom - axisText.box.top, done)) changed = true;
      }
    });
    if (restack && count(done, "restack") <= 3) {
      var list = who.list;
      if (stack(plot, spec, list, found)) changed = true;
    }
    found.cut.forEach(function (t) { if (wrapCut(plot, spec, t, done)) changed = true; });
    return changed;
  }

  function fit(plot) {
    var width = plot.clientWidth || (plot._fullLayout && plot._fullLayout.width) || WIDE;
    var o = plot._mhaOriginal;
    if (width >= WIDE) {
      if (!o.changed) return Promise.resolve();
      o.changed = false;
      return draw(plot, design(plot));
    }
    var spec = design(plot), done = {}, started = Promise.resolve();
    // Start from the design at this width (a call at another width left its changes behind).
    if (o.changed) started = draw(plot, clone(spec));
    o.changed = true;
    var phone = width < PHONE;
    return started.then(function () {
      var steps = Promise.resolve();
      function then(change) {
        steps = steps.then(function () {
          if (change()) return draw(plot, clone(spec));
        });
      }
      then(function () {
        var found = problems(plot);
        var list = panels(plot, spec);
        if ((phone || found.pairs.length) && list.length > 1 && sideBySide(list)) return stack(plot, spec, list, found);
        if (phone && list.length === 1 && found.pairs.length) return recutGrid(plot, spec);
        return false;
      });
      then(function () { return phone && tightMargins(spec); });
      then(function () {
        var t = spec.data.filter(function (tr) { return tr.type === "table"; });
        return t.length === 1 && (problems(plot).pairs.length > 0 || problems(plot).cut.length > 0) && splitTable(plot, spec);
      });
      then(function () { return phone && wrapLongTicks(plot, spec); });
      for (var r = 0; r < ROUNDS; r++) then(function () { return round(plot, spec, done); });
      return steps;
    });
  }

  function adopt(plot) {
    var o = plot._mhaOriginal, f = plot._mhaFitted;
    if (!o || !f || f.data !== plot.data || f.layout !== plot.layout) {
      // First call, or the figure was drawn again from another spec: that is the design now.
      var layout = clone(plot.layout);
      // plotly writes the range it chose into an autoranged axis: keep the axis autoranged (and its
      // direction) so the design, drawn again, is computed exactly as it was the first time.
      Object.keys(layout).forEach(function (key) {
        var ax = layout[key], full = plot._fullLayout[key];
        // An axis drawn to scale with constrain "domain" has its shrunk domain written back too.
        if (/^[xy]axis\d*$/.test(key) && ax && ax.constrain === "domain" && full && Array.isArray(full._inputDomain)) ax.domain = full._inputDomain.slice();
        if (!/^[xy]axis\d*$/.test(key) || !ax || !ax.autorange || !Array.isArray(ax.range)) return;
        if (ax.autorange === true && ax.range[0] > ax.range[1]) ax.autorange = "reversed";
        delete ax.range;
      });
      plot._mhaOriginal = {data: clone(plot.data), layout: layout, changed: false};
      plot._mhaFitted = {data: plot.data, layout: plot.layout};
    }
  }

  // For the unit tests (tests/js/handout_narrow.test.js): the parts that need no drawing.
  window.mhaNarrow = {overlapping: overlapping, titleText: titleText, setTitleText: setTitleText, tightMargins: tightMargins};

  window.mhaFitNarrow = function (plot) {
    if (!window.Plotly || !L || !plot || !plot._fullLayout || !plot.data) return Promise.resolve();
    // One fit at a time per figure; a call made meanwhile runs after it, at the width of its own time.
    var run = (plot._mhaQueue || Promise.resolve()).then(function () { adopt(plot); return fit(plot); }).catch(function (e) {
      if (window.console) window.console.warn("mhaFitNarrow:", e);
    });
    plot._mhaQueue = run;
    return run;
  };
})();
