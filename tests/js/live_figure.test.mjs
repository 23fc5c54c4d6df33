// live_figure.js: a LiveFigure's view draws the figure its channel holds, applies each change the kernel sends
// (one diff, diff.js), asks for the whole figure when it missed one, and can be saved.
import test from "node:test";
import assert from "node:assert/strict";
import load from "./load.js";

const view = await load.widgetModule(["plotly_shared.js", "channel.js", "diff.js", "save.js", "live_figure.js"]);

test("every live figure is drawn without plotly's logo, at the builder's size", () => {
  assert.deepEqual(view.CONFIG, { displaylogo: false, responsive: false });
});

test("a message applies the next diff, takes a whole figure, and says when one was missed", () => {
  const first = { data: [{ type: "bar", y: [1] }], layout: {} };
  const diff = { u: { data: { u: { 0: { s: { y: [2] } } } } } };
  assert.deepEqual(view.receive(first, 0, { n: 1, diff }), [{ data: [{ type: "bar", y: [2] }], layout: {} }, 1, false]);
  assert.deepEqual(view.receive(first, 0, { n: 3, diff }), [first, 0, true]);  // 1 and 2 missed: ask
  assert.deepEqual(view.receive(first, 4, { n: 3, diff }), [first, 4, false]);  // already shown
  const whole = { data: [], layout: { title: { text: "now" } } };
  assert.deepEqual(view.receive(first, 1, { n: 5, figure: whole }), [whole, 5, false]);
  assert.deepEqual(view.receive(first, 2, { other: 1 }), [first, 2, false]);
});

test("words reach the keyboard helper with the change they came with, or alone for the drawing already shown", () => {
  const words = { name: "H = 4", description: "four heads" };
  const diff = { s: { layout: {} } };
  assert.equal(view.wordsFor({ n: 2, diff, words }, 2, true), true);  // with a change applied
  assert.equal(view.wordsFor({ n: 2, words }, 2, false), true);  // alone: the last frame was drawn without them
  assert.equal(view.wordsFor({ n: 1, words }, 2, false), false);  // for a drawing this view no longer shows
  assert.equal(view.wordsFor({ n: 3, diff, words }, 2, false), false);  // with a change not applied
  assert.equal(view.wordsFor({ n: 2, diff }, 2, true), false);  // no words
});

// A channel holding a figure, a model pointing to it, and plotly.js that records its calls.
function fixture() {
  const handlers = {}, sent = [];
  const channel = {
    state: { figure: { data: [{ type: "bar", y: [1, 2] }], layout: { title: { text: "Heads" } } } },
    get(key) { return this.state[key]; },
    on: (name, fn) => { handlers[name] = fn; },
    off: (name) => { delete handlers[name]; },
    send: (content) => { sent.push(content); },
  };
  const model = { get: () => "IPY_MODEL_fig", widget_manager: { get_model: async () => channel } };
  const calls = [];
  const Plotly = {
    react: (plot, data, layout, config) => { calls.push(["react", data, layout, config]); return Promise.resolve(); },
    purge: () => { calls.push(["purge"]); },
    downloadImage: (plot, options) => { calls.push(["download", options]); return Promise.resolve(); },
  };
  globalThis.__mhaPlotly = { promise: Promise.resolve(Plotly), settle: {}, loading: true };
  return { channel, model, calls, handlers, sent };
}

test("the view draws the channel's figure, redraws on a diff, saves it, and lets go when closed", async () => {
  const dom = load.page('<div id="el"></div>');
  const restore = load.useGlobals(dom);
  try {
    const { model, calls, handlers, sent } = fixture();
    const el = dom.document.getElementById("el");
    const cleanup = await view.default.render({ model, el });
    await load.settle();
    assert.deepEqual(calls[0], ["react", [{ type: "bar", y: [1, 2] }], { title: { text: "Heads" } }, view.CONFIG]);
    assert.deepEqual(sent, [{ want: 0 }]);  // any change made before it listened
    assert.deepEqual([...el.children].map((c) => c.className), ["mha-live-figure", "mha-save"]);
    handlers["msg:custom"]({ n: 1, diff: { s: { data: [{ type: "bar", y: [3] }] }, u: { layout: { d: ["title"] } } } });
    await load.settle();
    assert.deepEqual(calls[1].slice(0, 3), ["react", [{ type: "bar", y: [3] }], {}]);
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
    const { model, calls, handlers } = fixture();
    await view.default.render({ model, el: dom.document.getElementById("el") });
    await load.settle();
    for (const n of [1, 2, 3]) handlers["msg:custom"]({ n, diff: { u: { data: { u: { 0: { s: { y: [n] } } } } } } });
    await load.settle();
    assert.deepEqual(calls.filter((c) => c[0] === "react").map((c) => c[1]),
                     [[{ type: "bar", y: [1, 2] }], [{ type: "bar", y: [3] }]]);
  } finally {
    restore();
    delete globalThis.__mhaPlotly;
  }
});

