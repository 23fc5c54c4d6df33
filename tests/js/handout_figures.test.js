// figures.js: a handout's figures drawn by plotly.js at the page's width, hidden from a screen reader
// piece by piece (label.js), with their PNG and SVG buttons (save.js).
const test = require("node:test");
const assert = require("node:assert/strict");
const { handoutScripts, settle } = require("./load.js");

const SPEC = { data: [{ type: "bar", y: [1, 2] }], layout: { width: 820, title: { text: "Weights of head 1" }, margin: { t: 90 } } };
const FIGURE = `<figure class="mha-figure" id="f1"><div class="mha-plot" role="img" aria-label="Weights of head 1"
  aria-describedby="f1-words"></div><p class="mha-figure-words" id="f1-words">In words: ...</p>
  <script type="application/json" class="mha-figure-data">${JSON.stringify(SPEC)}</script></figure>`;

// plotly.js as figures.js uses it, recording its calls; newPlot draws one SVG into the plot.
function fakePlotly() {
  const calls = [];
  return {
    calls,
    newPlot(plot, data, layout, config) {
      calls.push(["newPlot", data, layout, config]);
      plot.innerHTML = '<svg class="main-svg"></svg>';
      return Promise.resolve(plot);
    },
    relayout(plot, update) { calls.push(["relayout", update]); return Promise.resolve(plot); },
    react(plot, data, layout, config) { calls.push(["react", data, layout, config]); return Promise.resolve(plot); },
    downloadImage(plot, options) { calls.push(["downloadImage", options]); return Promise.resolve(); },
  };
}

test("a title wraps a few characters short of the room it has, tags not counted", () => {
  const { mhaFigures } = handoutScripts(["figures.js"]);
  assert.deepEqual(mhaFigures.wrapped("Weights of every head<br>at once", 12), ["Weights of", "every head", "at once"]);
  assert.deepEqual(mhaFigures.wrapped("<b>Bold</b> title", 10), ["<b>Bold</b> title"]);
});

test("the page draws a figure at its own width: no fixed width, autosize, the design left unchanged", () => {
  const { mhaFigures } = handoutScripts(["figures.js"]);
  const layout = mhaFigures.pageLayout(SPEC);
  assert.equal(layout.width, undefined);
  assert.equal(layout.autosize, true);
  assert.equal(SPEC.layout.width, 820);
});

test("a title is read as an object, copied deep", () => {
  const { mhaFigures } = handoutScripts(["figures.js"]);
  assert.deepEqual(mhaFigures.titleOf({ title: "A" }), { text: "A" });
  const layout = { title: { text: "B", pad: { t: 12 } } };
  const title = mhaFigures.titleOf(layout);
  title.pad.t = 30;
  assert.equal(layout.title.pad.t, 12);
  assert.deepEqual(mhaFigures.titleOf({}), {});
});

test("each figure is drawn without the mode bar, its drawing hidden, its save buttons between plot and words", async () => {
  const Plotly = fakePlotly();
  const window = handoutScripts([{ widget: "label.js" }, { widget: "save.js" }, "figures.js"],
                                { body: FIGURE, window: { Plotly } });
  await settle();
  const document = window.document;
  const [, data, layout, config] = Plotly.calls[0];
  assert.deepEqual(data, SPEC.data);
  assert.equal(layout.width, undefined);
  assert.deepEqual(config, { responsive: true, displayModeBar: false, displaylogo: false });
  const plot = document.querySelector(".mha-plot");
  assert.equal(plot.dataset.mhaDrawn, "1");
  assert.equal(plot.querySelector("svg").getAttribute("aria-hidden"), "true");
  const row = plot.nextElementSibling;
  assert.equal(row.className, "mha-save");
  assert.equal(row.nextElementSibling.id, "f1-words");
  row.querySelector("[data-format='png']").click();
  await settle();
  assert.deepEqual(Plotly.calls.at(-1)[1].filename, "weights-of-head-1");
});

test("a fit records the width it fitted for; a resize of 20 px or more fits again, a smaller one does not", async () => {
  const Plotly = fakePlotly();
  const window = handoutScripts([{ widget: "label.js" }, { widget: "save.js" }, "figures.js"],
                                { body: FIGURE, window: { Plotly } });
  const plot = window.document.querySelector(".mha-plot");
  let width = 820;
  Object.defineProperty(plot, "clientWidth", { get: () => width });
  await settle();
  assert.equal(plot.dataset.mhaFitted, "820");
  const resized = async (to) => {
    width = to;
    for (const [type, fn] of window.listeners) if (type === "resize") fn();
    await new Promise((resolve) => setTimeout(resolve, 200));  // figures.js waits 150 ms after a resize
    await settle();
  };
  await resized(390);
  assert.equal(plot.dataset.mhaFitted, "390");
  const relayouts = Plotly.calls.filter((c) => c[0] === "relayout").length;
  await resized(400);
  assert.equal(plot.dataset.mhaFitted, "390");
  assert.equal(Plotly.calls.filter((c) => c[0] === "relayout").length, relayouts, "no second fit for 10 px");
});

test("without plotly.js the page keeps its words and draws nothing", async () => {
  const window = handoutScripts([{ widget: "label.js" }, { widget: "save.js" }, "figures.js"], { body: FIGURE });
  await settle();
  assert.equal(window.document.querySelector(".mha-save"), null);
  assert.equal(window.document.querySelector(".mha-plot").dataset.mhaDrawn, undefined);
});

test("a figure plotly cannot draw says so above its words", async () => {
  const Plotly = fakePlotly();
  Plotly.newPlot = () => { throw new Error("no WebGL"); };
  const window = handoutScripts([{ widget: "label.js" }, { widget: "save.js" }, "figures.js"],
                                { body: FIGURE, window: { Plotly } });
  await settle();
  assert.match(window.document.querySelector("figure p").textContent, /could not be drawn here; its description below/);
});
