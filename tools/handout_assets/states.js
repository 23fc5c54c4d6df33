/* Brings a handout's controls to life: each setting was computed when the page was built.

   A control group is a <div class="mha-states"> (tools/handouts.py states_html) holding
   native controls (radio buttons, a slider, a list, checkboxes), the lines the group shows
   (messages, readouts), its <figure> (drawn by figures.js) and, in a
   <script type="application/json" class="mha-states-data">, every setting recorded by
   mha_classroom.widgets._states: per setting, the option chosen on each control, the figure as
   its change from an earlier setting, the figure's name and words, and the lines shown.

   A change of control picks the recorded setting with that option that keeps as many of the
   other controls as they are (where every combination was recorded, exactly the one asked
   for; otherwise the others go back to their first setting, as the page says), then redraws
   the figure in place (Plotly.react), and writes its words and lines into polite live
   regions. Focus stays where it is. No kernel, no network.
*/
(function () {
  "use strict";

  function clone(x) { return JSON.parse(JSON.stringify(x)); }

  // The course's one figure diff (diff.js, the inverse of mha_classroom/widgets/_plain.py figure_diff).
  function applyDiff(node, diff) { return window.mhaDiff.applyDiff(node, diff); }

  function whenDrawn(plot) {
    return new Promise(function (resolve) {
      (function wait() { if (plot.dataset.mhaDrawn) resolve(); else window.setTimeout(wait, 50); })();
    });
  }

  function setup(box) {
    var data = JSON.parse(box.querySelector("script.mha-states-data").textContent);
    var figure = document.getElementById(box.dataset.figure);
    if (!figure) return;
    var first = JSON.parse(figure.querySelector("script.mha-figure-data").textContent);
    var plot = figure.querySelector(".mha-plot");
    var words = figure.querySelector(".mha-figure-words-text");
    var controls = data.controls, states = data.states;
    var bases = controls.map(function (c, k) { return c.base ? k : -1; }).filter(function (k) { return k >= 0; });
    var current = states[0].v.slice();
    var queue = whenDrawn(plot);

    // A setting's figure: its change ("f") from an earlier setting ("r", the first when absent), rebuilt once.
    var built = {0: first};
    function figureOf(index) {
      if (!built[index]) {
        var state = states[index];
        built[index] = applyDiff(figureOf(state.r || 0), state.f);
      }
      return clone(built[index]);
    }
    // Every setting's figure as this page builds it, without drawing it (the handout tests read them all).
    box.mhaFigureOf = figureOf;

    function inputs(k) { return box.querySelectorAll('[data-control="' + k + '"]'); }

    function read(k) {
      var els = inputs(k), el = els[0];
      if (el.type === "checkbox") return controls[k].labels.indexOf(el.checked ? "on" : "off");
      if (el.type === "radio") {
        for (var i = 0; i < els.length; i++) if (els[i].checked) return Number(els[i].value);
        return current[k];
      }
      return Number(el.value);
    }

    // The bases a setting of control k must share with the current one: every base for another control; for a
    // base, those declared before it (09: a model without a window offers only "the window").
    function sameBases(state, k) {
      return bases.every(function (b) {
        return (controls[k].base && b >= k) || state.v[b] === current[b];
      });
    }

    function write(k) {
      var els = inputs(k), el = els[0], v = current[k], label = controls[k].labels[v];
      if (el.type === "checkbox") el.checked = label === "on";
      else if (el.type === "radio") els.forEach(function (r) { r.checked = Number(r.value) === v; });
      else {
        el.value = String(v);
        if (el.type === "range") {
          el.setAttribute("aria-valuetext", label);
          var out = box.querySelector('output[for="' + el.id + '"]');
          if (out) out.textContent = label;
        }
      }
      // Options no recorded setting reaches from the current bases (09: a model's own KV-head counts) are off.
      if (el.type === "radio" && bases.length) {
        els.forEach(function (r) {
          var i = Number(r.value);
          r.disabled = !states.some(function (s) { return s.v[k] === i && sameBases(s, k); });
        });
      }
    }

    function show(index) {
      var state = states[index];
      box.dataset.mhaState = String(index);
      words.textContent = state.w;
      window.mhaLabel.set(plot, "aria-label", state.n);
      box.querySelectorAll(".mha-states-text").forEach(function (line) {
        var html = state.t[line.dataset.text] || "";
        if (line.innerHTML !== html) line.innerHTML = html;
      });
      var spec = figureOf(index);
      queue = queue.then(function () { return figure.mhaShow ? figure.mhaShow(spec) : null; })
        .then(function () { if (box.dataset.mhaState === String(index)) box.dataset.mhaShown = String(index); });
    }

    function choose(k, v) {
      var best = -1, bestScore = -1;
      states.forEach(function (s, i) {
        if (s.v[k] !== v) return;
        if (!sameBases(s, k)) return;
        var score = s.v.reduce(function (n, x, j) { return n + (x === current[j] ? 1 : 0); }, 0);
        if (score > bestScore) { best = i; bestScore = score; }
      });
      if (best >= 0) current = states[best].v.slice();
      controls.forEach(function (c, j) { write(j); });
      if (best >= 0) show(best);
    }

    controls.forEach(function (c, k) {
      inputs(k).forEach(function (el) {
        el.disabled = false;
        el.addEventListener(el.type === "range" ? "input" : "change", function () {
          choose(k, read(k));
          var choice = box.querySelector(".mha-states-choice");
          if (choice && el.tagName === "SELECT") {
            var label = box.querySelector('label[for="' + el.id + '"]');
            choice.textContent = (label ? label.textContent + ": " : "") + el.options[el.selectedIndex].text;
          }
        });
        // Home and End reach the first and the last choice of a row of buttons, as in JupyterLab.
        if (el.type === "radio") el.addEventListener("keydown", function (event) {
          if (event.key !== "Home" && event.key !== "End") return;
          var open = Array.prototype.filter.call(inputs(k), function (r) { return !r.disabled; });
          var to = event.key === "Home" ? open[0] : open[open.length - 1];
          if (!to) return;
          event.preventDefault();
          to.focus();
          if (!to.checked) { to.checked = true; choose(k, Number(to.value)); }
        });
      });
    });
    controls.forEach(function (c, k) { write(k); });
    box.dataset.mhaShown = "0";
    box.dataset.mhaState = "0";
    box.classList.add("mha-states-live");
  }

  function start() {
    document.querySelectorAll("div.mha-states").forEach(function (box) {
      try { setup(box); } catch (e) {
        var note = document.createElement("p");
        note.textContent = "These controls could not start here; the figure shows their first setting.";
        box.insertBefore(note, box.firstChild);
      }
    });
  }

  // For the unit tests (tests/js/handout_states.test.js): the figure diff as this page applies it.
  window.mhaStates = {applyDiff: applyDiff};

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
