"""Tests for mha_classroom.widgets.projection: head switches move the output of 'changed' in place."""

from __future__ import annotations

import numpy as np
import pytest

from mha_classroom.widgets.projection import HeadSwitches, head_switches
from mha_core.attention import output_projection
from mha_core.examples import TOKENS, demo_layer, token_vectors

T_CHANGED = TOKENS.index("changed")


@pytest.fixture()
def switches() -> HeadSwitches:
    return head_switches(d_model=16, n_heads=4, seed=0)


def expected_output(heads_off) -> np.ndarray:
    layer = demo_layer(16, 4, seed=0)
    result = layer(token_vectors(16, seed=0)[None])
    return output_projection(result.head_outputs, layer.w_o, layer.b_o, heads_off=heads_off)[0, T_CHANGED]


def test_there_is_one_switch_per_head_and_all_start_on(switches):
    assert [box.description for box in switches.switches] == ["head 1", "head 2", "head 3", "head 4"]
    assert all(box.value for box in switches.switches)
    np.testing.assert_allclose(switches.figure.data[0].y, expected_output(None))


@pytest.mark.parametrize("off", [0, 1, 2, 3])
def test_switching_a_head_off_redraws_the_same_figure_with_output_projection_numbers(switches, off):
    figure = switches.figure
    switches.switches[off].value = False
    heads_off = np.zeros(4, bool)
    heads_off[off] = True
    assert switches.figure is figure
    np.testing.assert_array_equal(switches.heads_off, heads_off)
    np.testing.assert_allclose(figure.data[0].y, expected_output(heads_off))
    np.testing.assert_allclose(figure.data[1].y, expected_output(None))  # all heads: unchanged
    np.testing.assert_allclose(figure.data[2 + off].y, np.zeros(16))
    assert figure.data[2 + off].name == f"head {off + 1} (off)"
    # Switching it back restores the all-heads output exactly.
    switches.switches[off].value = True
    np.testing.assert_allclose(figure.data[0].y, expected_output(None))


def test_with_every_head_off_only_the_bias_is_left_and_a_message_says_so(switches):
    for box in switches.switches:
        box.value = False
    np.testing.assert_allclose(switches.figure.data[0].y, switches.parts.layer.b_o)
    assert "bias b_o" in switches.message.value
    switches.switches[2].value = True
    assert switches.message.value == ""
    np.testing.assert_allclose(switches.figure.data[0].y, expected_output([0, 1, 3]))  # only head 3 (index 2) on


def test_the_figure_has_a_fixed_width_because_a_figure_widget_does_not_follow_its_container(switches):
    from mha_core.figures._style import WIDGET_WIDTH as FIGURE_WIDTH

    switches.switches[0].value = False
    assert switches.figure.layout.width == FIGURE_WIDTH


def test_an_unknown_token_is_refused_with_the_sentences_tokens():
    with pytest.raises(ValueError, match=r"token='nope' is not a valid choice; valid values are 'the', 'cache', 'key', "
                                         r"'changed', 'after', 'deploy'"):
        head_switches(token="nope")
    with pytest.raises(TypeError, match=r"token must be one of 'the', .*; got 3 \(int\)"):
        head_switches(token=3)
