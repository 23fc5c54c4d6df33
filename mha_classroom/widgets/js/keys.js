/* The keyboard helper's view (mha_classroom/widgets/_keys.py says why and what): every control of a group
   answers its own keys and only its own, each row of toggle buttons is a radio group, each slider's
   handle is named, and the group's plots are images named and described by their words.

   An ES module for anywidget. mha_classroom/widgets/_js.py puts in front of it the constants Python
   owns (GROUP, HELPER, ROVING, PASSED, WORDS, SR_ONLY), label.js (mhaLabel) and channel.js
   (channel_of). The named exports are for the unit tests (tests/js/keys.test.mjs).
*/
/* global GROUP, HELPER, ROVING, PASSED, WORDS, SR_ONLY, mhaLabel, channel_of */

// A slider's handle (noUiSlider's role="slider") is named by the slider's label, which ipywidgets
// draws beside it without tying the two together: without a name a screen reader says only "slider".
export function nameSliders(root) {
  for (const slider of root.querySelectorAll(".widget-slider")) {
    const label = slider.querySelector(".widget-label");
    const name = label && label.textContent.trim();
    if (!name) continue;
    for (const handle of slider.querySelectorAll("[role='slider']")) mhaLabel.set(handle, "aria-label", name);
    // Its readout is a Tab stop of its own, a box to type the value into: Orca said nothing there.
    for (const box of slider.querySelectorAll(".widget-readout[contenteditable='true']")) {
      mhaLabel.set(box, "role", "textbox");
      mhaLabel.set(box, "aria-label", name + ": type a value");
    }
  }
}

// One radio group per row of toggle buttons: a single Tab stop on the chosen button.
export function arrange(root) {
  nameSliders(root);
  for (const control of root.querySelectorAll(".widget-toggle-buttons")) {
    const buttons = [...control.querySelectorAll("button.widget-toggle-button")];
    if (!buttons.length) continue;
    const row = buttons[0].parentElement;
    mhaLabel.set(row, "role", "radiogroup");
    const label = control.querySelector(".widget-label");
    const name = label && label.textContent.trim();
    if (name) mhaLabel.set(row, "aria-label", name);
    const chosen = buttons.find((b) => b.classList.contains("mod-active"));
    const stop = chosen || buttons.find((b) => !b.disabled) || buttons[0];
    for (const b of buttons) {
      mhaLabel.set(b, "role", "radio");
      mhaLabel.set(b, "aria-checked", String(b === chosen));
      mhaLabel.set(b, "tabindex", b === stop ? "0" : "-1");
    }
  }
}

// Each plot of the group: one image, named by its title and described by its words (region i).
export function label(root, words, ids) {
  const plots = [...root.querySelectorAll(".js-plotly-plot")];
  plots.forEach((plot, i) => {
    if (words[i]) mhaLabel.asImage(plot, words[i].name, ids[i]);
  });
}

// A key pressed inside the group that JupyterLab still gets: Tab, Escape, Shift+Enter, anything with Ctrl, Alt or Meta.
export function passes(event) {
  if (event.ctrlKey || event.altKey || event.metaKey) return true;
  return PASSED.has(event.key) || (event.shiftKey && PASSED.has("Shift+" + event.key));
}

// The button a roving key moves to, of n enabled buttons, from index here: step -1, +1 (wrapping), "first" or "last".
export function nextIndex(here, n, step) {
  if (step === "first") return 0;
  if (step === "last") return n - 1;
  return (here + step + n) % n;
}

function move(button, step) {
  const buttons = [...button.parentElement.querySelectorAll("button.widget-toggle-button")].filter((b) => !b.disabled);
  const here = buttons.indexOf(button);
  if (here < 0 || buttons.length < 2) return;
  const next = buttons[nextIndex(here, buttons.length, step)];
  next.focus();
  next.click();  // the widget's own click handler sets the value
}

