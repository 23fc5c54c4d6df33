/* Draws a handout's figures with the plotly.js shipped beside the pages.

   Each figure is a <figure class="mha-figure"> holding its plotly JSON in a
   <script type="application/json" class="mha-figure-data">, a <div class="mha-plot">
   to draw into (role="img", named by the figure's title, described by the text below it:
   tools/handouts.py writes both from mha_classroom.describe), and that description.

   The figure takes the width of the page (no fixed width, plotly's responsive mode), so
   it reflows on a phone or a tablet instead of shrinking; the mode bar stays hidden
   (it covered titles on a narrow screen, and its buttons cannot sit inside an image).
   Under the plot, two buttons save the figure as drawn, as PNG or SVG (save.js, mhaSave);
   its drawing is hidden from a screen reader by the course's labelling module (label.js,
   mhaLabel). Both come from mha_classroom/widgets/js, shared with JupyterLab, loaded before this file.
*/
(function () {
  "use strict";

  // The builders wrap a title for a laptop's 820 px. On a narrower page a title that runs past the
  // figure's edge is wrapped again, a few characters shorter each time until it fits, and the
  // top margin grows by the lines it gains.
  function wrapped(text, room) {
    var lines = [], line = "";
    text.replace(/<br\s*\/?>/gi, " ").split(/\s+/).forEach(function (w) {
      if (line && (line + " " + w).replace(/<[^>]+>/g, "").length > room) { lines.push(line); line = w; }
      else line = line ? line + " " + w : w;
    });
    if (line) lines.push(line);
    return lines;
  }

  function overflows(plot) {
    var title = plot.querySelector(".g-gtitle"), svg = plot.querySelector(".main-svg");
    if (!title || !svg) return false;
    var t = title.getBoundingClientRect(), s = svg.getBoundingClientRect();
    return t.width > 0 && (t.left < s.left - 1 || t.right > s.right + 1 || t.top < s.top - 1);
  }

  function fitTitle(plot, original, margin) {
    if (!original || !original.text) return Promise.resolve();
    var size = (original.font && original.font.size) || 17;
    var before = original.text.split(/<br\s*\/?>/i).length;
    var longest = Math.max.apply(null, original.text.split(/<br\s*\/?>/i).map(function (l) { return l.replace(/<[^>]+>/g, "").length; }));
    function attempt(room, left) {
      if (!overflows(plot) || left === 0 || room < 10) return Promise.resolve();
      var lines = wrapped(original.text, room);
      var top = (margin.t === undefined ? 80 : margin.t) + Math.max(0, lines.length - before) * Math.round(1.25 * size);
      // plotly anchors a title of several lines higher than one line: pad it down as the builders do (_style.title_pad).
      var pad = 12 + (lines.length > 1 ? Math.round(0.7 * size) : 0);
      return window.Plotly.relayout(plot, {"title.text": lines.join("<br>"), "margin.t": top, "title.pad.t": pad})
        .then(function () { return attempt(Math.floor(room * 0.85), left - 1); });
    }
    return attempt(Math.floor(longest * 0.85), 8);
  }

  // A figure's layout as the page draws it: the page's width (responsive), never a fixed one.
  function pageLayout(spec) {
    var layout = JSON.parse(JSON.stringify(spec.layout || {}));
    delete layout.width;
    layout.autosize = true;
    return layout;
  }

  function hideFromReaders(plot) {
    window.mhaLabel.hideDrawing(plot);
  }

  // The title as designed, copied deep: plotly keeps the drawn layout's objects (its pad among them).
  function titleOf(layout) {
    return typeof layout.title === "string" ? {text: layout.title} : JSON.parse(JSON.stringify(layout.title || {}));
  }

  // On a phone or a tablet the figure reflows (narrow.js); at a laptop's width it is left as designed.
  function narrow(plot) {
    return window.mhaFitNarrow ? window.mhaFitNarrow(plot) : Promise.resolve();
  }

  function draw(figure) {
    var spec = JSON.parse(figure.querySelector("script.mha-figure-data").textContent);
    var layout = pageLayout(spec);
    var plot = figure.querySelector(".mha-plot");
    var original = titleOf(layout);
    var margin = Object.assign({}, layout.margin || {});
    var config = {responsive: true, displayModeBar: false, displaylogo: false};
    var drawn = window.Plotly.newPlot(plot, spec.data || [], layout, config);
    var width = 0;
    // Fits the figure to the width it has now, once that width has moved by 20 px or more. When a fit is done,
    // data-mha-fitted holds the width it fitted for (after a resize, the page is laid out again once it is there).
    function refit() {
      if (Math.abs(plot.clientWidth - width) < 20) return Promise.resolve();
      var fitting = width = plot.clientWidth;
      return window.Plotly.relayout(plot, {"title.text": original.text, "margin.t": margin.t,
                                           "title.pad.t": original.pad ? original.pad.t : 12})
        .then(function () { return fitTitle(plot, original, margin); })
        .then(function () { return narrow(plot); })
        .then(function () { if (width === fitting) plot.setAttribute("data-mha-fitted", String(fitting)); });
    }
    window.addEventListener("resize", function () { window.setTimeout(refit, 150); });
    // The plot's own box can change width without the window's (a web font or a wide table laid out late).
    if (window.ResizeObserver) new window.ResizeObserver(function () { window.setTimeout(refit, 150); }).observe(plot);
    // Another setting of the same figure (states.js): drawn in place, its title fitted to the page again.
    figure.mhaShow = function (next) {
      var nextLayout = pageLayout(next);
      original = titleOf(nextLayout);
      margin = Object.assign({}, nextLayout.margin || {});
      // react draws the new title as the builder wrote it; only a title too wide for the page is wrapped again.
      return window.Plotly.react(plot, next.data || [], nextLayout, config)
        .then(function () { return fitTitle(plot, original, margin); })
        .then(function () { return narrow(plot); })
        .then(function () { hideFromReaders(plot); });
    };
    return drawn.then(refit).then(function () {
      hideFromReaders(plot);
      if (window.mhaSave) window.mhaSave.addButtons(figure, plot, function () { return window.Plotly; }, plot.nextSibling);
      plot.setAttribute("data-mha-drawn", "1");
    });
  }

  // A box that scrolls sideways (code on a phone, a wide table) must be reachable by the keyboard.
  function focusableScrollers() {
    document.querySelectorAll("pre, .jp-RenderedHTMLCommon table").forEach(function (box) {
      if (box.scrollWidth > box.clientWidth + 1) box.setAttribute("tabindex", "0");
      else if (box.getAttribute("tabindex") === "0") box.removeAttribute("tabindex");
    });
  }

  function start() {
    focusableScrollers();
    window.addEventListener("resize", focusableScrollers);
    if (!window.Plotly) return;
    document.querySelectorAll("figure.mha-figure").forEach(function (figure) {
      try { draw(figure); } catch (e) {
        var note = document.createElement("p");
        note.textContent = "This figure could not be drawn here; its description below gives its numbers.";
        figure.insertBefore(note, figure.firstChild);
      }
    });
  }

  // For the unit tests (tests/js/handout_figures.test.js): the parts that need no drawing.
  window.mhaFigures = {wrapped: wrapped, pageLayout: pageLayout, titleOf: titleOf};

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
