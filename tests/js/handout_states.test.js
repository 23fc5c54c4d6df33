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
