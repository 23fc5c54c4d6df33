// save.js: two buttons under every figure that save it, as drawn, as PNG or SVG (plotly.js's downloadImage).
const test = require("node:test");
const assert = require("node:assert/strict");
const { page, settle } = require("./load.js");
const mhaSave = require("../../mha_classroom/widgets/js/save.js");

test("a file name keeps the figure's words, in lower case, joined by dashes", () => {
  assert.equal(mhaSave.fileName("Weights of `key` — head 1 of 4"), "weights-of-key-head-1-of-4");
  assert.equal(mhaSave.fileName("Scores / √d_head"), "scores-d-head");
  assert.equal(mhaSave.fileName("Café attention"), "cafe-attention");
});

test("a file name is at most 60 characters and never ends in a dash", () => {
  const name = mhaSave.fileName("a".repeat(59) + " b c d");
  assert.equal(name, "a".repeat(59));
  assert.ok(mhaSave.fileName("word ".repeat(30)).length <= 60);
});

test("a figure without a name is saved as figure", () => {
  assert.equal(mhaSave.fileName(""), "figure");
  assert.equal(mhaSave.fileName(null), "figure");
  assert.equal(mhaSave.fileName("→ ←"), "figure");
});

test("the title is read as plain text from a string or a title object", () => {
  assert.equal(mhaSave.titleText({ title: "Head 1<br>weights" }), "Head 1 weights");
  assert.equal(mhaSave.titleText({ title: { text: "<b>KV cache</b> per token" } }), "KV cache per token");
  assert.equal(mhaSave.titleText({}), "");
  assert.equal(mhaSave.titleText(undefined), "");
});

test("PNG is saved at twice the drawn size, SVG at the drawn size, both named after the figure", () => {
  assert.deepEqual(mhaSave.imageOptions("png", { width: 820.4, height: 399.6 }, "Head grid"),
                   { format: "png", filename: "head-grid", width: 820, height: 400, scale: 2 });
  assert.deepEqual(mhaSave.imageOptions("svg", { width: 390, height: 700 }, "Head grid"),
                   { format: "svg", filename: "head-grid", width: 390, height: 700, scale: 1 });
});

test("a figure of no size leaves the size to plotly", () => {
  assert.deepEqual(mhaSave.imageOptions("svg", { width: 0, height: 0 }, "x"), { format: "svg", filename: "x", scale: 1 });
});

test("a format other than PNG or SVG is refused, naming the valid ones", () => {
  assert.throws(() => mhaSave.imageOptions("jpeg", null, "x"), /format="jpeg" cannot be saved; valid formats are png, svg/);
});

test("the drawn size is plotly's own record of its layout, else the element's box", () => {
  assert.deepEqual(mhaSave.drawnSize({ _fullLayout: { width: 700, height: 450 }, clientWidth: 1, clientHeight: 1 }),
                   { width: 700, height: 450 });
  assert.deepEqual(mhaSave.drawnSize({ clientWidth: 390, clientHeight: 300 }), { width: 390, height: 300 });
});

// A figure as the handouts write it: the plot, then its words.
function figure() {
  const dom = page('<figure><div class="mha-plot" role="img" aria-label="Weights of head 2"></div><p class="words">In words</p></figure>');
  const box = dom.document.querySelector("figure"), plot = box.querySelector(".mha-plot");
  plot._fullLayout = { width: 820, height: 400 };
  return { dom, box, plot };
}

function fakePlotly(fail) {
  const calls = [];
  return { calls, downloadImage: (gd, options) => { calls.push([gd, options]); return fail ? Promise.reject(new Error(fail)) : Promise.resolve("ok"); } };
}

test("two buttons, PNG then SVG, in a named group between the plot and its words", () => {
  const { box, plot } = figure();
  const row = mhaSave.addButtons(box, plot, () => null, plot.nextSibling);
  assert.equal(row.getAttribute("role"), "group");
  assert.equal(row.getAttribute("aria-label"), "Save this figure");
  assert.deepEqual([...row.querySelectorAll("button")].map((b) => [b.getAttribute("type"), b.textContent, b.dataset.format]),
                   [["button", "Save as PNG", "png"], ["button", "Save as SVG", "svg"]]);
  assert.equal(plot.nextSibling, row);
  assert.equal(row.nextSibling.className, "words");
  assert.equal(plot.querySelector("button"), null, "no button inside the image");
});

