"""Notebook 01's figures: token vectors, their queries, keys and values, and raw scores.

Every builder is pure: arrays and the theme (``theme``; None: the one in use now) in, ``go.Figure`` out. Signed numbers (vector entries,
scores) use the diverging scale centred on 0, and every cell prints its number, so
nothing depends on telling colours apart.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .. import projector
from ..projector import Theme
from ._style import (
    COLORS,
    PLAIN_WIDTH,
    WIDGET_WIDTH,
    base_layout,
    builder,
    cell_numbers,
    cell_px,
    panel_title,
    query_key_axes,
    signed_heatmap_trace,
    symmetric_max,
    text_width_px,
    title_bottom_px,
    title_chars,
    widget_height,
    wrap_title,
)

#: What each of q, k, v is for, shown next to the vectors in the explorer.
ROLES = (
    ("q", "query", "queries", "what this token is looking for"),
    ("k", "key", "keys", "what this token offers to be found by"),
    ("v", "value", "values", "what this token passes on when it is chosen"),
)


def feature_labels(n: int) -> list[str]:
    """Column labels for the numbers inside a vector: ``f1 ... fn``."""
    return [f"f{i + 1}" for i in range(n)]


def entry_labels(n: int) -> list[str]:
    """Column labels for the Dh entries of a query, key or value: ``d1 ... dn``.

    Not ``f1 ...``: those name the features of a token vector x, and entry 1 of q is not
    feature 1 of x but a mix of all of x's features.
    """
    return [f"d{i + 1}" for i in range(n)]


@builder
def token_vectors_figure(x: np.ndarray, tokens, *, theme: Theme | None = None) -> go.Figure:
    """Each token's vector as one row of numbers.

    Shapes:
        x: (T, D)
    """
    theme = projector.resolve(theme)
    x = np.asarray(x, dtype=float)
    T, D = x.shape
    layout = dict(
        **base_layout(f"Token vectors x: one row of D = {D} numbers per token, shape (T, D) = ({T}, {D})", theme=theme),
        height=140 + 48 * T,
        xaxis=dict(title_text="feature"),
        yaxis=dict(autorange="reversed", title_text="token"),
    )
    # Sized for the narrowest output area (PLAIN_WIDTH), less the default margins: two decimals, else one.
    cells = (cell_px(PLAIN_WIDTH, 120, (0, 1), D), cell_px(layout["height"], 140, (0, 1), T))
    return go.Figure(data=[signed_heatmap_trace(x, feature_labels(D), tokens, zmax=symmetric_max(x), cell_px=cells,
                                                theme=theme)], layout=layout)


@builder
def qkv_matrices_figure(q: np.ndarray, k: np.ndarray, v: np.ndarray, tokens, *, theme: Theme | None = None) -> go.Figure:
    """Q, K and V side by side: one row per token, Dh numbers each.

    Shapes:
        q, k, v: (T, Dh)
    """
    theme = projector.resolve(theme)
    mats = [np.asarray(a, dtype=float) for a in (q, k, v)]
    T, Dh = mats[0].shape
    zmax = symmetric_max(*mats)
    gap = 0.05
    width = (1 - 2 * gap) / 3
    traces, annotations = [], []
    layout = dict(**base_layout(f"Queries, keys and values: three (T, Dh) = ({T}, {Dh}) tables from the same tokens", theme=theme))
    for i, (mat, (letter, _, plural, _)) in enumerate(zip(mats, ROLES)):
        n = "" if i == 0 else str(i + 1)
        dom = [i * (width + gap), i * (width + gap) + width]
        cells = (cell_px(PLAIN_WIDTH, 120, dom, Dh), cell_px(180 + 48 * T, 140, (0, 0.86), T))
        traces.append(signed_heatmap_trace(mat, entry_labels(Dh), tokens, zmax=zmax, xaxis=f"x{n}", yaxis=f"y{n}", name=letter,
                                           cell_px=cells, theme=theme))
        layout[f"xaxis{n}"] = dict(domain=dom, anchor=f"y{n}", title_text=f"entry of {letter} (d1-d{Dh})")
        layout[f"yaxis{n}"] = dict(
            domain=[0, 0.86], anchor=f"x{n}", autorange="reversed", showticklabels=i == 0,
            title_text="token" if i == 0 else None,
        )
        annotations.append(panel_title(f"{letter.upper()} = x @ w_{letter} ({plural})", dom, 0.88, theme=theme))
    layout.update(height=180 + 48 * T, annotations=annotations)
    return go.Figure(data=traces, layout=layout)


@builder
def token_qkv_figure(q: np.ndarray, k: np.ndarray, v: np.ndarray, tokens, token_index: int, *,
                     theme: Theme | None = None) -> go.Figure:
    """One token's q, k and v, every token's key, and the token's raw score against each key.

    The raw score of query token i against key token j is the dot product
    ``q[i] @ k[j]`` (no scaling yet). Colour and axis ranges are fixed over all
    tokens, so switching tokens changes only the numbers.

    Shapes:
        q, k, v: (T, Dh)
        token_index: an int in 0..T-1
    """
    return go.Figure(token_qkv_spec(q, k, v, tokens, token_index, theme=theme))


def token_qkv_spec(q: np.ndarray, k: np.ndarray, v: np.ndarray, tokens, token_index: int, *,
                   theme: Theme | None = None) -> dict:
    """``token_qkv_figure`` as a plain ``{"data", "layout"}`` dict, for a control that redraws it on every
    press (plotly's checks run where the control copies it into its ``FigureWidget``).

    Shapes:
        q, k, v: (T, Dh)
        token_index: an int in 0..T-1
    """
    theme = projector.resolve(theme)
    q, k, v = (np.asarray(a, dtype=float) for a in (q, k, v))
    tokens = list(tokens)
    T, Dh = q.shape
    i = int(token_index)
    word = tokens[i]
    scores = q[i] @ k.T  # (Tk,)
    all_scores = q @ k.T  # (Tq, Tk): fixes the bar axis for every choice of token
    zmax = symmetric_max(q, k, v)
    features = entry_labels(Dh)
    strip = np.stack([q[i], k[i], v[i]])  # (3, Dh)
    strip_rows = [f"{letter} ({name})" for letter, name, _, _ in ROLES]

    # Laid out in pixels, from the top of the plot down: the strip's title and column labels, the
    # strip (3 rows), K's title, K (T rows); the bars share K's rows, so a bar sits beside its key.
    title = f"Token '{word}': its q, k, v, and its raw score q·k against every token"
    height, width = widget_height(theme, rows=2), WIDGET_WIDTH  # the buttons and their "token" label above them
    font, line = theme.font_size, round(1.3 * theme.font_size)
    label_px = max(text_width_px(t, font) for t in strip_rows + tokens)
    margin = dict(l=round(label_px) + 16, r=30, t=title_bottom_px(wrap_title(title, title_chars(theme)), theme) + 8,
                  b=2 * line + 24)
    plot_h = height - margin["t"] - margin["b"]
    gap = 12
    cell_h = min(48.0, (plot_h - 3 * line - gap) / (3 + T))
    left, right = [0.0, 0.56], [0.62, 1.0]
    cell_w = cell_px(width, margin["l"] + margin["r"], left, Dh)
    text, _ = cell_numbers(np.concatenate([strip, k]), cell_w, cell_h, theme.cell_text_size)

    def y(px: float) -> float:  # paper y of a point px below the top of the plot
        return 1 - px / plot_h

    strip_top = 2 * line
    strip_bottom = strip_top + 3 * cell_h
    k_top = strip_bottom + gap + line
    top, bottom = [y(strip_bottom), y(strip_top)], [y(k_top + T * cell_h), y(k_top)]

    def table(z, rows, text_part, **where):
        trace = signed_heatmap_trace(z, features, rows, zmax=zmax, theme=theme, **where)
        if text_part is None:
            trace.pop("text"), trace.pop("texttemplate")
        else:
            trace.update(text=text_part, texttemplate="%{text}")
        return trace

    bar_colors = [COLORS[0] if s >= 0 else COLORS[5] for s in scores]
    bar_line = [3 if j == i else 0 for j in range(T)]
    lo, hi = min(0.0, float(all_scores.min())), max(0.0, float(all_scores.max()))
    pad = 0.45 * (hi - lo) + 1e-9
    traces = [
        table(strip, strip_rows, None if text is None else text[:3], xaxis="x", yaxis="y", name="q, k, v"),
        table(k, tokens, None if text is None else text[3:], xaxis="x2", yaxis="y2", name="K"),
        dict(
            type="bar",
            x=scores,
            y=tokens,
            orientation="h",
            marker=dict(color=bar_colors, line=dict(color="black", width=bar_line)),
            text=[f"{s:+.2f}" for s in scores],
            textposition="outside",
            textfont=dict(size=font),
            constraintext="none",
            cliponaxis=False,
            xaxis="x3",
            yaxis="y3",
            name="scores",
            hovertemplate=f"q({word}) · k(%{{y}}) = %{{x:.2f}}<extra></extra>",
        ),
    ]
    # What each vector is for, short enough for one line each beside the strip.
    roles = "<br>".join(f"<b>{letter}</b>: {short}" for letter, short in
                        (("q", "what it looks for"), ("k", "what it offers"), ("v", "what it passes on")))
    layout = dict(
        **base_layout(title, theme=theme, margin=margin, fit_title=False),
        height=height,
        width=width,
        showlegend=False,
        xaxis=dict(domain=left, anchor="y", side="top"),
        yaxis=dict(domain=top, anchor="x", autorange="reversed"),
        xaxis2=dict(domain=left, anchor="y2", title=dict(text=f"entry of k (d1-d{Dh})", standoff=8)),
        yaxis2=dict(domain=bottom, anchor="x2", autorange="reversed"),
        xaxis3=dict(domain=right, anchor="y3", range=[lo - pad, hi + pad], zeroline=True, zerolinecolor="black",
                    nticks=4, title=dict(text=f"q('{word}') · k(token)", standoff=8)),
        # The bars share K's rows (same order, same height): each bar is the score against the key beside it.
        yaxis3=dict(domain=bottom, anchor="x3", autorange="reversed", showticklabels=False),
        annotations=[
            # Panel titles stay the same for every token, so a token change only touches numbers.
            dict(panel_title("q, k, v of the chosen token", left, y(0), theme=theme), yanchor="top"),
            dict(panel_title("k of every token (the rows of K)", left, y(k_top - line), theme=theme), yanchor="top"),
            dict(panel_title("score against the key beside it", right, y(k_top - line), theme=theme), yanchor="top"),
            dict(text=roles, x=right[0], y=y(strip_top), xref="paper", yref="paper",
                 xanchor="left", yanchor="top", align="left", showarrow=False, font=dict(size=font)),
        ],
        shapes=[
            # Outline the chosen token's own row of K, so it can be found without colour.
            dict(type="rect", xref="x2 domain", yref="y2", x0=0, x1=1, y0=i - 0.5, y1=i + 0.5,
                 line=dict(color="black", width=3)),
        ],
    )
    return {"data": traces, "layout": layout}


@builder
def score_table_figure(scores: np.ndarray, query_tokens, key_tokens, *, title: str | None = None,
                       theme: Theme | None = None) -> go.Figure:
    """A table of scores: one row per query token, one column per key token.

    Shapes:
        scores: (Tq, Tk)
    """
    theme = projector.resolve(theme)
    scores = np.asarray(scores, dtype=float)
    Tq, Tk = scores.shape
    trace = signed_heatmap_trace(scores, key_tokens, query_tokens, zmax=symmetric_max(scores), theme=theme)
    trace["hovertemplate"] = "query %{y} · key %{x} = %{z:.2f}<extra></extra>"
    layout = dict(
        **base_layout(title or f"Raw scores Q @ K.T: shape (Tq, Tk) = ({Tq}, {Tk})", theme=theme),
        height=170 + 52 * Tq,
        **query_key_axes(),
    )
    return go.Figure(data=[trace], layout=layout)


@builder
def meaning_figure(x: np.ndarray, scores: np.ndarray, tokens, features, query_token: str, *,
                   theme: Theme | None = None) -> go.Figure:
    """The hand-set example: what each token is (left) and whom one token's query finds (right).

    Shapes:
        x: (T, F), one named feature per column
        scores: (T,), the query token's score against each token's key
    """
    theme = projector.resolve(theme)
    x, scores = np.asarray(x, dtype=float), np.asarray(scores, dtype=float)
    tokens, features = list(tokens), list(features)
    best = int(np.argmax(scores))
    left, right = [0.0, 0.46], [0.62, 1.0]
    traces = [
        signed_heatmap_trace(x, features, tokens, zmax=symmetric_max(x), xaxis="x", yaxis="y", name="x",
                             theme=theme),
        dict(
            type="bar", x=scores, y=tokens, orientation="h", xaxis="x2", yaxis="y2", name="scores",
            marker=dict(color=[COLORS[0] if j == best else "#bbbbbb" for j in range(len(tokens))]),
            text=[f"{s:.1f}" for s in scores], textposition="outside", textfont=dict(size=theme.font_size),
            cliponaxis=False, hovertemplate=f"q('{query_token}') · k(%{{y}}) = %{{x:.2f}}<extra></extra>",
        ),
    ]
    layout = dict(
        **base_layout(f"Set by hand: what each token is, and what '{query_token}' looks for",
                      margin=dict(l=90, r=40, t=90, b=80), theme=theme),
        height=170 + 48 * len(tokens),
        showlegend=False,
        xaxis=dict(domain=left, anchor="y", title_text="feature of x", side="bottom"),
        yaxis=dict(domain=[0, 0.86], anchor="x", autorange="reversed", title_text="token"),
        xaxis2=dict(domain=right, anchor="y2", title_text="score against each key",
                    range=[min(0.0, float(scores.min())), 1.3 * float(scores.max()) + 1e-9]),
        yaxis2=dict(domain=[0, 0.86], anchor="x2", autorange="reversed", showticklabels=True),
        annotations=[panel_title("x: one row per token", left, 0.9, theme=theme),
                     panel_title(f"q('{query_token}') · k(token)", right, 0.9, theme=theme)],
    )
    return go.Figure(data=traces, layout=layout)
