/* A LiveFigure's view (mha_classroom/widgets/_live_figure.py): the builder's plain figure, drawn with the page's
   one plotly.js (shared().promise, from plotly_library.js) by Plotly.react; under it, the buttons that
   save it as PNG or SVG (save.js).

   The figure lives on the LiveFigure's channel (channel.js says why): its state "figure" is the whole
   figure it was made with, and each change after that comes as one custom message {n, diff}, applied with
   mhaDiff.applyDiff (diff.js, the inverse of _plain.figure_diff). n counts the changes: a view that
   missed one (drawn late, or a message that came before it listened) asks the kernel with {want: n}
   and gets the whole figure back, {n, figure}. So a late view or an early message loses nothing.
   A message may also carry the figure's new words (for a screen reader): the view hands them to the
   group's keyboard helper (keys.js) as a "mha-figure-words" event, so a change is one message.

   Settings the page holds (the channel's "held", from LiveFigure.hold): the models of the group's controls and
   every setting's figure and words. When a held control's model changes (the learner moved it, or the kernel
   set it), the view switches to that setting's figure by itself: nothing waits on the kernel, which only hears
   the control's value and sends nothing back for it. A diff the kernel sends later applies to that figure.

   An ES module for anywidget. mha_classroom/widgets/_js.py puts plotly_shared.js (shared), channel.js
   (channel_of), diff.js (mhaDiff) and save.js (mhaSave) in front of it. The named exports are for the
   unit tests.
*/
/* global shared, channel_of, model_of, mhaDiff, mhaSave */

// The plotly configuration of every live figure: no logo, drawn at the builder's size. The mode bar is
// hidden by the group's styles (mha_classroom/widgets/_base.py); saving is save.js's buttons.
export const CONFIG = {displaylogo: false, responsive: false};

// The event that hands a change's words to the group's keyboard helper (keys.js), from the figure's element.
export const WORDS_EVENT = "mha-figure-words";

// The figure a view shows after one message from the kernel: [figure, n, ask], ask true when one was missed.
export function receive(figure, n, message) {
  if (message && message.figure && message.n >= n) return [message.figure, message.n, false];
  if (message && message.diff && message.n === n + 1) return [mhaDiff.applyDiff(figure, message.diff), message.n, false];
  if (message && message.diff && message.n > n + 1) return [figure, n, true];
  return [figure, n, false];  // one already shown, or not for the figure
}

// Whether a message's words are for this view: with a change it applied, or alone for the figure it shows.
export function wordsFor(message, n, changed) {
  if (!message || !message.words) return false;
  return changed || (!message.diff && !message.figure && message.n === n);
}

// Two settings' values as the kernel compares them (same_setting in _live_figure.py): numbers within 1e-9.
export function sameSetting(a, b) {
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
  return a.every((x, i) => (typeof x === "number" && typeof b[i] === "number" ? Math.abs(x - b[i]) <= 1e-9 : x === b[i]));
}

// The held state for the controls' values now, or undefined (a setting the page does not hold).
export function heldState(held, values) {
  return ((held && held.states) || []).find((state) => sameSetting(state.values, values));
}

export default {
  async render({ model, el }) {
    let alive = true, waiting = false, drawing = Promise.resolve();
    const plot = document.createElement("div");
    plot.className = "mha-live-figure";
    el.appendChild(plot);
    const fail = (error) => { plot.textContent = "This figure could not be drawn: " + error; };
    let channel;
    try {
      channel = await channel_of(model);
    } catch (error) {
      fail(error);
      return;
    }
    let figure = channel.get("figure") || {data: [], layout: {}}, n = 0;
    // One draw waits at a time; it reads the figure when it starts, so it shows the newest one.
    // plotly.js writes into what it is given (autoranges): it gets a copy.
    const draw = () => {
      if (waiting) return;
      waiting = true;
      drawing = drawing.then(() => shared().promise).then((Plotly) => {
        waiting = false;
        if (!alive) return;
        const shown = mhaDiff.clone(figure);
        return Plotly.react(plot, shown.data || [], shown.layout || {}, CONFIG);
      }).catch((error) => {
        waiting = false;
        fail(error);
      });
    };
    const ask = () => channel.send({want: n});
    const heard = (message) => {
      const [next, count, missed] = receive(figure, n, message);
      if (missed) {
        ask();
        return;
      }
      const changed = next !== figure;
      if (changed) {
        figure = next;
        n = count;
        draw();
      }
      // The figure's new words, in the same message as its change or alone (the drawing already shown):
      // to the group's keyboard helper (keys.js).
      if (wordsFor(message, n, changed)) {
        const Event = el.ownerDocument.defaultView.CustomEvent;
        el.dispatchEvent(new Event(WORDS_EVENT, {bubbles: true, detail: message.words}));
      }
    };
    // The held settings: each control's model, listened to; a move switches to its setting's figure and words.
    let held = null, controls = [];
    const switched = (initial = false) => {
      const state = heldState(held, controls.map(([control, trait]) => control.get(trait)));
      if (!alive || !state) return;
      if (initial && JSON.stringify(state.figure) === JSON.stringify(figure)) return;  // it shows that already
      figure = mhaDiff.clone(state.figure);
      draw();
      const Event = el.ownerDocument.defaultView.CustomEvent;
      el.dispatchEvent(new Event(WORDS_EVENT, {bubbles: true, detail: state.words}));
    };
    const unlisten = () => {
      for (const [control, trait] of controls) control.off("change:" + trait, switched);
      controls = [];
    };
    const hold = async () => {
      const next = channel.get("held") || {};
      const found = [];
      for (const {model: ref, trait} of next.controls || []) {
        try {
          found.push([await model_of(model, ref), trait]);
        } catch (error) {
          fail(`its control ${ref} is not in the page (${error}); run the cell again`);
          return;
        }
      }
      unlisten();
      held = next;
      controls = found;
      for (const [control, trait] of controls) control.on("change:" + trait, switched);
    };
    const reheld = () => { hold(); };
    draw();
    ask();  // changes made before this view listened (none, most often: then the kernel says nothing)
    mhaSave.addButtons(el, plot, () => shared().promise);
    channel.on("msg:custom", heard);
    channel.on("change:held", reheld);
    await hold();
    if (n === 0) switched(true);  // drawn after a move the page made by itself (a cell scrolled back into view)
    return () => {
      alive = false;
      channel.off("msg:custom", heard);
      channel.off("change:held", reheld);
      unlisten();
      shared().promise.then((Plotly) => Plotly.purge(plot)).catch(() => {});
    };
  },
};
