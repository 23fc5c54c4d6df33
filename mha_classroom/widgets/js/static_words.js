/* A static figure in JupyterLab (mha_classroom/widgets/_words.py show_figure): the HTML output after the
   figure holds its words and a script that calls mhaStaticWords(id, name, {px}) once the output is in
   the page (JupyterLab runs the scripts of trusted HTML outputs). It finds the plot in the output just
   before the words (id), makes it an image named ``name`` and described by the words (label.js), and
   puts the buttons that save it as PNG or SVG under it, in the words' output, their text ``px`` pixels
   (save.js; JupyterLab's plotly.js is its renderer's own, so the files are made from the drawing).

   A classic script: _words.py inlines label.js, save.js and this file into the output's <script>.
   module.exports under node.
*/
/* global mhaLabel, mhaSave */
/* exported mhaStaticWords */
function mhaStaticWords(id, name, { px = 0, doc = document, later = (work) => setTimeout(work, 250), tries = 240 } = {}) {
  let left = tries;
  // The plot in the output before the one holding the words; null until JupyterLab has drawn it.
  const plotBefore = (words) => {
    const child = words && words.closest(".jp-OutputArea-child");
    const before = child && child.previousElementSibling;
    return before && before.querySelector(".jp-RenderedPlotly, .js-plotly-plot");
  };
  const attempt = () => {
    const words = doc.getElementById(id);
    const plot = plotBefore(words);
    if (!plot) {
      if (--left > 0) later(attempt);
      return;
    }
    mhaLabel.asImage(plot, name, id);
    words.setAttribute("aria-hidden", "true");  // read once, as the image's description
    const drawn = plot.matches(".js-plotly-plot") ? plot : plot.querySelector(".js-plotly-plot");
    if (!drawn || !drawn.querySelector(".main-svg")) {  // not drawn yet
      if (--left > 0) later(attempt);
      return;
    }
    mhaLabel.fitScroll(plot);
    mhaSave.addButtons(words.parentElement, drawn, () => null, null, px);
    const view = doc.defaultView;
    if (view && view.ResizeObserver) new view.ResizeObserver(() => mhaLabel.fitScroll(plot)).observe(plot);
  };
  attempt();
}
if (typeof module === "object" && module.exports) module.exports = { mhaStaticWords };
