// label.js: every plot an image named by its title, described by its words, its drawing hidden.
const test = require("node:test");
const assert = require("node:assert/strict");
const { page } = require("./load.js");
const mhaLabel = require("../../mha_classroom/widgets/js/label.js");

function plotPage() {
  return page(`<div class="js-plotly-plot"><div class="svg-container"><svg class="main-svg"></svg><svg class="main-svg">
    </svg></div></div><p id="words">Head 1 weights 0.5.</p><svg id="js-plotly-tester"></svg>`);
}

test("asImage makes the plot one image named and described by its words", () => {
  const { document } = plotPage();
  const plot = document.querySelector(".js-plotly-plot");
  mhaLabel.asImage(plot, "Weights of head 1", "words");
  assert.equal(plot.getAttribute("role"), "img");
  assert.equal(plot.getAttribute("aria-label"), "Weights of head 1");
  assert.equal(plot.getAttribute("aria-describedby"), "words");
});

test("asImage hides every SVG of the drawing and plotly's text ruler from a screen reader", () => {
  const { document } = plotPage();
  const plot = document.querySelector(".js-plotly-plot");
  mhaLabel.asImage(plot, "Weights", "words");
  const hidden = [...document.querySelectorAll("svg")].map((svg) => svg.getAttribute("aria-hidden"));
  assert.deepEqual(hidden, ["true", "true", "true"]);
});

test("asImage without a description names the plot and describes it by nothing", () => {
  const { document } = plotPage();
  const plot = document.querySelector(".js-plotly-plot");
  mhaLabel.asImage(plot, "Weights", null);
  assert.equal(plot.getAttribute("aria-label"), "Weights");
  assert.equal(plot.hasAttribute("aria-describedby"), false);
});

test("set writes an attribute only when its value changes", () => {
  const { document } = plotPage();
  const plot = document.querySelector(".js-plotly-plot");
  const writes = [];
  const setAttribute = plot.setAttribute.bind(plot);
  plot.setAttribute = (name, value) => { writes.push([name, value]); setAttribute(name, value); };
  mhaLabel.set(plot, "aria-label", "A");
  mhaLabel.set(plot, "aria-label", "A");
  mhaLabel.set(plot, "aria-label", "B");
  assert.deepEqual(writes, [["aria-label", "A"], ["aria-label", "B"]]);
});

// A box of the given scroll and client sizes.
function box(document, scroll, client) {
  const el = document.createElement("div");
  Object.defineProperties(el, {
    scrollWidth: { value: scroll[0] }, scrollHeight: { value: scroll[1] },
    clientWidth: { value: client[0] }, clientHeight: { value: client[1] },
  });
  return el;
}

test("fitScroll hides a rounding overflow of 2 px and gives the plot no Tab stop", () => {
  const { document } = plotPage();
  const plot = box(document, [822, 402], [820, 400]);
  plot.setAttribute("tabindex", "0");
  assert.equal(mhaLabel.fitScroll(plot), false);
  assert.equal(plot.style.overflow, "hidden");
  assert.equal(plot.hasAttribute("tabindex"), false);
});

test("fitScroll keeps a real overflow scrollable and reachable by the keyboard", () => {
  const { document } = plotPage();
  const plot = box(document, [820, 400], [390, 400]);
  assert.equal(mhaLabel.fitScroll(plot), true);
  assert.equal(plot.style.overflow, "");
  assert.equal(plot.getAttribute("tabindex"), "0");
});
