// plotly_shared.js and plotly_library.js: plotly.js evaluated once per page, after the module has returned.
import test from "node:test";
import assert from "node:assert/strict";
import load from "./load.js";

const lib = await load.widgetModule(["plotly_shared.js", "plotly_library.js"]);
const { shared } = (await import("node:module")).createRequire(import.meta.url)("../../mha_classroom/widgets/js/plotly_shared.js");

test("one promise per page, made by whichever module asks first", () => {
  const root = {};
  const one = shared(root);
  assert.equal(shared(root), one);
  assert.equal(one.loading, false);
  assert.ok(one.promise instanceof Promise);
});

test("plotly.js's UMD wrapper fills module.exports, which settles the page's promise", async () => {
  const one = shared({});
  const queued = [];
  lib.load("module.exports = {react: 'r', version: '7'};", one, (work) => queued.push(work));
  assert.equal(queued.length, 1, "the work is scheduled, not done while the module runs");
  queued[0]();
  assert.deepEqual(await one.promise, { react: "r", version: "7" });
});

test("a second widget's source is not evaluated again", () => {
  const one = shared({});
  const queued = [];
  lib.load("module.exports = 1;", one, (work) => queued.push(work));
  lib.load("module.exports = 2;", one, (work) => queued.push(work));
  assert.equal(queued.length, 1);
});

test("a source that throws rejects the promise and lets a later source try again", async () => {
  const one = shared({});
  lib.load("throw new Error('truncated plotly.js');", one, (work) => work());
  await assert.rejects(one.promise, /truncated plotly.js/);
  assert.equal(one.loading, false);
});

test("the widget waits for its source when it comes after the model", () => {
  const handlers = {};
  const model = { get: () => "", on: (name, fn) => { handlers[name] = fn; } };
  lib.default.initialize({ model });
  assert.deepEqual(Object.keys(handlers), ["change:source"]);
});
