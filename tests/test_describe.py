"""mha_classroom.describe: a figure's name and its key numbers in words, read from the figure's own data.

Each test builds a figure with the package's own builders and checks the words against the
numbers computed here from the same inputs (not against the figure), so a description that
reads the wrong row, the wrong panel or the wrong label fails.
"""

from __future__ import annotations

import json

import numpy as np
import plotly.io as pio
import pytest

from mha_classroom.describe import MAX_CHARS, FigureWords, in_words, number, plain
from mha_core.examples import TOKENS, demo_layer, token_vectors
from mha_core.figures.heads import head_grid_figure
from mha_core.figures.sizing import vaswani_figure
from mha_core.figures.welcome import weights_bar_figure


@pytest.fixture(scope="module")
def four_heads():
    layer = demo_layer(d_model=16, n_heads=4, seed=0)
    return layer(token_vectors(d_model=16, seed=0)).weights  # (H, T, T)


def test_name_is_the_title_without_markup():
    fig = weights_bar_figure(np.full(6, 1 / 6), TOKENS, query_token="changed", sharpness=1)
    words = in_words(fig)
    assert isinstance(words, FigureWords)
    assert words.name == "Weights the query 'changed' gives each token (sharpness 1)"
    assert plain("a<br>b <b>c</b> &amp; d") == "a b c & d"


def test_bars_name_every_token_with_its_weight():
    weights = np.array([0.05, 0.61, 0.07, 0.16, 0.08, 0.03])
    words = in_words(weights_bar_figure(weights, TOKENS, query_token="changed", sharpness=1))
    for token, w in zip(TOKENS, weights):
        assert f"`{token}` {w:.2f}" in words.description
    assert "key token" in words.description  # the axis says what the bars stand for


def test_head_grid_gives_each_query_its_largest_weight_per_head(four_heads):
    fig = head_grid_figure(four_heads, TOKENS, show_values=False)
    text = in_words(fig).description
    H, T, _ = four_heads.shape
    for h in range(H):
        tops = ", ".join(f"`{query}` {number(four_heads[h, i].max())} on `{TOKENS[int(np.argmax(four_heads[h, i]))]}`"
                         for i, query in enumerate(TOKENS))
        want = f"head {h + 1}, largest per query token: {tops}."
        assert want in text, want
    # Colour carries the weights, so the words say so; the outline is named, not read as data.
    assert "Colour shows weight, from 0 to 1" in text
    assert "An outline marks each row's largest value" in text
    assert len(text) <= MAX_CHARS


def test_one_table_is_read_row_by_row_with_the_two_largest():
    weights = demo_layer(d_model=16, n_heads=4, seed=0)(token_vectors(d_model=16, seed=0)).weights[1]  # (T, T)
    text = in_words(head_grid_figure(weights[None], TOKENS, show_values=False)).description
    for i, query in enumerate(TOKENS):
        first, second = np.argsort(-weights[i])[:2]
        assert (f"query token `{query}`: largest {number(weights[i, first])} on `{TOKENS[first]}`, "
                f"then {number(weights[i, second])} on `{TOKENS[second]}`.") in text


def test_a_big_grid_is_read_by_its_extremes_and_kept_short(four_heads):
    many = np.concatenate([four_heads, four_heads[::-1]])  # (8, T, T): more panels than are read row by row
    text = in_words(head_grid_figure(many, TOKENS, show_values=False)).description
    assert len(text) <= MAX_CHARS
    read = [h for h in range(many.shape[0]) if f"head {h + 1}, largest" in text]
    assert read[:3] == [0, 1, 2], text
    for h in read:
        assert f"head {h + 1}, largest {number(many[h].max())}" in text
    if len(read) < many.shape[0]:
        assert "(More in the figure.)" in text


def test_lines_read_every_point_of_a_short_series():
    fig = vaswani_figure()
    text = in_words(fig).description
    labels = [plain(x) for x in fig.data[0].x]
    for label, bleu in zip(labels, fig.data[0].y):
        assert f"`{label}` {number(bleu)}" in text
    assert "BLEU (higher is better)" in text  # the series is named by its panel's title


def test_json_and_typed_arrays_read_like_the_figure(four_heads):
    fig = head_grid_figure(four_heads, TOKENS, show_values=False)
    spec = json.loads(pio.to_json(fig))
    assert in_words(spec) == in_words(fig)
    assert in_words(fig.to_plotly_json()) == in_words(fig)


def test_a_long_series_gives_start_end_and_extremes():
    import plotly.graph_objects as go

    x = list(range(10))
    y = [3.0, 1.0, 4.0, 1.5, 5.0, 9.0, 2.0, 6.0, 5.5, 3.5]
    fig = go.Figure(go.Scatter(x=x, y=y, mode="lines", name="loss"), layout=dict(xaxis_title="step"))
    text = in_words(fig).description
    assert "loss: from 3 at step 0 to 3.50 at 9; highest 9 at 5, lowest 1 at 1." in text


