// ESLint for every .js file of the course, run from the repository root (tests/test_js.py):
//   tests/js/node_modules/.bin/eslint --config tests/js/eslint.config.js --max-warnings 0
// eslint's recommended rules, plus the globals each kind of file may use.
const js = require("@eslint/js");
const globals = require("globals");

module.exports = [
  {ignores: ["**/node_modules/**"]},
  js.configs.recommended,
  {
    linterOptions: {reportUnusedDisableDirectives: "error"},
    rules: {
      "no-unused-vars": ["error", {args: "none", caughtErrors: "none"}],
      eqeqeq: ["error", "smart"],
      "no-var": "off",
    },
  },
  // The shared scripts (classic: one name each, module.exports under node) and the handouts' scripts.
  {
    files: ["mha_classroom/widgets/js/label.js", "mha_classroom/widgets/js/save.js", "mha_classroom/widgets/js/channel.js", "mha_classroom/widgets/js/diff.js",
            "mha_classroom/widgets/js/plotly_shared.js", "mha_classroom/widgets/js/static_words.js", "tools/handout_assets/*.js"],
    languageOptions: {sourceType: "script", globals: {...globals.browser, module: "readonly"}},
  },
  // The anywidget modules: ES modules, joined after the shared scripts (each names what it takes from
  // them, and from the constants Python puts in front, in a /* global */ comment).
  {
    files: ["mha_classroom/widgets/js/keys.js", "mha_classroom/widgets/js/live_figure.js", "mha_classroom/widgets/js/plotly_library.js"],
    languageOptions: {sourceType: "module", globals: {...globals.browser}},
  },
  // The unit tests and this file: node.
  {
    files: ["tests/js/**/*.js"],
    languageOptions: {sourceType: "commonjs", globals: {...globals.node}},
  },
  {
    files: ["tests/js/**/*.mjs"],
    languageOptions: {sourceType: "module", globals: {...globals.node}},
  },
];
