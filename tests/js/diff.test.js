// diff.js: the page's inverse of the course's one figure diff (mha_classroom/widgets/_plain.py figure_diff), on the
// cases Python checks too (tests/diff_cases.json, tests/test_widgets_plain.py).
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const mhaDiff = require("../../mha_classroom/widgets/js/diff.js");  // loads "diff.js"

const { cases } = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "diff_cases.json"), "utf8"));

test("every shared case: old changed by its diff is new, and old is left as it was", () => {
  for (const c of cases) {
    const before = JSON.stringify(c.old);
    assert.deepEqual(mhaDiff.applyDiff(c.old, c.diff), c.diff ? c.new : c.old, c.name);
    assert.equal(JSON.stringify(c.old), before, c.name);
  }
});

test("what the diff leaves alone is shared, what it sets is a copy", () => {
  const old = { data: [{ y: [1] }], layout: { xaxis: { type: "log" }, title: { text: "a" } } };
  const diff = { u: { layout: { u: { title: { s: { text: "b" } } } } }, s: { extra: [1] } };
  const out = mhaDiff.applyDiff(old, diff);
  assert.equal(out.layout.xaxis, old.layout.xaxis);
  assert.equal(out.data, old.data);
  out.extra.push(2);
  assert.deepEqual(diff.s.extra, [1]);
});

test("no diff gives the figure itself", () => {
  const figure = { data: [] };
  assert.equal(mhaDiff.applyDiff(figure, null), figure);
});