def test_not_a_figure_is_refused_by_name():
    with pytest.raises(TypeError, match="figure="):
        in_words("a string")
    with pytest.raises(TypeError, match="'data'"):
        in_words({"layout": {}})


def test_a_tall_table_is_read_by_its_largest_cell_with_its_ties_the_next_value_and_its_smallest_from_1():
    # 12 rows, one column: too many rows to read one by one. 0.9 twice: said once, with the count of
    # cells that share it (a listener is not read the same number again); positions count from 1.
    z = np.array([[0.2], [0.9], [0.5], [0.05], [0.9], [0.3], [0.1], [0.4], [0.6], [0.7], [0.8], [0.35]])
    fig = {"data": [{"type": "heatmap", "z": z.tolist()}], "layout": {"title": {"text": "One column"}}}
    text = in_words(fig).description
    assert text.startswith("largest 0.90 at row 2, column 1 (and 1 more cell at 0.90); then 0.80 at row 11, "
                           "column 1; smallest 0.05 at row 4, column 1."), text
    assert "Colour shows the value, from 0.05 to 0.90." in text


def test_a_row_that_is_all_one_value_a_tie_and_a_shared_largest_are_said_as_such():
    fig = {"data": [{"type": "heatmap", "z": [[0, 0, 0], [0.5, 0.5, 0], [1, 0, 0]], "x": ["a", "b", "c"],
                     "y": ["p", "q", "r"]}],
           "layout": {"xaxis": {"title": {"text": "key"}}, "yaxis": {"title": {"text": "query"}}}}
    text = in_words(fig).description
    assert "query `p`: all 0." in text, text
    assert "query `q`: largest 0.50 on `a` and `b`, then 0 on `c`." in text, text
    same = {"data": [{"type": "heatmap", "z": [[1, 0], [0.9, 0.1]], "x": ["a", "b"], "y": ["p", "q"]},
                     {"type": "heatmap", "z": [[1, 0], [0, 1]], "x": ["p", "q"], "y": ["p", "q"], "xaxis": "x2"}],
            "layout": {"yaxis": {"title": {"text": "query"}}}}
    text = in_words(same).description
    assert "every query's largest value is on `a` (0.90 to 1)." in text, text
    assert "each query's largest value is on itself (1)." in text, text


def test_bars_of_one_value_and_a_flat_line_are_said_in_one_phrase():
    fig = {"data": [{"type": "bar", "name": "bias", "x": list(range(1, 9)), "y": [0.0] * 8},
                    {"type": "scatter", "mode": "lines", "name": "ratio", "x": list(range(8)), "y": [0.39] * 8}],
           "layout": {"xaxis": {"title": {"text": "feature"}}}}
    text = in_words(fig).description
    assert "bias: all 8 bars 0." in text, text
    assert "ratio: flat at 0.39, from feature 0 to 7." in text, text


def test_words_read_aloud_quote_what_the_text_marks_as_code():
    from mha_classroom.describe import spoken

    assert spoken("largest 0.61 on `key`, then 0.22 on `cache`.") == "largest 0.61 on \u2018key\u2019, then 0.22 on \u2018cache\u2019."
    assert spoken("no marks") == "no marks"


def test_points_on_labelled_rows_are_read_by_their_values_across():
    # A dot plot: each sentence on its own row (y = 0, 1, 2 with word labels), its value along x.
    fig = {"data": [{"type": "scatter", "mode": "markers", "x": [0.95, 0.91, 0.97, 0.93, 0.96, 0.94, 0.92],
                     "y": list(range(7))},],
           "layout": {"title": {"text": "Cosines"}, "xaxis": {"title": {"text": "cosine"}},
                      "yaxis": {"tickvals": list(range(7)), "ticktext": [f"sentence {c}" for c in "abcdefg"]}}}
    text = in_words(fig).description
    assert "7 points, highest 0.97 at `sentence c`, lowest 0.91 at `sentence b`." in text, text


def test_rows_that_run_downwards_read_down_whether_reversed_or_given_as_a_falling_range():
    """A table's rows run down: plotly's 'reversed' y axis, or the falling range plotly.js writes back in the page,
    read the same; a rising range reads up."""
    trace = {"type": "heatmap", "z": [[0.1, 0.9], [0.6, 0.4]], "x": ["a", "b"], "y": ["a", "b"]}
    axes = {"xaxis": {"title": {"text": "key token"}}}

    def said(yaxis):
        return in_words({"data": [trace], "layout": {**axes, "yaxis": {"title": {"text": "query token"}, **yaxis}}}).description

    assert said({"autorange": "reversed"}).startswith("Across: key token. Down: query token.")
    assert said({"autorange": True, "range": [1.5, -0.5]}).startswith("Across: key token. Down: query token.")
    assert said({"range": [-0.5, 1.5]}).startswith("Across: key token. Up: query token.")
