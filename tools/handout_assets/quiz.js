/* Quick checks in a handout page: the same questions, grading and feedback as the notebook widget.

   The rules are a port of mha_classroom/quiz/numbers.py (reading a typed number, writing one),
   mha_classroom/quiz/grading.py (grade_choice, grade_numeric) and QuestionView.check (the
   messages for an empty or unreadable answer). tests/browser/test_handout_quiz.py feeds
   one table of cases to this file in Chromium and to the package, and requires the same
   verdicts, so the two cannot drift.

   Each question's data (tools/handouts.py writes it from the bank) sits in a
   <script type="application/json" class="mha-quiz-data"> inside its quick check.
   Answers are kept in this browser (localStorage), never sent anywhere.
*/
(function () {
  "use strict";

  // ------------------------------------------------------------------ Python's whitespace

  // str.strip() and the re module's \s take these as whitespace (JavaScript's trim() and \s differ:
  // they skip U+001C-U+001F and U+0085 and add U+FEFF).
  var WS = "[\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]";
  var LEAD = new RegExp("^" + WS + "+");
  var TRAIL = new RegExp(WS + "+$");
  function strip(text) { return text.replace(LEAD, "").replace(TRAIL, ""); }
  function lstrip(text) { return text.replace(LEAD, ""); }

  // ------------------------------------------------------------------ reading a number (numbers.parse_number)

  var GROUPED = /^[0-9]{1,3}(?:([,_ \u00a0\u202f'])[0-9]{3})(?:\1[0-9]{3})*$/;
  var SEPARATORS = /[,_ \u00a0\u202f']/g;
  var PLAIN = /^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?$/;
  // The exponent's sign is +, - or U+2212 (numbers.py's class "[+-−]" reads as a range; see the test).
  var POWER = new RegExp("^([^\\n]+?)" + WS + "*(?:[x\u00d7*\u00b7]" + WS + "*10" + WS + "*(?:\\^|\\*\\*)" + WS +
                         "*([+\\-\u2212]?[0-9]{1,3}))$");
  var WORDS = new RegExp("^([^\\n]+?)" + WS + "*([A-Za-z]+)$");
  var SCALE_WORDS = {thousand: 1e3, k: 1e3, million: 1e6, m: 1e6, billion: 1e9, bn: 1e9, g: 1e9};

  function parsePlain(text) {
    text = strip(text).replace(/\u2212/g, "-");
    var sign = "";
    if (text.length && "+-".indexOf(text.charAt(0)) >= 0) {
      sign = text.charAt(0);
      text = lstrip(text.slice(1));
    }
    var at = text.indexOf(".");
    var whole = at < 0 ? text : text.slice(0, at);
    var rest = at < 0 ? "" : text.slice(at);
    if (GROUPED.test(whole)) whole = whole.replace(SEPARATORS, "");
    text = whole + rest;
    if (!PLAIN.test(text)) return null;
    var value = Number(sign + text);
    return isFinite(value) ? value : null;
  }

  function parseNumber(text) {
    text = String(text);
    if (Array.from(text).length > 200) return null;
    text = strip(text);
    if (!text) return null;
    var power = POWER.exec(text);
    if (power) {
      var mantissa = parsePlain(power[1]);
      if (mantissa === null) return null;
      // "1e" + exponent is the correctly rounded power of ten, as Python's 10.0 ** n.
      var value = mantissa * Number("1e" + parseInt(power[2].replace(/\u2212/g, "-"), 10));
      return isFinite(value) ? value : null;
    }
    var words = WORDS.exec(text);
    if (words) {
      var word = words[2].toLowerCase();
      if (Object.prototype.hasOwnProperty.call(SCALE_WORDS, word) &&
          ((word !== "m" && word !== "g") || words[2] === "M" || words[2] === "G")) {
        var m = parsePlain(words[1]);
        return m === null ? null : m * SCALE_WORDS[word];
      }
    }
    return parsePlain(text);
  }

  // ------------------------------------------------------------------ writing a number (numbers.format_number)

  // A positive double as an exact decimal: value = digits / 10**scale (BigInt digits).
  function exactDecimal(value) {
    var view = new DataView(new ArrayBuffer(8));
    view.setFloat64(0, value);
    var hi = view.getUint32(0), lo = view.getUint32(4);
    var biased = (hi >>> 20) & 0x7ff;
    var mantissa = (BigInt(hi & 0xfffff) << 32n) + BigInt(lo);
    var exp2 = biased === 0 ? -1074 : biased - 1075;
    if (biased !== 0) mantissa += 1n << 52n;
    if (exp2 >= 0) return {digits: mantissa << BigInt(exp2), scale: 0};
    return {digits: mantissa * (5n ** BigInt(-exp2)), scale: -exp2};
  }

  // round(digits / 10**scale * 10**places), ties to even (as Python's formatting rounds).
  function roundTo(exact, places) {
    var shift = places - exact.scale;
    if (shift >= 0) return exact.digits * (10n ** BigInt(shift));
    var unit = 10n ** BigInt(-shift);
    var q = exact.digits / unit, r = exact.digits % unit;
    if (2n * r > unit || (2n * r === unit && q % 2n === 1n)) q += 1n;
    return q;
  }

  function group(intDigits) { return intDigits.replace(/\B(?=(\d{3})+(?!\d))/g, ","); }

  function withPoint(n, places) {
    var s = n.toString();
    if (places <= 0) return s;
    while (s.length <= places) s = "0" + s;
    return s.slice(0, s.length - places) + "." + s.slice(s.length - places);
  }

  // Python's format(value, ",.{p}g") for a finite, positive, non-integer value.
  function formatG(value, p) {
    var exact = exactDecimal(value);
    var exp10 = exact.digits.toString().length - 1 - exact.scale;
    var n = roundTo(exact, p - 1 - exp10);
    if (n.toString().length > p) { exp10 += 1; n = n / 10n; }
    var s;
    if (exp10 >= -4 && exp10 < p) {
      s = withPoint(n, p - 1 - exp10);
      if (s.indexOf(".") >= 0) s = s.replace(/0+$/, "").replace(/\.$/, "");
      var at = s.indexOf(".");
      return at < 0 ? group(s) : group(s.slice(0, at)) + s.slice(at);
    }
    s = withPoint(n, p - 1);
    if (s.indexOf(".") >= 0) s = s.replace(/0+$/, "").replace(/\.$/, "");
    var e = Math.abs(exp10);
    return s + "e" + (exp10 < 0 ? "-" : "+") + (e < 10 ? "0" : "") + e;
  }

  function formatNumber(value) {
    if (value === null || value === undefined) return "";
    if (Number.isInteger(value)) {
      var text = BigInt(value).toString();
      return text.charAt(0) === "-" ? "-" + group(text.slice(1)) : group(text);
    }
    if (!isFinite(value)) return isNaN(value) ? "nan" : (value > 0 ? "inf" : "-inf");
    var sign = value < 0 ? "-" : "";
    var size = Math.abs(value);
    if (size < 1000) return sign + formatG(size, 4);
    var fixed = withPoint(roundTo(exactDecimal(size), 2), 2);
    var point = fixed.indexOf(".");
    return sign + group(fixed.slice(0, point)) + fixed.slice(point);
  }

  // ------------------------------------------------------------------ grading (grading.grade_choice, grade_numeric)

  function withoutYes(feedback) {
    var rest = feedback.replace(new RegExp("^Yes[.,:!]?" + WS + "+"), "");
    if (rest === feedback || !rest) return feedback;
    var head = rest.slice(0, 2);
    return head !== head.toUpperCase() ? rest.charAt(0).toLowerCase() + rest.slice(1) : rest;
  }

  var LETTERS = "abcdefghijklmnopqrstuvwxyz";

  function labels(q) {
    var out = {};
    q.order.forEach(function (i, pos) { out[i] = LETTERS.charAt(pos) + ")"; });
    return out;
  }

  // chosen: data indices. showMissed false on a first wrong try of a select-all question.
  function gradeChoice(q, chosen, showMissed) {
    var label = labels(q);
    var picked = {};
    chosen.forEach(function (i) { picked[i] = true; });
    var correct = [], i;
    for (i = 0; i < q.options.length; i++) if (q.options[i].correct) correct.push(i);
    if (q.kind === "single") {
      var option = q.options[chosen[0]];
      return {correct: option.correct, headline: option.correct ? "Correct." : "Not quite.",
              details: [label[chosen[0]] + " " + option.feedback]};
    }
    var details = [], wrong = 0, missed = 0;
    q.order.forEach(function (j) {
      var o = q.options[j];
      if (picked[j] && o.correct) details.push("\u2713 " + label[j] + " right to choose: " + withoutYes(o.feedback));
      else if (picked[j]) { details.push("\u2717 " + label[j] + " should not be chosen: " + o.feedback); wrong += 1; }
      else if (o.correct) {
        missed += 1;
        if (showMissed) details.push("\u2717 " + label[j] + " missed, it is right too: " + withoutYes(o.feedback));
      }
    });
    if (!wrong && !missed) {
      return {correct: true, headline: "Correct: all " + correct.length + " right options, and no others.", details: details};
    }
    var parts = wrong ? [wrong + " chosen that should not be"] : [];
    if (missed) parts.push(showMissed ? missed + " missed" : missed + " right option" + (missed !== 1 ? "s" : "") + " not chosen yet");
    var headline = "Not quite: " + parts.join(", ") + ".";
    if (!showMissed) headline += " Change your choice and check again.";
    return {correct: false, headline: headline, details: details};
  }

  function gradeNumeric(q, value) {
    if (Math.abs(value - q.answer) <= q.tolerance) {
      return {correct: true, headline: "Correct: " + q.answer_text + ".", details: [q.feedback]};
    }
    for (var k = 0; k < q.misconceptions.length; k++) {
      var m = q.misconceptions[k];
      var tolerance = m.tolerance === null || m.tolerance === undefined ? q.tolerance : m.tolerance;
      if (Math.abs(value - m.value) <= Math.max(tolerance, 1e-9 * Math.abs(m.value))) {
        return {correct: false, headline: "Not quite: " + formatNumber(value) + ".", details: [m.feedback]};
      }
    }
    return {correct: false, headline: "Not quite: " + formatNumber(value) + ".", details: [q.wrong_feedback]};
  }

  // What Check does (QuestionView.check): a verdict, or a message when there is nothing to grade.
  // answer: data indices (single, multi) or the typed text (numeric); wrongTries: wrong checks so far.
  function check(q, answer, wrongTries) {
    if (q.kind === "numeric") {
      var value = parseNumber(answer);
      if (value === null) {
        var typed = strip(String(answer));
        return {message: typed ? "'" + typed + "' is not a number. Type it in digits (commas are fine)."
                               : "Type a number first, then press Check."};
      }
      return gradeNumeric(q, value);
    }
    if (!answer || !answer.length) return {message: "Choose an option first, then press Check."};
    return gradeChoice(q, answer, wrongTries >= 1);
  }

  // ------------------------------------------------------------------ text to HTML (_widget_parts.rich)

  function escapeHtml(text) {
    return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
               .replace(/"/g, "&quot;").replace(/'/g, "&#x27;");
  }
  function rich(text) { return escapeHtml(text).replace(/`([^`]+)`/g, "<code>$1</code>"); }

  // ------------------------------------------------------------------ the page

  var STORE_PREFIX = "mha-handout-quiz:";

  function load(id) {
    try { return JSON.parse(window.localStorage.getItem(STORE_PREFIX + id) || "null"); } catch (e) { return null; }
  }
  function save(id, state) {
    try { window.localStorage.setItem(STORE_PREFIX + id, JSON.stringify(state)); return true; } catch (e) { return false; }
  }
  function forget(id) {
    try { window.localStorage.removeItem(STORE_PREFIX + id); } catch (e) { /* nothing kept */ }
  }

  function showResult(box, result) {
    var feedback = box.querySelector(".mha-quiz-feedback");
    if (result.message !== undefined) {
      feedback.className = "mha-quiz-feedback mha-quiz-info";
      feedback.innerHTML = "<p>" + rich(result.message) + "</p>";
      return;
    }
    feedback.className = "mha-quiz-feedback " + (result.correct ? "mha-quiz-right" : "mha-quiz-wrong");
    feedback.innerHTML = "<p class=\"mha-quiz-headline\">" + (result.correct ? "\u2713 " : "\u2717 ") + rich(result.headline) + "</p>" +
      result.details.map(function (d) { return "<p>" + rich(d) + "</p>"; }).join("");
  }

  function showTries(box, state) {
    var tries = box.querySelector(".mha-quiz-tries");
    tries.textContent = state.tries ? "Tries so far: " + state.tries + (state.solved ? ", answered correctly" : "") : "";
  }

  function readAnswer(box, q) {
    if (q.kind === "numeric") return box.querySelector("input.mha-quiz-number").value;
    return Array.from(box.querySelectorAll("input.mha-quiz-choice")).filter(function (c) { return c.checked; })
      .map(function (c) { return Number(c.value); });
  }

  function setAnswer(box, q, answer) {
    if (q.kind === "numeric") { box.querySelector("input.mha-quiz-number").value = answer || ""; return; }
    var chosen = answer || [];
    box.querySelectorAll("input.mha-quiz-choice").forEach(function (c) { c.checked = chosen.indexOf(Number(c.value)) >= 0; });
  }

  function blank() { return {answer: null, tries: 0, wrongTries: 0, solved: false, shown: null}; }

  function wire(box) {
    var q = JSON.parse(box.querySelector("script.mha-quiz-data").textContent);
    var state = load(q.id) || blank();
    if (state.answer !== null) setAnswer(box, q, state.answer);
    if (state.shown) showResult(box, state.shown);
    showTries(box, state);
    box.querySelector("button.mha-quiz-check").addEventListener("click", function () {
      var answer = readAnswer(box, q);
      var result = check(q, answer, state.wrongTries);
      showResult(box, result);
      if (result.message !== undefined) return;
      state.answer = answer;
      state.tries += 1;
      if (!result.correct) state.wrongTries += 1;
      state.solved = state.solved || result.correct;
      state.shown = result;
      showTries(box, state);
      if (!save(q.id, state)) box.querySelector(".mha-quiz-tries").textContent += " (this browser does not keep answers)";
    });
    return {
      reset: function () {
        state = blank();
        forget(q.id);
        setAnswer(box, q, null);
        var feedback = box.querySelector(".mha-quiz-feedback");
        feedback.className = "mha-quiz-feedback";
        feedback.innerHTML = "";
        showTries(box, state);
      },
    };
  }

  // Printing shows every folded answer (and folds back afterwards).
  var unfolded = [];
  function unfoldForPrint() {
    document.querySelectorAll("details:not([open])").forEach(function (d) { d.open = true; unfolded.push(d); });
  }
  function foldAfterPrint() {
    unfolded.forEach(function (d) { d.open = false; });
    unfolded = [];
  }

  function start() {
    document.querySelectorAll(".mha-handout-quiz").forEach(function (quiz) {
      var questions = Array.from(quiz.querySelectorAll(".mha-quiz-question")).map(wire);
      var reset = quiz.querySelector("button.mha-quiz-reset");
      if (!reset) return;
      reset.hidden = false;
      reset.addEventListener("click", function () {
        questions.forEach(function (w) { w.reset(); });
        var note = quiz.querySelector(".mha-quiz-reset-note");
        if (note) note.textContent = "Your answers on this page are cleared.";
      });
    });
    window.addEventListener("beforeprint", unfoldForPrint);
    window.addEventListener("afterprint", foldAfterPrint);
  }

  window.MhaQuiz = {parseNumber: parseNumber, formatNumber: formatNumber, gradeChoice: gradeChoice,
                    gradeNumeric: gradeNumeric, check: check, rich: rich, unfoldForPrint: unfoldForPrint};
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
