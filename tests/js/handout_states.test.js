// states.js: a handout's controls switch between the settings recorded when the page was built.
const test = require("node:test");
const assert = require("node:assert/strict");
const { handoutScripts } = require("./load.js");

const { mhaStates } = handoutScripts([{ widget: "diff.js" }, "states.js"]);

test("a diff sets keys, updates nested objects and deletes keys", () => {
  const figure = { data: [{ y: [1] }], layout: { title: { text: "2 heads" }, height: 400, width: 820 } };
  const diff = { s: { data: [{ y: [2] }] }, u: { layout: { s: { height: 500 }, u: { title: { s: { text: "4 heads" } } }, d: ["width"] } } };
  assert.deepEqual(mhaStates.applyDiff(figure, diff),
                   { data: [{ y: [2] }], layout: { title: { text: "4 heads" }, height: 500 } });
});

test("no diff leaves the figure as it is", () => {
  const figure = { data: [] };
  assert.equal(mhaStates.applyDiff(figure, null), figure);
  assert.deepEqual(mhaStates.applyDiff(figure, {}), { data: [] });
});

test("a value a diff sets is a copy: changing the figure later leaves the recorded diff alone", () => {
  const diff = { s: { data: [{ y: [2] }] } };
  const figure = mhaStates.applyDiff({}, diff);
  figure.data[0].y.push(3);
  assert.deepEqual(diff.s.data, [{ y: [2] }]);
});

test("each setting's figure is its chain of diffs from the first, built once and handed out as a copy", () => {
  const states = {
    controls: [{ attr: "n_heads", values: [1, 2, 4], labels: ["1", "2", "4"] }],
    states: [{ v: [0], w: "one head", n: "1 head", t: {} },
             { v: [1], f: { u: { layout: { u: { title: { s: { text: "2 heads" } } } } } }, w: "", n: "", t: {} },
             { v: [2], r: 1, f: { s: { data: [{ y: [4] }] } }, w: "", n: "", t: {} }],
  };
  const first = { data: [{ y: [1] }], layout: { title: { text: "1 head" } } };
  const body = `<div class="mha-states" id="g" data-figure="f">
      <script type="application/json" class="mha-states-data">${JSON.stringify(states)}</script>
      <input type="radio" name="c0" value="0" data-control="0" checked><input type="radio" name="c0" value="1" data-control="0">
      <input type="radio" name="c0" value="2" data-control="0"></div>
    <figure id="f"><script type="application/json" class="mha-figure-data">${JSON.stringify(first)}</script>
      <div class="mha-plot" data-mha-drawn="1"></div><p class="mha-figure-words-text"></p></figure>`;
  const window = handoutScripts([{ widget: "diff.js" }, "states.js"], { body });
  const box = window.document.getElementById("g");
  assert.equal(typeof box.mhaFigureOf, "function");
  assert.deepEqual(box.mhaFigureOf(2), { data: [{ y: [4] }], layout: { title: { text: "2 heads" } } });
  const copy = box.mhaFigureOf(1);
  copy.layout.title.text = "changed";
  assert.deepEqual(box.mhaFigureOf(1), { data: [{ y: [1] }], layout: { title: { text: "2 heads" } } });
  assert.deepEqual(box.mhaFigureOf(0), first);
});
