// live_figure.js: a LiveFigure's view draws what its channel holds, redraws on each change, and can be saved.
import test from "node:test";
import assert from "node:assert/strict";
import load from "./load.js";

const view = await load.widgetModule(["plotly_shared.js", "channel.js", "save.js", "live_figure.js"]);

test("a 1-D numeric array sent as a buffer becomes a typed array of its dtype", () => {
  const values = new Float64Array([0.25, 0.75]);
  const wire = { buffer: new DataView(values.buffer), dtype: "float64", shape: [2] };
  const decoded = view.decode({ type: "bar", y: wire, x: ["a", "b"] });
  assert.ok(decoded.y instanceof Float64Array);
  assert.deepEqual([...decoded.y], [0.25, 0.75]);
  assert.deepEqual(decoded.x, ["a", "b"]);
});

test("a buffer that is a view into a larger one keeps only its own bytes", () => {
  const whole = new Int32Array([7, 8, 9, 10]);
  const wire = { buffer: new DataView(whole.buffer, 4, 8), dtype: "int32", shape: [2] };
  assert.deepEqual([...view.decode(wire)], [8, 9]);
});

test("a value left unset ('_undefined_') is dropped, everything else kept, nested", () => {
  assert.deepEqual(view.decode([{ a: "_undefined_", b: { c: 1, d: "_undefined_" }, e: [null, "x"] }]),
                   [{ b: { c: 1 }, e: [null, "x"] }]);
  assert.equal(view.decode(3), 3);
  assert.equal(view.decode(null), null);
});

test("an object with an unknown dtype is an ordinary object", () => {
  assert.deepEqual(view.decode({ buffer: 1, dtype: "complex128" }), { buffer: 1, dtype: "complex128" });
});

test("every live figure is drawn without plotly's logo, at the builder's size", () => {
  assert.deepEqual(view.CONFIG, { displaylogo: false, responsive: false });
});

// A channel holding a figure, a model pointing to it, and plotly.js that records its calls.
function fixture() {
  const handlers = {};
  const channel = {
    state: { _widget_data: [{ type: "bar", y: [1, 2] }], _widget_layout: { title: { text: "Heads" } } },
    get(key) { return this.state[key]; },
    on: (name, fn) => { handlers[name] = fn; },
    off: (name) => { delete handlers[name]; },
  };
  const model = { get: () => "IPY_MODEL_fig", widget_manager: { get_model: async () => channel } };
  const calls = [];
  const Plotly = {
    react: (plot, data, layout, config) => { calls.push(["react", data, layout, config]); return Promise.resolve(); },
    purge: () => { calls.push(["purge"]); },
    downloadImage: (plot, options) => { calls.push(["download", options]); return Promise.resolve(); },
  };
  globalThis.__mhaPlotly = { promise: Promise.resolve(Plotly), settle: {}, loading: true };
  return { channel, model, calls, handlers };
}

test("the view draws the channel's figure, redraws on a change, saves it, and lets go when closed", async () => {
  const dom = load.page('<div id="el"></div>');
  const restore = load.useGlobals(dom);
  try {
    const { channel, model, calls, handlers } = fixture();
    const el = dom.document.getElementById("el");
    const cleanup = await view.default.render({ model, el });
    await load.settle();
    assert.deepEqual(calls[0], ["react", [{ type: "bar", y: [1, 2] }], { title: { text: "Heads" } }, view.CONFIG]);
    assert.deepEqual([...el.children].map((c) => c.className), ["mha-live-figure", "mha-save"]);
    channel.state = { _widget_data: [{ type: "bar", y: [3] }], _widget_layout: {} };
    handlers.change();
    await load.settle();
    assert.deepEqual(calls[1].slice(0, 2), ["react", [{ type: "bar", y: [3] }]]);
    el.querySelector("[data-format='svg']").click();
    await load.settle();
    assert.equal(calls[2][0], "download");
    assert.equal(calls[2][1].format, "svg");
    cleanup();
    await load.settle();
    assert.deepEqual(Object.keys(handlers), []);
    assert.deepEqual(calls[3], ["purge"]);
  } finally {
    restore();
    delete globalThis.__mhaPlotly;
  }
});

test("changes that come while a draw waits are merged into one draw of the newest figure", async () => {
  const dom = load.page('<div id="el"></div>');
  const restore = load.useGlobals(dom);
  try {
    const { channel, model, calls, handlers } = fixture();
    await view.default.render({ model, el: dom.document.getElementById("el") });
    await load.settle();
    channel.state = { _widget_data: [{ y: [5] }], _widget_layout: {} };
    handlers.change();
    handlers.change();
    handlers.change();
    await load.settle();
    assert.deepEqual(calls.filter((c) => c[0] === "react").map((c) => c[1]), [[{ type: "bar", y: [1, 2] }], [{ y: [5] }]]);
  } finally {
    restore();
    delete globalThis.__mhaPlotly;
  }
});

test("a figure whose channel never comes says it could not be drawn", async () => {
  const dom = load.page('<div id="el"></div>');
  const restore = load.useGlobals(dom);
  try {
    const el = dom.document.getElementById("el");
    await view.default.render({ model: { get: () => "" }, el });
    assert.match(el.textContent, /This figure could not be drawn: Error: this widget has no _channel/);
  } finally {
    restore();
  }
});