test("a view that missed a change asks for the whole figure and draws it", async () => {
  const dom = load.page('<div id="el"></div>');
  const restore = load.useGlobals(dom);
  try {
    const { model, calls, handlers, sent } = fixture();
    await view.default.render({ model, el: dom.document.getElementById("el") });
    await load.settle();
    handlers["msg:custom"]({ n: 2, diff: { s: { layout: {} } } });  // change 1 never came
    assert.deepEqual(sent, [{ want: 0 }, { want: 0 }]);
    handlers["msg:custom"]({ n: 2, figure: { data: [{ type: "bar", y: [9] }], layout: {} } });
    handlers["msg:custom"]({ n: 3, diff: { u: { layout: { s: { height: 300 } } } } });
    await load.settle();
    assert.deepEqual(calls.at(-1).slice(0, 3), ["react", [{ type: "bar", y: [9] }], { height: 300 }]);
  } finally {
    restore();
    delete globalThis.__mhaPlotly;
  }
});

test("what plotly.js writes into the figure it draws never reaches the figure the view keeps", async () => {
  const dom = load.page('<div id="el"></div>');
  const restore = load.useGlobals(dom);
  try {
    const { model, calls, handlers } = fixture();
    await view.default.render({ model, el: dom.document.getElementById("el") });
    await load.settle();
    calls[0][2].xaxis = { range: [0, 1], autorange: false };  // as plotly.js fills in an autorange
    handlers["msg:custom"]({ n: 1, diff: { u: { layout: { s: { height: 300 } } } } });
    await load.settle();
    assert.deepEqual(calls[1][2], { title: { text: "Heads" }, height: 300 });
  } finally {
    restore();
    delete globalThis.__mhaPlotly;
  }
});

