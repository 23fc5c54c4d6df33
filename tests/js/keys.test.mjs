// keys.js: a control group's keys stay in the group, toggle buttons are radio groups, plots are described images.
import test from "node:test";
import assert from "node:assert/strict";
import load from "./load.js";

// The constants mha_classroom/widgets/_keys.py puts in front (tests/test_widgets_keys.py holds Python to them).
const VALUES = {
  GROUP: "mha-keys", HELPER: "mha-keys-helper",
  ROVING: { ArrowLeft: -1, ArrowUp: -1, ArrowRight: 1, ArrowDown: 1, Home: "first", End: "last" },
  PASSED: { set: ["Tab", "Escape", "Shift+Enter"] }, WORDS: "mha-figure-words", SR_ONLY: "width:1px;height:1px",
};
const keys = await load.widgetModule(["label.js", "channel.js", "keys.js"], VALUES);

const GROUP_HTML = `<div class="jp-OutputArea">
  <div class="mha-keys">
    <div class="widget-toggle-buttons"><label class="widget-label">Heads</label><div class="widget-toggle-button-row">
      <button class="widget-toggle-button">1</button><button class="widget-toggle-button mod-active">2</button>
      <button class="widget-toggle-button" disabled>3</button><button class="widget-toggle-button">4</button></div></div>
    <div class="widget-slider"><label class="widget-label">Tokens</label><div role="slider"></div></div>
    <div class="figure-view"><div class="mha-live-figure js-plotly-plot"><svg class="main-svg"></svg></div></div>
  </div>
  <div id="helper"></div>
</div>`;

function withPage(body, run) {
  const dom = load.page(body);
  const restore = load.useGlobals(dom);
  return Promise.resolve().then(() => run(dom.document)).finally(restore);
}

const key = (k, extra = {}) => ({ key: k, ctrlKey: false, altKey: false, metaKey: false, shiftKey: false, ...extra });

test("Tab, Escape, Shift+Enter and any key held with Ctrl, Alt or Meta reach JupyterLab", () => {
  for (const event of [key("Tab"), key("Escape"), key("Enter", { shiftKey: true }), key("s", { ctrlKey: true }),
                       key("ArrowLeft", { altKey: true }), key("c", { metaKey: true })]) {
    assert.equal(keys.passes(event), true, JSON.stringify(event));
  }
});

test("the keys a control uses stay in the group: arrows, letters, Enter, Space, Shift+arrow", () => {
  for (const event of [key("ArrowLeft"), key("m"), key("d"), key("Enter"), key(" "), key("ArrowUp", { shiftKey: true })]) {
    assert.equal(keys.passes(event), false, JSON.stringify(event));
  }
});

test("the arrow keys wrap round the enabled buttons; Home and End go to the first and the last", () => {
  assert.equal(keys.nextIndex(0, 3, -1), 2);
  assert.equal(keys.nextIndex(2, 3, 1), 0);
  assert.equal(keys.nextIndex(1, 3, 1), 2);
  assert.equal(keys.nextIndex(1, 3, "first"), 0);
  assert.equal(keys.nextIndex(0, 3, "last"), 2);
});

test("a row of toggle buttons becomes a radio group named by its label, one Tab stop on the chosen button", () =>
  withPage(GROUP_HTML, (document) => {
    keys.arrange(document.querySelector(".mha-keys"));
    const row = document.querySelector(".widget-toggle-button-row");
    assert.equal(row.getAttribute("role"), "radiogroup");
    assert.equal(row.getAttribute("aria-label"), "Heads");
    const buttons = [...row.querySelectorAll("button")].map((b) => [b.textContent, b.getAttribute("role"),
      b.getAttribute("aria-checked"), b.getAttribute("tabindex")]);
    assert.deepEqual(buttons, [["1", "radio", "false", "-1"], ["2", "radio", "true", "0"], ["3", "radio", "false", "-1"],
                               ["4", "radio", "false", "-1"]]);
  }));

test("with no button chosen the Tab stop is on the first enabled button", () =>
  withPage(GROUP_HTML.replace(" mod-active", "").replace('<button class="widget-toggle-button">1</button>',
                                                         '<button class="widget-toggle-button" disabled>1</button>'),
           (document) => {
             keys.arrange(document.querySelector(".mha-keys"));
             const stops = [...document.querySelectorAll("button[tabindex='0']")].map((b) => b.textContent);
             assert.deepEqual(stops, ["2"]);
           }));