export function onKeydown(event) {
  const target = event.target;
  if (passes(event) || !(target instanceof Element) || target === event.currentTarget) return;
  const button = target.closest("button.widget-toggle-button");
  if (button && event.key in ROVING && button.closest(".widget-toggle-buttons")) {
    event.preventDefault();  // no page scroll
    move(button, ROVING[event.key]);
  }
  event.stopPropagation();  // the control has the key; JupyterLab's shortcuts never see it
}

export default {
  async render({ model, el }) {
    el.classList.add(HELPER);
    // The words come on the helper's channel (mha_classroom.widgets._channel); without it the keys still work.
    const channel = await channel_of(model).catch((error) => { console.warn("mha-keys: no words:", error); return null; });
    // Words that came with a figure's change (live_figure.js sends a "mha-figure-words" event) win over the
    // channel's, which are those the group was shown with.
    const fresh = [];
    const current = () => ((channel ? channel.get("words") : null) || []).map((w, i) => fresh[i] || w);
    // The live regions sit in a visually hidden box of their own: ipywidgets' layout view owns the
    // element's own style (it removes width, height, margin and overflow that it did not set).
    const hidden = document.createElement("div");
    hidden.setAttribute("style", SR_ONLY);
    el.appendChild(hidden);
    let root = null, observer = null, timer = 0, waited = 0;
    // One polite live region per figure of the group; ids unique to this view of the helper.
    const uid = "mha-words-" + Math.random().toString(36).slice(2, 10);
    const regions = [], ids = [];
    const say = () => {
      const words = current();
      while (regions.length < words.length) {
        const region = document.createElement("div"), name = document.createElement("span"), text = document.createElement("span");
        region.className = WORDS;
        region.setAttribute("aria-live", "polite");
        region.setAttribute("aria-atomic", "true");
        text.id = uid + "-" + regions.length;
        region.append(name, " ", text);
        hidden.appendChild(region);
        regions.push({ name, text });
        ids.push(text.id);
      }
      words.forEach((w, i) => {
        if (regions[i].name.textContent !== w.name + ".") regions[i].name.textContent = w.name + ".";
        if (regions[i].text.textContent !== w.description) regions[i].text.textContent = w.description;
      });
      if (root) label(root, words, ids);
    };
    say();
    const fromChannel = () => { fresh.length = 0; say(); };  // set in Python: the channel's words are the newest
    if (channel) channel.on("change:words", fromChannel);
    // A figure's new words, from its view (the figure's place among the group's figures is its index).
    const onWords = (event) => {
      const figures = [...root.querySelectorAll(".mha-live-figure")];
      const index = figures.findIndex((plot) => event.target.contains(plot));
      if (index < 0 || !event.detail) return;
      fresh[index] = event.detail;
      say();
    };
    // The box is the output before this one; it appears once all its views exist (a figure takes seconds).
    const attach = () => {
      // The marked box shown last before this helper in the same output area (a cell's outputs).
      const area = el.closest(".jp-OutputArea, .widget-output");
      const before = area ? [...area.querySelectorAll("." + GROUP)].filter(
        (g) => g.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING) : [];
      root = before.pop() || null;
      if (!root) {
        waited += 1;
        if (waited < 1200) timer = setTimeout(attach, Math.min(25 * waited, 250));
        return;
      }
      arrange(root);
      label(root, current(), ids);
      root.setAttribute("data-mha-keys", "on");  // for tests and for a person reading the page
      root.addEventListener("keydown", onKeydown);
      root.addEventListener("mha-figure-words", onWords);
      // A plot is drawn seconds after its box: label it when it appears.
      observer = new MutationObserver(() => { arrange(root); label(root, current(), ids); });
      observer.observe(root, { subtree: true, childList: true, attributes: true, attributeFilter: ["class", "disabled"] });
    };
    attach();
    return () => {
      if (channel) channel.off("change:words", fromChannel);
      clearTimeout(timer);
      if (observer) observer.disconnect();
      if (root) {
        root.removeEventListener("keydown", onKeydown);
        root.removeEventListener("mha-figure-words", onWords);
        root.removeAttribute("data-mha-keys");
      }
    };
  },
};
