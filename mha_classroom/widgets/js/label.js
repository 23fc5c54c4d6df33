/* Every plot the course draws is one image for a screen reader: named by its title, described by its
   words, its drawing hidden. The one labelling module of the course: JupyterLab's control groups
   (keys.js), JupyterLab's static figures (static_words.js) and the handouts (figures.js, states.js)
   all call it.

   A classic script, not an ES module, so that it runs everywhere it is needed: put in front of an
   anywidget's module (mha_classroom/widgets/_js.py), inside a trusted HTML output, and as a <script src>
   of a handout opened from disk (file://, where Chromium refuses module scripts). It defines
   mhaLabel; under node (the unit tests) it is module.exports.
*/
/* exported mhaLabel */
var mhaLabel = (function () {
  "use strict";

  // An attribute written only when it changes: a MutationObserver watching the plot sees no churn.
  function set(el, name, value) {
    if (el.getAttribute(name) !== value) el.setAttribute(name, value);
  }

  // The plot's drawing is not read out piece by piece: its SVGs are hidden, and so is plotly's
  // off-screen text ruler (an SVG of its own, far off screen, in the document's body).
  function hideDrawing(plot) {
    plot.querySelectorAll("svg").forEach(function (svg) { set(svg, "aria-hidden", "true"); });
    var doc = plot.ownerDocument;
    var tester = doc && doc.getElementById("js-plotly-tester");
    if (tester) set(tester, "aria-hidden", "true");
  }

  // The plot as one image named ``name`` and described by the element with id ``describedBy``.
  function asImage(plot, name, describedBy) {
    set(plot, "role", "img");
    set(plot, "aria-label", name);
    if (describedBy) set(plot, "aria-describedby", describedBy);
    hideDrawing(plot);
  }

  // Whether a box overflows by more than rounding (2 px): only then is it a region to scroll.
  function overflows(box) {
    return box.scrollWidth - box.clientWidth > 2 || box.scrollHeight - box.clientHeight > 2;
  }

  // A plot a pixel or two larger than its output (rounding) is no region to scroll: its overflow is hidden.
  // One that really does not fit (a narrow window) keeps its scroll bar and gets a Tab stop, so that a
  // keyboard can scroll it (axe: scrollable-region-focusable).
  function fitScroll(plot) {
    var over = overflows(plot);
    plot.style.overflow = over ? "" : "hidden";
    if (over) set(plot, "tabindex", "0");
    else plot.removeAttribute("tabindex");
    return over;
  }

  return {set: set, hideDrawing: hideDrawing, asImage: asImage, overflows: overflows, fitScroll: fitScroll};
})();
if (typeof module === "object" && module.exports) module.exports = mhaLabel;