test("a second call adds no second row", () => {
  const { box, plot } = figure();
  const first = mhaSave.addButtons(box, plot, () => null);
  assert.equal(mhaSave.addButtons(box, plot, () => null), first);
  assert.equal(box.querySelectorAll(".mha-save").length, 1);
});

test("a click hands the drawn figure to plotly's downloadImage, named by the image's name", async () => {
  const { box, plot } = figure();
  const plotly = fakePlotly();
  const row = mhaSave.addButtons(box, plot, () => Promise.resolve(plotly));
  row.querySelector("[data-format='svg']").click();
  row.querySelector("[data-format='png']").click();
  await settle();
  assert.deepEqual(plotly.calls.map(([gd, options]) => [gd === plot, options]), [
    [true, { format: "svg", filename: "weights-of-head-2", width: 820, height: 400, scale: 1 }],
    [true, { format: "png", filename: "weights-of-head-2", width: 820, height: 400, scale: 2 }],
  ]);
});

test("a plot with no name is saved under its title", () => {
  const plotly = fakePlotly();
  const plot = { getAttribute: () => null, layout: { title: { text: "Cache size" } }, _fullLayout: { width: 10, height: 5 } };
  mhaSave.save(plotly, plot, "png");
  assert.equal(plotly.calls[0][1].filename, "cache-size");
});

test("a save that fails is written on the row, not thrown into the page", async () => {
  const { box, plot } = figure();
  const row = mhaSave.addButtons(box, plot, () => fakePlotly("no canvas"));
  row.querySelector("[data-format='png']").click();
  await settle();
  assert.equal(row.getAttribute("data-mha-error"), "Error: no canvas");
});

// A plot as plotly draws it: two stacked SVG layers, a gradient referred to by the page's address.
function drawing() {
  const dom = page(`<div class="js-plotly-plot"><div class="svg-container"><svg class="main-svg" width="400" height="300">
    <defs><linearGradient id="g1"></linearGradient></defs><rect style="fill: url(&quot;http://127.0.0.1:8888/lab/tree/03.ipynb#g1&quot;)"></rect>
    <image href="data:image/png;base64,AAAA"></image></svg><svg class="main-svg" width="400" height="300"><text>Heads</text></svg></div></div>`);
  const plot = dom.document.querySelector(".js-plotly-plot");
  plot._fullLayout = { width: 400, height: 300 };
  plot.layout = { title: { text: "Head grid" } };
  return { dom, plot };
}

test("a drawing becomes one SVG file of its size, both layers in order, its references local", () => {
  const { plot } = drawing();
  const svg = mhaSave.svgText(plot);
  assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg" xmlns:xlink="http:\/\/www.w3.org\/1999\/xlink" width="400" height="300" viewBox="0 0 400 300">/);
  assert.equal((svg.match(/<svg class="main-svg"/g) || []).length, 2);
  assert.ok(svg.indexOf("linearGradient") < svg.indexOf("Heads"));
  assert.ok(svg.includes("url(&quot;#g1&quot;)") && !svg.includes("127.0.0.1"), svg);
  assert.ok(svg.endsWith("</svg></svg>"));
});

test("without plotly.js the SVG is saved from the drawing, under the figure's name", async () => {
  const { dom, plot } = drawing();
  const links = [];
  const view = { Blob, URL: { createObjectURL: (blob) => { links.push(blob); return "blob:x"; }, revokeObjectURL: () => {} },
                 setTimeout: () => {} };
  Object.defineProperty(dom.document, "defaultView", { value: view });
  const clicked = [];
  const createElement = dom.document.createElement.bind(dom.document);
  dom.document.createElement = (tag) => {
    const el = createElement(tag);
    if (tag === "a") el.click = () => clicked.push([el.getAttribute("download"), el.getAttribute("href")]);
    return el;
  };
  assert.equal(await mhaSave.save(null, plot, "svg"), "head-grid.svg");
  assert.deepEqual(clicked, [["head-grid.svg", "blob:x"]]);
  assert.equal(links[0].type, "image/svg+xml");
  assert.match(await links[0].text(), /^<svg xmlns=/);
  assert.equal(dom.document.querySelector("a"), null, "the link is let go");
});

test("a figure not drawn yet is not saved from its drawing", async () => {
  const { plot } = drawing();
  plot._fullLayout = null;
  await assert.rejects(mhaSave.saveDrawn(plot, "png"), /the figure is not drawn yet/);
});
