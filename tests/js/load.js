// How the unit tests load the course's JavaScript as the page does (module docstring of tests/test_js.py).
//
// - shared scripts (label.js, save.js, channel.js, ...): require()d, they set module.exports under node;
// - an anywidget module: joined with the scripts it uses, as mha_classroom/widgets/_js.py joins them, and
//   imported from a data: URL, as anywidget imports a string;
// - a handout script: run with a window and a document of our own (linkedom's, a small DOM in node).
const fs = require("node:fs");
const path = require("node:path");
const { parseHTML } = require("linkedom");

const REPO = path.resolve(__dirname, "..", "..");
const WIDGET_JS = path.join(REPO, "mha_classroom", "widgets", "js");
const HANDOUT_JS = path.join(REPO, "tools", "handout_assets");

function widgetSource(name) {
  return fs.readFileSync(path.join(WIDGET_JS, name), "utf8");
}

// A page with ``body`` as its body: {window, document}. linkedom's Node lacks the position constants.
function page(body = "") {
  const dom = parseHTML(`<!doctype html><html><head></head><body>${body}</body></html>`);
  if (dom.window.Node && dom.window.Node.DOCUMENT_POSITION_FOLLOWING === undefined) {
    Object.assign(dom.window.Node, { DOCUMENT_POSITION_PRECEDING: 2, DOCUMENT_POSITION_FOLLOWING: 4 });
  }
  return dom;
}

// The DOM's names as globals, for a module that reads them (document, Element, Node, MutationObserver).
function useGlobals(dom) {
  const names = ["document", "Element", "Node", "MutationObserver"];
  const saved = names.map((n) => [n, Object.getOwnPropertyDescriptor(globalThis, n)]);
  globalThis.document = dom.document;
  globalThis.Element = dom.window.Element;
  globalThis.Node = dom.window.Node;
  globalThis.MutationObserver = dom.window.MutationObserver;
  return () => {
    for (const [n, d] of saved) {
      if (d) Object.defineProperty(globalThis, n, d);
      else delete globalThis[n];
    }
  };
}

// ``const NAME = json;`` lines: what _js.constants writes (a Set from an array given as {set: [...]}).
function constants(values) {
  return Object.entries(values).map(([name, value]) => (value && value.set
    ? `const ${name} = new Set(${JSON.stringify(value.set)});`
    : `const ${name} = ${JSON.stringify(value)};`)).join("\n") + "\n";
}

// The anywidget module made of ``names`` (the last one the widget's own), with ``values`` in front.
async function widgetModule(names, values = {}) {
  const text = constants(values) + names.map(widgetSource).join("\n");
  return import("data:text/javascript;charset=utf-8," + encodeURIComponent(text));
}

// Run the handout scripts ``names`` (tools/handout_assets, or {widget: "label.js"} for a package one) in a
// window of their own. The window is returned: the scripts' names are on it (window.mhaFigures, ...).
function handoutScripts(names, { body = "", window: extra = {} } = {}) {
  const dom = page(body);
  const listeners = [];
  const window = Object.assign({
    document: dom.document,
    addEventListener: (type, fn) => listeners.push([type, fn]),
    setTimeout: (fn, ms) => setTimeout(fn, ms),
    localStorage: undefined,
    listeners,
    dom,
  }, extra);
  for (const name of names) {
    const file = typeof name === "string" ? path.join(HANDOUT_JS, name) : path.join(WIDGET_JS, name.widget);
    const source = fs.readFileSync(file, "utf8");
    // A classic script at the top level: its "var" names become the window's, as in a browser.
    const exported = /^var (\w+) =/m.exec(source);
    const run = new Function("window", "document", "module",
                             source + (exported ? `\nwindow.${exported[1]} = ${exported[1]};` : ""));
    run(window, dom.document, undefined);
  }
  return window;
}

// A promise's settling, and every job queued before it.
const settle = () => new Promise((resolve) => setImmediate(resolve));

module.exports = { REPO, WIDGET_JS, HANDOUT_JS, widgetSource, page, useGlobals, constants, widgetModule,
                   handoutScripts, settle };
