// narrow_layout.js and narrow.js: a handout figure laid out again for a phone or a tablet (the parts that need no drawing).
const test = require("node:test");
const assert = require("node:assert/strict");
const { handoutScripts } = require("./load.js");

const window = handoutScripts(["narrow_layout.js", "narrow.js"]);
const L = window.mhaNarrowLayout, N = window.mhaNarrow;

test("words wrap at the given width, a tag not counted, an old <br> read as a space", () => {
  assert.equal(L.wrapWords("keys and values of every head", 10), "keys and<br>values of<br>every head");
  assert.equal(L.wrapWords("<b>bold</b> text here", 9), "<b>bold</b> text<br>here");
  assert.equal(L.wrapWords("one<br>two", 20), "one two");
});

test("plain text drops tags and reads <br> as a space; nothing is an empty text", () => {
  assert.equal(L.plain("Head 1<br>of <i>4</i>"), "Head 1 of 4");
  assert.equal(L.plain(null), "");
});

test("an axis id names its layout key", () => {
  assert.equal(L.axisKey("x"), "xaxis");
  assert.equal(L.axisKey("y3"), "yaxis3");
});

test("a number is kept only when it is a finite number", () => {
  assert.equal(L.num(3, 9), 3);
  assert.equal(L.num(NaN, 9), 9);
  assert.equal(L.num("3", 9), 9);
  assert.equal(L.clone(undefined), undefined);
});

test("the empty columns of a head grid cut it into its heads", () => {
  const z = [[1, 2, null, 3], [4, 5, null, 6]];
  assert.deepEqual(L.nullLines(z, true), [false, false, true, false]);
  assert.deepEqual(L.nullLines(z, false), [false, false]);
  assert.deepEqual(L.blocks([false, false, true, false]), [[0, 1], [3, 3]]);
  assert.deepEqual(L.blocks([true, true]), []);
  assert.equal(L.within([[0, 1], [3, 3]], 3.4), 1);
  assert.equal(L.within([[0, 1], [3, 3]], 2), -1);
});

test("two texts overlap only when they share more than 2 px both ways", () => {
  const at = (left, top, right, bottom) => ({ box: { left, top, right, bottom } });
  assert.equal(N.overlapping(at(0, 0, 10, 10), at(7, 7, 20, 20)), true);
  assert.equal(N.overlapping(at(0, 0, 10, 10), at(8, 0, 20, 10)), false);
  assert.equal(N.overlapping(at(0, 0, 10, 10), at(20, 0, 30, 10)), false);
});

test("a title is read and written whether it is a string or an object", () => {
  assert.equal(N.titleText({ title: "A" }), "A");
  assert.equal(N.titleText({ title: { text: "B" } }), "B");
  assert.equal(N.titleText(null), "");
  const axis = { title: "old" };
  N.setTitleText(axis, "new");
  assert.deepEqual(axis.title, { text: "new" });
});

test("margins shrink to 16 px on each side with nothing placed there, and the axes make their own room", () => {
  const spec = { layout: { margin: { l: 80, r: 80 }, xaxis2: {} } };
  assert.equal(N.tightMargins(spec), true);
  assert.deepEqual(spec.layout.margin, { l: 16, r: 16 });
  assert.equal(spec.layout.xaxis2.automargin, true);
  assert.deepEqual(spec.layout.yaxis, { automargin: true });
});

test("a note placed left of the plot keeps the left margin", () => {
  const spec = { layout: { margin: { l: 80, r: 80 }, annotations: [{ xref: "paper", yref: "paper", x: -0.1, y: 0.5 }] } };
  N.tightMargins(spec);
  assert.deepEqual(spec.layout.margin, { l: 80, r: 16 });
});

test("a figure is left as designed when plotly.js is missing", async () => {
  assert.equal(await window.mhaFitNarrow({}), undefined);
});