test("the words that come with a change go to the group's helper as an event from the figure", async () => {
  const dom = load.page('<div id="el"></div>');
  const restore = load.useGlobals(dom);
  try {
    const { model, handlers } = fixture();
    const el = dom.document.getElementById("el"), heard = [];
    dom.document.body.addEventListener(view.WORDS_EVENT, (event) => heard.push([event.target, event.detail]));
    await view.default.render({ model, el });
    await load.settle();
    const words = { name: "Heads", description: "Two heads." };
    handlers["msg:custom"]({ n: 1, diff: { u: { layout: { s: { height: 300 } } } }, words });
    handlers["msg:custom"]({ n: 1, diff: { u: { layout: { s: { height: 300 } } } }, words });  // already shown: no event
    assert.deepEqual(heard, [[el, words]]);
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

test("a held setting is found by its controls' values, numbers within 1e-9", () => {
  const held = { states: [{ values: [0, 0.5], figure: "a" }, { values: [1, 0.5], figure: "b" }] };
  assert.equal(view.heldState(held, [1, 0.5 + 1e-12]).figure, "b");
  assert.equal(view.heldState(held, [2, 0.5]), undefined);  // not held: the kernel's change will come
  assert.equal(view.heldState(null, [0, 0.5]), undefined);
  assert.equal(view.sameSetting([true, "x"], [true, "x"]), true);
  assert.equal(view.sameSetting([true], [1]), false);  // a checkbox is not a number
  assert.equal(view.sameSetting([0], [0, 1]), false);
});

// A control model of ipywidgets' kind: get, set (with its change event), on, off.
function control(value) {
  const handlers = {};
  return {
    state: { index: value },
    get(key) { return this.state[key]; },
    set(key, v) { this.state[key] = v; (handlers["change:" + key] || []).forEach((fn) => fn()); },
    on: (name, fn) => { (handlers[name] = handlers[name] || []).push(fn); },
    off: (name, fn) => { handlers[name] = (handlers[name] || []).filter((f) => f !== fn); },
    handlers,
  };
}

test("a held control's move switches the figure and its words in the page, and a later diff applies to it", async () => {
  const dom = load.page('<div id="el"></div>');
  const restore = load.useGlobals(dom);
  try {
    const { model, channel, calls, handlers, sent } = fixture();
    const heads = control(0);
    channel.state.held = {
      controls: [{ model: "IPY_MODEL_heads", trait: "index" }],
      states: [0, 1, 2].map((i) => ({ values: [i], figure: i === 0 ? channel.state.figure : { data: [{ type: "bar", y: [i] }], layout: {} },
                                      words: { name: `H ${i}`, description: `${i} heads` } })),
    };
    model.widget_manager.get_model = async (id) => (id === "heads" ? heads : channel);
    const el = dom.document.getElementById("el"), heard = [];
    dom.document.body.addEventListener(view.WORDS_EVENT, (event) => heard.push(event.detail.name));
    const cleanup = await view.default.render({ model, el });
    await load.settle();
    heads.set("index", 2);
    await load.settle();
    assert.deepEqual(calls.at(-1).slice(0, 3), ["react", [{ type: "bar", y: [2] }], {}]);
    assert.deepEqual(heard, ["H 2"]);
    assert.deepEqual(sent, [{ want: 0 }]);  // the page asked the kernel nothing for the move
    handlers["msg:custom"]({ n: 1, diff: { u: { layout: { s: { height: 300 } } } } });
    await load.settle();
    assert.deepEqual(calls.at(-1).slice(0, 3), ["react", [{ type: "bar", y: [2] }], { height: 300 }]);
    assert.deepEqual(channel.state.held.states[2].figure.layout, {});  // the held figure itself is kept as sent
    heads.set("index", 7);  // a setting the page does not hold: the figure stays until the kernel's change
    await load.settle();
    assert.deepEqual(calls.at(-1).slice(0, 3), ["react", [{ type: "bar", y: [2] }], { height: 300 }]);
    cleanup();
    assert.deepEqual(heads.handlers["change:index"], []);  // let go when closed
  } finally {
    restore();
    delete globalThis.__mhaPlotly;
  }
});

test("a view drawn after the page switched by itself shows that setting; one drawn at the start draws once", async () => {
  const dom = load.page('<div id="el"></div><div id="el2"></div>');
  const restore = load.useGlobals(dom);
  try {
    const { model, channel, calls } = fixture();
    const heads = control(0);
    channel.state.held = {
      controls: [{ model: "IPY_MODEL_heads", trait: "index" }],
      states: [{ values: [0], figure: channel.state.figure, words: { name: "H 0", description: "" } },
               { values: [1], figure: { data: [{ type: "bar", y: [5] }], layout: {} }, words: { name: "H 1", description: "" } }],
    };
    model.widget_manager.get_model = async (id) => (id === "heads" ? heads : channel);
    const heard = [];
    dom.document.body.addEventListener(view.WORDS_EVENT, (event) => heard.push(event.detail.name));
    await view.default.render({ model, el: dom.document.getElementById("el") });
    await load.settle();
    assert.equal(calls.filter((c) => c[0] === "react").length, 1);  // the start setting, drawn once
    assert.deepEqual(heard, []);
    heads.state.index = 1;  // moved while no view of this output was drawn
    await view.default.render({ model, el: dom.document.getElementById("el2") });
    await load.settle();
    assert.deepEqual(calls.at(-1).slice(0, 3), ["react", [{ type: "bar", y: [5] }], {}]);
    assert.deepEqual(heard, ["H 1"]);
  } finally {
    restore();
    delete globalThis.__mhaPlotly;
  }
});

test("a held control the page cannot find is said in the figure's place", async () => {
  const dom = load.page('<div id="el"></div>');
  const restore = load.useGlobals(dom);
  try {
    const { model, channel } = fixture();
    channel.state.held = { controls: [{ model: "not-a-reference", trait: "index" }], states: [] };
    const el = dom.document.getElementById("el");
    await view.default.render({ model, el });
    assert.match(el.textContent, /its control not-a-reference is not in the page/);
  } finally {
    restore();
    delete globalThis.__mhaPlotly;
  }
});
