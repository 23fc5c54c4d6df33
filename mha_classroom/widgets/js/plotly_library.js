/* The PlotlyLibrary widget's module (mha_classroom/widgets/_live_figure.py): evaluates plotly.js, sent once
   per kernel as the widget's "source", once per page, and settles shared().promise with it.

   The work is scheduled, not done, while this module runs: anywidget gives a model two seconds to
   load its module, and evaluating 5 MB on a busy page can take longer.
   mha_classroom/widgets/_js.py puts plotly_shared.js (shared) in front of it.
*/
/* global shared */

// plotly.js's UMD wrapper fills module.exports when it finds a CommonJS module.
export function evaluate(source) {
  const module = { exports: {} };
  new Function("module", source)(module);
  return module.exports;
}

export function load(source, one = shared(), later = (work) => setTimeout(work, 0)) {
  if (one.loading) return;
  one.loading = true;
  later(() => {
    try {
      one.settle.resolve(evaluate(source));
    } catch (error) {
      one.loading = false;
      one.settle.reject(error);
    }
  });
}

export default {
  initialize({ model }) {
    if (model.get("source")) load(model.get("source"));
    else model.on("change:source", () => load(model.get("source")));
  },
};
