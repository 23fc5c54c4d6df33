// quiz.js: the handouts' quick checks read numbers and grade answers as mha_classroom.quiz does.
// (tests/browser/test_handout_quiz.py holds the whole table of cases to the package, in Chromium.)
const test = require("node:test");
const assert = require("node:assert/strict");
const { handoutScripts } = require("./load.js");

const { MhaQuiz } = handoutScripts(["quiz.js"]);

test("a typed number is read with separators, powers of ten and scale words", () => {
  assert.equal(MhaQuiz.parseNumber("1,024"), 1024);
  assert.equal(MhaQuiz.parseNumber("3 x 10^4"), 30000);
  assert.equal(MhaQuiz.parseNumber("2 million"), 2e6);
  assert.equal(MhaQuiz.parseNumber("  0.5 "), 0.5);
});

test("what is not a number reads as none", () => {
  assert.equal(MhaQuiz.parseNumber("abc"), null);
  assert.equal(MhaQuiz.parseNumber(""), null);
  assert.equal(MhaQuiz.parseNumber("1,02"), null);
});

test("a number is written grouped, with four significant digits below 1000", () => {
  assert.equal(MhaQuiz.formatNumber(1234567), "1,234,567");
  assert.equal(MhaQuiz.formatNumber(0.1234567), "0.1235");
  assert.equal(MhaQuiz.formatNumber(-2048), "-2,048");
});

const NUMERIC = { kind: "numeric", answer: 64, tolerance: 0.5, answer_text: "64", feedback: "d_head = 512 / 8.",
                  misconceptions: [{ value: 512, tolerance: null, feedback: "That is d_model." }], wrong_feedback: "Divide." };

test("a numeric answer within its tolerance is right; a known mistake gets its own feedback", () => {
  assert.deepEqual(MhaQuiz.check(NUMERIC, "64", 0), { correct: true, headline: "Correct: 64.", details: ["d_head = 512 / 8."] });
  assert.deepEqual(MhaQuiz.check(NUMERIC, "512", 0), { correct: false, headline: "Not quite: 512.", details: ["That is d_model."] });
  assert.deepEqual(MhaQuiz.check(NUMERIC, "7", 0).details, ["Divide."]);
});

test("an empty or unreadable answer gets a message, not a verdict", () => {
  assert.deepEqual(MhaQuiz.check(NUMERIC, "", 0), { message: "Type a number first, then press Check." });
  assert.deepEqual(MhaQuiz.check(NUMERIC, "sixty", 0), { message: "'sixty' is not a number. Type it in digits (commas are fine)." });
  assert.deepEqual(MhaQuiz.check({ kind: "single" }, [], 0), { message: "Choose an option first, then press Check." });
});

test("`code` in a question's text becomes <code>, everything else escaped", () => {
  assert.equal(MhaQuiz.rich("use `q @ k.T` & <b>"), "use <code>q @ k.T</code> &amp; &lt;b&gt;");
});