test("a slider's handle is named by the slider's label", () =>
  withPage(GROUP_HTML, (document) => {
    keys.arrange(document.querySelector(".mha-keys"));
    assert.equal(document.querySelector("[role='slider']").getAttribute("aria-label"), "Tokens");
  }));

test("each plot with words is an image named and described by them; one without words is left alone", () =>
  withPage(GROUP_HTML + '<div class="mha-keys" id="second"><div class="js-plotly-plot"></div></div>', (document) => {
    keys.label(document.querySelector(".mha-keys"), [{ name: "Head grid", description: "..." }], ["w-0"]);
    keys.label(document.getElementById("second"), [], []);
    const [first, second] = document.querySelectorAll(".js-plotly-plot");
    assert.deepEqual([first.getAttribute("role"), first.getAttribute("aria-label"), first.getAttribute("aria-describedby")],
                     ["img", "Head grid", "w-0"]);
    assert.equal(second.hasAttribute("role"), false);
  }));

// A keydown on ``target`` inside the group: what the handler did with it.
function press(document, target, event) {
  const seen = { prevented: false, stopped: false };
  keys.onKeydown({ ...event, target, currentTarget: document.querySelector(".mha-keys"),
                   preventDefault: () => { seen.prevented = true; }, stopPropagation: () => { seen.stopped = true; } });
  return seen;
}

test("ArrowRight on the chosen button focuses and clicks the next enabled one, skipping a disabled one", () =>
  withPage(GROUP_HTML, (document) => {
    const [, two, , four] = document.querySelectorAll("button");
    const done = [];
    four.focus = () => done.push("focus 4");
    four.click = () => done.push("click 4");
    assert.deepEqual(press(document, two, key("ArrowRight")), { prevented: true, stopped: true });
    assert.deepEqual(done, ["focus 4", "click 4"]);
  }));

test("a letter on a control stays in the group without losing its own meaning; Tab goes on to JupyterLab", () =>
  withPage(GROUP_HTML, (document) => {
    const handle = document.querySelector("[role='slider']");
    assert.deepEqual(press(document, handle, key("m")), { prevented: false, stopped: true });
    assert.deepEqual(press(document, handle, key("Tab")), { prevented: false, stopped: false });
  }));

test("the helper writes its words into polite live regions and labels the group shown before it", () =>
  withPage(GROUP_HTML, async (document) => {
    const handlers = {};
    const channel = { words: [{ name: "Head grid", description: "Head 1 looks back." }],
                      get(k) { return this[k]; }, on: (n, fn) => { handlers[n] = fn; }, off: (n) => { delete handlers[n]; } };
    const model = { get: () => "IPY_MODEL_w", widget_manager: { get_model: async () => channel } };
    const el = document.getElementById("helper");
    const cleanup = await keys.default.render({ model, el });
    const region = el.querySelector(".mha-figure-words");
    assert.equal(region.getAttribute("aria-live"), "polite");
    assert.equal(region.getAttribute("aria-atomic"), "true");
    assert.equal(region.textContent, "Head grid. Head 1 looks back.");
    const group = document.querySelector(".mha-keys"), plot = group.querySelector(".js-plotly-plot");
    assert.equal(group.getAttribute("data-mha-keys"), "on");
    assert.equal(plot.getAttribute("aria-describedby"), region.querySelectorAll("span")[1].id);
    channel.words = [{ name: "Head grid", description: "Head 2 looks forward." }];
    handlers["change:words"]();
    assert.equal(region.textContent, "Head grid. Head 2 looks forward.");
    // Words that come with the figure's change (live_figure.js): from the figure's view, as an event.
    const view = group.querySelector(".figure-view");
    view.dispatchEvent(new document.defaultView.CustomEvent("mha-figure-words", { bubbles: true,
      detail: { name: "Head grid", description: "Head 3 looks at itself." } }));
    assert.equal(region.textContent, "Head grid. Head 3 looks at itself.");
    channel.words = [{ name: "Head grid", description: "Head 4 looks back." }];  // set in Python later: newest
    handlers["change:words"]();
    assert.equal(region.textContent, "Head grid. Head 4 looks back.");
    cleanup();
    assert.equal(group.hasAttribute("data-mha-keys"), false);
    assert.deepEqual(Object.keys(handlers), []);
  }));
