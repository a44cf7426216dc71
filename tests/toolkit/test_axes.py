"""The pictures' geometry: zoomed axes keep every batch visible, band lists stay as small as the screen."""
from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from replog.toolkit.axes import MAX_BANDS, bands, linear, nice_ticks, zoomed


@given(st.lists(st.integers(0, 10**12), min_size=2, max_size=300, unique=True), st.data())
def test_a_zoomed_axis_is_monotone_keeps_its_ends_and_gives_every_interval_pixels(breaks: list[int], data) -> None:
    breaks.sort()
    focus = data.draw(st.sampled_from(breaks))
    axis = zoomed(breaks, focus, 100, 1100)
    xs = [axis.x(b) for b in breaks]
    assert xs[0] == 100 and abs(xs[-1] - 1100) < 1e-6
    gaps = np.diff(xs)
    assert (gaps >= -1e-9).all()
    after = [g for b, g in zip(breaks, gaps, strict=False) if b >= focus]
    assert all(g >= min(3.0, 1000 * 0.88 * 0.5 / max(len(after), 1)) - 1e-6 for g in after)
    if breaks[0] < focus < breaks[-1]:          # the shared history gets its fixed share, no more
        assert abs(axis.x(focus) - 100 - 120) < 1e-6


def test_a_3000_offset_stretch_at_2_58_m_is_most_of_the_zoom() -> None:
    axis = zoomed([2_579_000, 2_580_000, 2_583_000], 2_580_000, 0, 1000)
    x, w = axis.span(2_580_000, 2_583_000)
    assert w > 0.85 * 1000 and x == axis.x(2_580_000)
    assert linear(0, 2_583_000, 0, 1000).span(2_580_000, 2_583_000)[1] < 2     # what a straight axis gave


def test_bands_join_what_a_pixel_cannot_tell_apart_and_never_outgrow_the_screen() -> None:
    n = 200_000                                 # epochs alternating every batch
    first = np.arange(n, dtype=np.int64) * 10
    runs = np.stack((first, first + 10, np.arange(n) % 2))
    drawn = bands(runs, linear(0, n * 10, 0, 1000))
    assert len(drawn) <= MAX_BANDS and sum(b.w for b in drawn) > 990
    one = bands(np.array([[0, 105], [100, 200], [3, 3]]), linear(0, 200, 0, 1000))   # a 5-offset gap: 25 px
    assert [(b.first, b.end, b.epoch) for b in one] == [(0, 100, 3), (105, 200, 3)]
    tiny = bands(np.array([[0, 100], [100, 200], [3, 3]]), linear(0, 200, 0, 1000))
    assert [(b.first, b.end) for b in tiny] == [(0, 200)]


def test_nice_ticks_are_round_and_inside() -> None:
    assert nice_ticks(2_540_000, 2_583_000, 5) == [2_540_000, 2_550_000, 2_560_000, 2_570_000, 2_580_000]
    assert nice_ticks(0, 7, 6) == [0, 2, 4, 6] and nice_ticks(5, 5) == [5]
