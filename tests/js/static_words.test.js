// static_words.js: a static figure in JupyterLab named and described by the words in the output after it.
const test = require("node:test");
const assert = require("node:assert/strict");
const { page, widgetSource } = require("./load.js");

// label.js, save.js and static_words.js as _words.py inlines them.
function load() {
  const run = new Function("module", widgetSource("label.js") + widgetSource("save.js") + widgetSource("static_words.js")
                           + "\nreturn mhaStaticWords;");
  return run(undefined);
}
const mhaStaticWords = load();

const OUTPUTS = `<div class="jp-OutputArea">
  <div class="jp-OutputArea-child"><div class="jp-RenderedPlotly"><div class="js-plotly-plot">PLOT</div></div></div>
  <div class="jp-OutputArea-child"><div class="out"><div id="w1" class="mha-figure-words">Head 1 looks back.</div></div></div>
</div>`;

test("the plot in the output before the words becomes an image named and described by them", () => {
  const { document } = page(OUTPUTS.replace("PLOT", '<svg class="main-svg"></svg>'));
  mhaStaticWords("w1", "Weights of head 1", { doc: document, later: () => assert.fail("no retry needed") });
  const plot = document.querySelector(".jp-RenderedPlotly");
  assert.deepEqual([plot.getAttribute("role"), plot.getAttribute("aria-label"), plot.getAttribute("aria-describedby")],
                   ["img", "Weights of head 1", "w1"]);
  assert.equal(document.getElementById("w1").getAttribute("aria-hidden"), "true", "read once, as the description");
  assert.equal(plot.querySelector("svg").getAttribute("aria-hidden"), "true");
});

test("a plot not drawn yet is looked for again until it is", () => {
  const { document } = page(OUTPUTS.replace("PLOT", ""));
  const queued = [];
  mhaStaticWords("w1", "Weights", { doc: document, later: (work) => queued.push(work) });
  assert.equal(queued.length, 1);
  document.querySelector(".js-plotly-plot").innerHTML = '<svg class="main-svg"></svg>';
  queued.shift()();
  assert.equal(queued.length, 0);
  assert.equal(document.querySelector(".jp-RenderedPlotly").style.overflow, "hidden");
});

test("words with no plot before them are looked for a limited number of times, then left alone", () => {
  const { document } = page('<div class="jp-OutputArea-child"><div id="w1"></div></div>');
  let retries = 0;
  const later = (work) => { retries += 1; work(); };
  mhaStaticWords("w1", "Weights", { doc: document, later, tries: 5 });
  assert.equal(retries, 4);
  assert.equal(document.getElementById("w1").hasAttribute("aria-hidden"), false);
});

test("its PNG and SVG buttons go under the figure, in the words' output, at the theme's text size", () => {
  const { document } = page(OUTPUTS.replace("PLOT", '<svg class="main-svg"></svg>'));
  mhaStaticWords("w1", "Weights", { px: 20, doc: document, later: () => assert.fail("no retry needed") });
  const row = document.querySelector(".out > .mha-save");
  assert.deepEqual([...row.querySelectorAll("button")].map((b) => [b.textContent, b.style.fontSize]),
                   [["Save as PNG", "20px"], ["Save as SVG", "20px"]]);
  assert.equal(document.querySelector(".jp-RenderedPlotly .mha-save"), null, "not inside the image");
});
