/* shared(): plotly.js for the page, one promise per page, made by whichever module runs first and
   settled by the PlotlyLibrary widget (plotly_library.js) once it has evaluated plotly.js. A
   LiveFigure's view (live_figure.js) waits on it.

   Put in front of an anywidget's module by mha_classroom/widgets/_js.py; module.exports under node.
*/
/* exported shared */
function shared(root = globalThis) {
  if (!root.__mhaPlotly) {
    let settle;
    const promise = new Promise((resolve, reject) => { settle = { resolve, reject }; });
    root.__mhaPlotly = { promise, settle, loading: false };
  }
  return root.__mhaPlotly;
}
if (typeof module === "object" && module.exports) module.exports = { shared };
