/* mhaDiff.applyDiff(figure, diff): the page's half of the course's one figure diff, the inverse of
   mha_classroom/widgets/_plain.py figure_diff. {s: {key: value}} sets keys, {u: {key: diff}} updates a
   nested object (or an item of a list, keyed by its position), {d: [key]} deletes keys. It returns a
   new object and leaves ``figure`` as it is: what the two share is only what the diff leaves alone.

   Used by a LiveFigure's view in JupyterLab (live_figure.js, each change the kernel sends) and by the
   handouts (tools/handout_assets/states.js, each recorded setting). The cases of tests/diff_cases.json
   are checked here (tests/js/diff.test.js) and in Python (tests/test_widgets_plain.py).

   A classic script (see label.js): it defines mhaDiff; under node it is module.exports.
*/
/* exported mhaDiff */
var mhaDiff = (function () {
  "use strict";

  function clone(x) { return x === undefined ? x : JSON.parse(JSON.stringify(x)); }

  function applyDiff(node, diff) {
    var key;
    if (!diff) return node;
    var out = Array.isArray(node) ? node.slice() : Object.assign({}, node);
    for (key in (diff.s || {})) out[key] = clone(diff.s[key]);
    for (key in (diff.u || {})) out[key] = applyDiff(out[key], diff.u[key]);
    (diff.d || []).forEach(function (k) { delete out[k]; });
    return out;
  }

  return { applyDiff: applyDiff, clone: clone };
})();
if (typeof module === "object" && module.exports) module.exports = mhaDiff;
