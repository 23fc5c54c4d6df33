/* The parts of a handout figure that narrow.js lays out again on a narrow page, whole.

   - stack: panels side by side (the builders' subplots, each on its own pair of axes) become one
     column; each keeps its height in pixels and the room it needs above (its title) and below (its
     ticks and axis title), measured at this width; paper-placed titles, notes, colour bars and the
     legend move with their panel, and the figure grows taller.
   - recutGrid: several heads drawn as one heatmap, side by side with a gap of empty columns
     (mha_core.figures' head grids), become one column of heads; the head titles, the outlines of
     each row's largest weight, the shapes and the tick labels move with their head.
   - splitTable: a table whose columns cannot all fit is split into parts one above the other,
     each repeating the first column (the row names).

   Loaded before narrow.js, which decides when each is needed (window.mhaNarrowLayout).
*/
(function () {
  "use strict";
  function clone(x) { return x === undefined ? undefined : JSON.parse(JSON.stringify(x)); }
  function num(x, d) { return typeof x === "number" && isFinite(x) ? x : d; }
  function axisKey(id) { return id.charAt(0) + "axis" + id.slice(1); }  // "x2" -> "xaxis2"
  function plain(text) { return String(text == null ? "" : text).replace(/<br\s*\/?>/gi, " ").replace(/<[^>]+>/g, ""); }

  function wrapWords(text, chars) {
    var lines = [], line = "";
    String(text).replace(/<br\s*\/?>/gi, " ").split(/\s+/).forEach(function (w) {
      if (line && (line + " " + w).replace(/<[^>]+>/g, "").length > chars) { lines.push(line); line = w; } else line = line ? line + " " + w : w;
    });
    if (line) lines.push(line);
    return lines.join("<br>");
  }
  // --------------------------------------------------------------- the figure's panels

  // One panel per cartesian subplot that draws something, with its domains (fractions of the plot area).
  function panels(plot, spec) {
    var fl = plot._fullLayout, used = {}, out = [];
    spec.data.forEach(function (tr, i) {
      if (tr.type === "table" || tr.visible === false) return;
      var id = (tr.xaxis || "x") + (tr.yaxis || "y");
      (used[id] = used[id] || []).push(i);
    });
    Object.keys(used).forEach(function (id) {
      var m = /^(x\d*)(y\d*)$/.exec(id);
      var xa = fl[axisKey(m[1])], ya = fl[axisKey(m[2])];
      if (!xa || !ya) return;
      out.push({id: id, x: m[1], y: m[2], traces: used[id], xd: xa.domain.slice(), yd: ya.domain.slice(),
                px: {left: xa._offset, width: xa._length, top: ya._offset, height: ya._length}});
    });
    return out;
  }

  function sideBySide(list) {
    for (var i = 0; i < list.length; i++) {
      for (var j = i + 1; j < list.length; j++) {
        var a = list[i], b = list[j];
        var ys = Math.min(a.yd[1], b.yd[1]) - Math.max(a.yd[0], b.yd[0]);
        var xs = Math.min(a.xd[1], b.xd[1]) - Math.max(a.xd[0], b.xd[0]);
        if (ys > 0.05 && xs < 0.01) return true;
      }
    }
    return false;
  }

  // The paper position of an annotation, or null where it moves with its axes by itself.
  function paperXY(ann) {
    var xr = ann.xref || "paper", yr = ann.yref || "paper";
    return {x: xr === "paper" ? num(ann.x, 0.5) : null, y: yr === "paper" ? num(ann.y, 0.5) : null};
  }

  function nearest(list, x, y) {
    var best = null, bestD = Infinity;
    list.forEach(function (p) {
      var dx = x === null ? 0 : (x < p.xd[0] ? p.xd[0] - x : x > p.xd[1] ? x - p.xd[1] : 0);
      var dy = y === null ? 0 : (y < p.yd[0] ? p.yd[0] - y : y > p.yd[1] ? y - p.yd[1] : 0);
      var d = dx * 3 + dy;
      if (d < bestD) { bestD = d; best = p; }
    });
    return best;
  }

  // Panels side by side become one column; every panel keeps its height in pixels, and the room
  // it needs above (its title) and below (its ticks and axis title), as measured at this width.
  function stack(plot, spec, list, found) {
    var fl = plot._fullLayout, size = fl._size, layout = spec.layout;
    var H0 = size.h;
    list.sort(function (a, b) { return (b.yd[1] - a.yd[1]) > 0.02 ? 1 : (a.yd[1] - b.yd[1]) > 0.02 ? -1 : a.xd[0] - b.xd[0]; });
    var anns = layout.annotations || [];
    var owned = anns.map(function (ann) {
      var p = paperXY(ann);
      if (p.x === null && p.y === null) return null;
      var axisPanel = list.filter(function (q) { return q.x === (ann.xref || "").split(" ")[0] || q.y === (ann.yref || "").split(" ")[0]; })[0];
      if (axisPanel) return axisPanel;
      // A title just above a panel, inside its columns, is that panel's (titles sit over their panel).
      var under = list.filter(function (q) {
        return p.x !== null && p.y !== null && p.x >= q.xd[0] - 0.01 && p.x <= q.xd[1] + 0.01 && p.y >= q.yd[1] - 0.01 && p.y - q.yd[1] < 0.15;
      }).sort(function (q, r) { return r.yd[1] - q.yd[1]; })[0];
      return under || nearest(list, p.x, p.y);
    });
    list.forEach(function (p) {
      var top = p.px.top, bottom = top + p.px.height, svgTop = plot.querySelector(".main-svg").getBoundingClientRect().top;
      p.above = 6; p.below = 6;
      found.texts.forEach(function (t) {
        var mine = (t.kind === "tick" || t.kind === "axistitle") ? (t.axis === p.x || t.axis === p.y)
          : t.kind === "annotation" ? owned[t.index] === p : false;
        if (!mine) return;
        var tt = t.raw.top - svgTop, tb = t.raw.bottom - svgTop;
        if (tt < top) p.above = Math.max(p.above, top - tt);
        if (tb > bottom) p.below = Math.max(p.below, tb - bottom);
      });
    });
    list.forEach(function (p) {
      // A panel drawn to scale (square cells) keeps its shape at the new width.
      var ya = fl[axisKey(p.y)], xa = fl[axisKey(p.x)];
      if ((ya.scaleanchor === p.x || xa.scaleanchor === p.y) && p.px.width > 0) p.px.height = Math.round(p.px.height / p.px.width * size.w);
    });
    // A note written beside a panel (outside its columns, on the paper) has no room there any more: it goes
    // under the panel, its lines left-aligned, and the panel keeps room below for it.
    var notes = anns.map(function (ann, i) {
      var xy = paperXY(ann), p = owned[i];
      if (!p || xy.x === null || !(xy.x > p.xd[1] + 0.01 || xy.x < p.xd[0] - 0.01)) return null;
      var box = found.texts.filter(function (t) { return t.kind === "annotation" && t.index === i; })[0];
      if (!box) return null;
      var note = {p: p, gap: p.below, height: box.raw.bottom - box.raw.top};
      p.below += note.height + 6;
      return note;
    });
    var topPad = (1 - Math.max.apply(null, list.map(function (p) { return p.yd[1]; }))) * H0;
    var bottomPad = Math.min.apply(null, list.map(function (p) { return p.yd[0]; })) * H0;
    var y = topPad;
    list.forEach(function (p, i) {
      if (i) y += list[i - 1].below + p.above + 14;
      p.newTop = y;
      y += p.px.height;
    });
    var H1 = y + bottomPad;
    list.forEach(function (p) {
      p.nyd = [(H1 - p.newTop - p.px.height) / H1, (H1 - p.newTop) / H1];
      p.nxd = [0, 1];
      var xk = axisKey(p.x), yk = axisKey(p.y);
      layout[xk] = layout[xk] || {}; layout[yk] = layout[yk] || {};
      layout[xk].domain = p.nxd.slice(); layout[yk].domain = p.nyd.slice();
      // Each axis drawn at its own panel (a builder may have left an axis anchored to the first one).
      if (!layout[xk].overlaying) layout[xk].anchor = p.y;
      if (!layout[yk].overlaying) layout[yk].anchor = p.x;
      p.traces.forEach(function (i) {
        var tr = spec.data[i];
        if (tr.colorbar || tr.showscale) {
          tr.colorbar = tr.colorbar || {};
          tr.colorbar.y = (p.nyd[0] + p.nyd[1]) / 2; tr.colorbar.yanchor = "middle";
          tr.colorbar.len = p.nyd[1] - p.nyd[0]; tr.colorbar.lenmode = "fraction";
          tr.colorbar.x = 1.02; tr.colorbar.xanchor = "left";
        }
      });
    });
    // Paper-placed annotations follow their panel: across as a share of its width, up and down in pixels.
    anns.forEach(function (ann, i) {
      var p = owned[i];
      if (!p) return;
      if (notes[i]) {
        ann.x = 0; ann.xanchor = "left"; ann.align = "left"; ann.yanchor = "top";
        ann.y = p.nyd[0] - (notes[i].gap + 4) / H1;
        return;
      }
      var xy = paperXY(ann);
      if (xy.x !== null) ann.x = p.nxd[0] + (xy.x - p.xd[0]) / Math.max(1e-9, p.xd[1] - p.xd[0]) * (p.nxd[1] - p.nxd[0]);
      if (xy.y !== null) {
        var mid = (p.yd[0] + p.yd[1]) / 2;
        ann.y = xy.y >= mid ? p.nyd[1] + (xy.y - p.yd[1]) * H0 / H1 : p.nyd[0] + (xy.y - p.yd[0]) * H0 / H1;
      }
    });
    if (layout.legend && typeof layout.legend.y === "number") {
      var ly = layout.legend.y;
      layout.legend.y = ly >= 1 ? 1 + (ly - 1) * H0 / H1 : ly <= 0 ? ly * H0 / H1 : ly;
      if (typeof layout.legend.x === "number" && layout.legend.x > 0.3) layout.legend.x = 0;
    }
    layout.height = Math.round(fl.height + (H1 - H0));
    return true;
  }

  // --------------------------------------------------------------- a grid of heads drawn as one heatmap

  function nullLines(z, byColumn) {
    var rows = z.length, cols = z[0].length, n = byColumn ? cols : rows, other = byColumn ? rows : cols, out = [];
    for (var i = 0; i < n; i++) {
      var empty = true;
      for (var j = 0; j < other && empty; j++) {
        var v = byColumn ? z[j][i] : z[i][j];
        if (v !== null && v !== undefined && v === v) empty = false;
      }
      out.push(empty);
    }
    return out;
  }

  function blocks(empty) {
    var out = [], start = null;
    empty.forEach(function (e, i) {
      if (!e && start === null) start = i;
      if (e && start !== null) { out.push([start, i - 1]); start = null; }
    });
    if (start !== null) out.push([start, empty.length - 1]);
    return out;
  }

  function within(list, v) {
    for (var i = 0; i < list.length; i++) if (v >= list[i][0] - 0.5 - 1e-9 && v <= list[i][1] + 0.5 + 1e-9) return i;
    return -1;
  }

  // One heatmap holding several heads side by side (gaps of empty columns between them): re-cut it
  // into one column of heads, moving the head titles, the outlines and the tick labels with them.
  function recutGrid(plot, spec) {
    var layout = spec.layout, hm = null, hmIndex = -1;
    spec.data.forEach(function (tr, i) {
      if (tr.type === "heatmap" && !tr.x && !tr.y && Array.isArray(tr.z) && Array.isArray(tr.z[0]) && hm === null) { hm = tr; hmIndex = i; }
    });
    if (!hm || (hm.xaxis && hm.xaxis !== "x") || (hm.yaxis && hm.yaxis !== "y")) return false;
    var colBlocks = blocks(nullLines(hm.z, true)), rowBlocks = blocks(nullLines(hm.z, false));
    if (colBlocks.length < 2) return false;
    var width = colBlocks[0][1] - colBlocks[0][0] + 1;
    if (colBlocks.some(function (b) { return b[1] - b[0] + 1 !== width; })) return false;
    var gap = colBlocks[1][0] - colBlocks[0][1] - 1;
    var order = [];
    rowBlocks.forEach(function (rb, r) { colBlocks.forEach(function (cb, c) { order.push({r: r, c: c}); }); });
    var newStart = [], y = 0;
    order.forEach(function (o) { newStart.push(y); y += rowBlocks[o.r][1] - rowBlocks[o.r][0] + 1 + gap; });
    var rowsOut = y - gap;
    function where(r, c) { for (var k = 0; k < order.length; k++) if (order[k].r === r && order[k].c === c) return k; return -1; }
    function mapXY(x, yv) {
      var c = within(colBlocks, x), r = within(rowBlocks, yv);
      if (c < 0 || r < 0) return null;
      var k = where(r, c);
      return [x - colBlocks[c][0] + colBlocks[0][0], yv - rowBlocks[r][0] + newStart[k]];
    }
    function recut(a) {
      if (!Array.isArray(a) || !Array.isArray(a[0])) return a;
      var out = [];
      for (var i = 0; i < rowsOut; i++) {
        var row = [];
        for (var j = 0; j < colBlocks[0][0] + width; j++) row.push(null);
        out.push(row);
      }
      order.forEach(function (o, k) {
        var rb = rowBlocks[o.r], cb = colBlocks[o.c];
        for (var i = rb[0]; i <= rb[1]; i++) {
          for (var j = cb[0]; j <= cb[1]; j++) out[newStart[k] + i - rb[0]][colBlocks[0][0] + j - cb[0]] = a[i] ? a[i][j] : null;
        }
      });
      return out;
    }
    ["z", "text", "hovertext", "customdata"].forEach(function (key) { if (hm[key]) hm[key] = recut(hm[key]); });
    if (hm.text && !Array.isArray(hm.text)) delete hm.text;
    // Traces drawn on the same axes (outlines of each row's largest weight): every point moves with its head.
    spec.data.forEach(function (tr, i) {
      if (i === hmIndex || tr.type !== "scatter" || (tr.xaxis || "x") !== "x" || (tr.yaxis || "y") !== "y") return;
      if (!Array.isArray(tr.x) || !Array.isArray(tr.y)) return;
      // An outline's corners sit on cell edges; its centre says which head it belongs to.
      var xs = tr.x.slice(), ys = tr.y.slice(), start = 0;
      for (var i2 = 0; i2 <= xs.length; i2++) {
        if (i2 === xs.length || xs[i2] === null) {
          var seg = [], cx = 0, cy = 0;
          for (var k = start; k < i2; k++) { cx += xs[k]; cy += ys[k]; seg.push(k); }
          if (seg.length) {
            var moved = mapXY(cx / seg.length, cy / seg.length);
            if (moved) {
              var dx = moved[0] - cx / seg.length, dy = moved[1] - cy / seg.length;
              seg.forEach(function (k2) { tr.x[k2] = xs[k2] + dx; tr.y[k2] = ys[k2] + dy; });
            }
          }
          start = i2 + 1;
        }
      }
    });
    (layout.annotations || []).forEach(function (ann) {
      if ((ann.xref || "paper") !== "x" || (ann.yref || "paper") !== "y") return;
      var moved = mapXY(ann.x, ann.y);
      if (moved) { ann.x = moved[0]; ann.y = moved[1]; }
    });
    (layout.shapes || []).forEach(function (s) {
      if ((s.xref || "x") !== "x" || (s.yref || "y") !== "y") return;
      var moved = mapXY((s.x0 + s.x1) / 2, (s.y0 + s.y1) / 2);
      if (moved) { var dx = moved[0] - (s.x0 + s.x1) / 2, dy = moved[1] - (s.y0 + s.y1) / 2; s.x0 += dx; s.x1 += dx; s.y0 += dy; s.y1 += dy; }
    });
    var xa = layout.xaxis = layout.xaxis || {}, ya = layout.yaxis = layout.yaxis || {};
    if (Array.isArray(xa.tickvals) && Array.isArray(xa.ticktext)) {
      var keep = xa.tickvals.map(function (v, i) { return [v, xa.ticktext[i]]; }).filter(function (p) { return within([colBlocks[0]], p[0]) === 0; });
      xa.tickvals = keep.map(function (p) { return p[0]; }); xa.ticktext = keep.map(function (p) { return p[1]; });
    }
    if (Array.isArray(ya.tickvals) && Array.isArray(ya.ticktext)) {
      var vals = [], labels = [];
      order.forEach(function (o, k) {
        ya.tickvals.forEach(function (v, i) {
          if (within([rowBlocks[o.r]], v) === 0) { vals.push(v - rowBlocks[o.r][0] + newStart[k]); labels.push(ya.ticktext[i]); }
        });
      });
      ya.tickvals = vals; ya.ticktext = labels;
    }
    xa.range = [colBlocks[0][0] - 0.5, colBlocks[0][0] + width - 0.5];
    if (ya.range) ya.range = ya.autorange === "reversed" || ya.range[0] > ya.range[1] ? [rowsOut - 0.5, -0.5] : [-0.5, rowsOut - 0.5];
    // As tall as the cells are wide (a little taller: the head titles sit in the gaps).
    var fl = plot._fullLayout, cellW = fl._size.w / (colBlocks.length * width + gap * (colBlocks.length - 1));
    var newCellW = fl._size.w / width, rowPx = Math.max(28, Math.min(newCellW, 1.4 * fl._size.h / hm.z.length * colBlocks.length));
    layout.height = Math.round(fl.height - fl._size.h + rowPx * rowsOut + 8);
    if (hm.colorbar) { hm.colorbar.len = Math.min(1, 300 / (rowPx * rowsOut)); hm.colorbar.y = 1; hm.colorbar.yanchor = "top"; }
    return cellW > 0;
  }

  // --------------------------------------------------------------- a table wider than the page

  // A table whose columns cannot all fit the page is split into parts, one above the other, each
  // repeating the first column (the row names); every column gets the width of its longest line
  // (at least its longest word), and each part's rows the height of their wrapped lines.
  function splitTable(plot, spec) {
    var t = null, at = -1;
    spec.data.forEach(function (tr, i) { if (tr.type === "table" && !t) { t = tr; at = i; } });
    if (!t || !t.header || !Array.isArray(t.header.values) || !t.cells || !Array.isArray(t.cells.values)) return false;
    var fl = plot._fullLayout, room = fl._size.w - 4;
    var hSize = num(t.header.font && t.header.font.size, 14), cSize = num(t.cells.font && t.cells.font.size, 16);
    var cols = t.header.values.map(function (head, i) {
      var cells = (t.cells.values[i] || []).map(function (v) { return String(v); });
      // Characters about 0.55 em wide (0.62 em in the bold header), 12 px of padding.
      function longest(list, size, split, em) {
        var w = 0;
        list.forEach(function (v) { String(v).split(split).forEach(function (piece) { w = Math.max(w, plain(piece).length * em * size); }); });
        return w + 12;
      }
      var word = Math.max(longest(cells, cSize, /<br\s*\/?>|\s+/i, 0.55), longest([head], hSize, /<br\s*\/?>|\s+/i, 0.62));
      var line = Math.max(longest(cells, cSize, /<br\s*\/?>/i, 0.55), longest([head], hSize, /<br\s*\/?>/i, 0.62));
      return {i: i, word: word, width: Math.min(line, Math.max(word, room * 0.45)), cells: cells, head: String(head)};
    });
    var parts = [], part = null, used = 0;
    cols.slice(1).forEach(function (c) {
      if (!part || used + c.width > room) { part = [cols[0]]; used = cols[0].width; parts.push(part); }
      part.push(c); used += c.width;
    });
    if (parts.length < 2) return false;
    function lines(text, width, size, em) {
      var chars = Math.max(1, Math.floor((width - 12) / (em * size)));
      return String(text).split(/<br\s*\/?>/i).reduce(function (n, piece) { return n + wrapWords(piece, chars).split("<br>").length; }, 0);
    }
    var gap = 12, y = 0, heights = [];
    var traces = parts.map(function (cs) {
      var tr = clone(t);
      function pick(a) { return Array.isArray(a) ? cs.map(function (c) { return a[c.i]; }) : a; }
      tr.header.values = pick(t.header.values); tr.cells.values = pick(t.cells.values);
      tr.columnwidth = cs.map(function (c) { return Math.round(c.width); });
      ["columnorder"].forEach(function (k) { delete tr[k]; });
      ["align", "fill", "font", "format", "prefix", "suffix", "line"].forEach(function (k) {
        [["header", t.header], ["cells", t.cells]].forEach(function (h) { if (h[1] && Array.isArray(h[1][k])) tr[h[0]][k] = pick(h[1][k]); });
      });
      var hLines = Math.max.apply(null, cs.map(function (c) { return lines(c.head, c.width, hSize, 0.62); }));
      var cLines = Math.max.apply(null, cs.map(function (c) { return Math.max.apply(null, c.cells.map(function (v) { return lines(v, c.width, cSize, 0.55); }).concat([1])); }));
      tr.header.height = Math.round(hLines * 1.3 * hSize + 14);
      tr.cells.height = Math.round(cLines * 1.3 * cSize + 14);
      var rows = Math.max.apply(null, tr.cells.values.map(function (v) { return Array.isArray(v) ? v.length : 1; }));
      var h = tr.header.height + rows * tr.cells.height + 4;
      heights.push(h); y += h + gap;
      return tr;
    });
    var total = y - gap, top = 0;
    traces.forEach(function (tr, k) {
      tr.domain = {x: [0, 1], y: [1 - (top + heights[k]) / total, 1 - top / total]};
      top += heights[k] + gap;
    });
    spec.data.splice.apply(spec.data, [at, 1].concat(traces));
    spec.layout.height = Math.round(fl.height - fl._size.h + total + 8);
    return true;
  }

  window.mhaNarrowLayout = {clone: clone, num: num, axisKey: axisKey, plain: plain, wrapWords: wrapWords,
                            panels: panels, sideBySide: sideBySide, paperXY: paperXY, nearest: nearest,
                            stack: stack, recutGrid: recutGrid, splitTable: splitTable,
                            nullLines: nullLines, blocks: blocks, within: within};
})();
