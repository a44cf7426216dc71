"""Geometry of the report pictures: offsets to pixels, tick marks, epoch bands thinned to what a screen shows.

An `Axis` maps offsets (Kafka logical offsets or RocketMQ physical offsets) to x
pixels through knots, piecewise linearly. The overview of a whole log is one
straight piece; the zoom around a divergence gives the shared context a fixed
share of the width and every batch at least a few pixels, so a 3,000-record
divergence at offset 2.58 M is as wide as the page, not one pixel. Everything
here works on numpy columns or small lists: a band list never outgrows the
pixels it is drawn on, whatever the size of the log.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#e15759", "#ff9da7",
           "#86bcb6")
NO_EPOCH = "#b8b8b8"        # legacy (v0/v1) batches, or a store without epochs
MAX_BANDS = 2000            # bands drawn per row before they are binned by pixel column
GAP_PX = 0.5                # runs of one epoch closer than this are drawn as one band


def colour(epoch: int | None) -> str:
    """The colour of an epoch, the same in every row, legend and page."""
    return NO_EPOCH if epoch is None or epoch < 0 else PALETTE[epoch % len(PALETTE)]


def short(n: int | float | None) -> str:
    """An offset or count for an axis label: 1,234 below 100,000, else 2.58 M / 4.1 G."""
    if n is None:
        return "—"
    if abs(n) < 100_000:
        return f"{int(n):,}"
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:,}"


@dataclass(frozen=True)
class Axis:
    """Offsets to x pixels through increasing knots (offset, x); outside them, clamped."""

    knots: np.ndarray   # offsets, increasing
    xs: np.ndarray      # pixels, non-decreasing
    lo: int = field(init=False)      # the first and last knot: the offsets the axis spans
    hi: int = field(init=False)
    x0: float = field(init=False)    # the first and last pixel: where spans are kept inside
    x1: float = field(init=False)

    def __post_init__(self) -> None:
        """The ends of both columns, read once as plain numbers."""
        ends = {"lo": int(self.knots[0]), "hi": int(self.knots[-1]), "x0": float(self.xs[0]), "x1": float(self.xs[-1])}
        for name, value in ends.items():
            object.__setattr__(self, name, value)   # frozen: set as dataclasses' own __init__ does

    def x(self, offset: float) -> float:
        return float(np.interp(offset, self.knots, self.xs))

    def span(self, first: float, end: float, min_px: float = 0.0) -> tuple[float, float]:
        """(x, width) of offsets [first, end), at least `min_px` wide (kept inside the axis)."""
        a, b = self.x(first), self.x(end)
        if b - a < min_px:
            a = min(max(self.x0, (a + b - min_px) / 2), self.x1 - min_px)
            b = a + min_px
        return a, b - a

    def ticks(self, count: int = 6) -> list[tuple[float, str]]:
        """(x, label) of round offsets along a straight axis (for a zoomed one, see `knot_ticks`); labels are
        exact, since neighbouring ticks of a log at 2.58 M differ only in the fourth digit."""
        return [(self.x(t), f"{t:,}") for t in nice_ticks(self.lo, self.hi, count)]

    def knot_ticks(self, offsets: Sequence[int], min_gap: float = 60.0) -> list[tuple[float, str]]:
        """(x, label) of chosen offsets (batch boundaries, markers), skipping any too close to the last one."""
        out: list[tuple[float, str]] = []
        for o in sorted(set(offsets)):
            x = self.x(o)
            if not out or x - out[-1][0] >= min_gap:
                out.append((x, f"{o:,}"))
        return out


def linear(lo: int, hi: int, x0: float, x1: float) -> Axis:
    """One straight piece: [lo, hi] onto [x0, x1] (hi > lo is enforced)."""
    return Axis(np.array([lo, max(hi, lo + 1)], dtype=np.float64), np.array([x0, x1], dtype=np.float64))


def zoomed(breaks: Sequence[int], focus: int, x0: float, x1: float, context_share: float = 0.12,
           min_px: float = 3.0) -> Axis:
    """An axis over sorted `breaks` (batch boundaries of every row, markers) for the zoom around a divergence.

    Offsets before `focus` (the last common batch: context) share `context_share` of the width; from
    `focus` on, every interval between two breaks gets at least `min_px` (less only when there are more
    intervals than pixels allow) and the rest of the width in proportion to its length, so the rows stay
    aligned offset for offset and no batch is thinner than a few pixels."""
    knots = np.unique(np.asarray(breaks, dtype=np.float64))
    if len(knots) < 2:
        return linear(int(knots[0]) if len(knots) else 0, int(knots[0]) + 1 if len(knots) else 1, x0, x1)
    focus = min(max(focus, knots[0]), knots[-1])
    width = x1 - x0
    ctx_w = 0.0 if focus <= knots[0] else width if focus >= knots[-1] else width * context_share
    xs = np.empty_like(knots)
    before = knots <= focus
    xs[before] = x0 + _spread(knots[before], ctx_w, 0.0)
    after = knots[~before]
    if len(after):
        tail = np.concatenate(([focus], after))
        xs[~before] = x0 + ctx_w + _spread(tail, width - ctx_w, min_px)[1:]
    return Axis(knots, xs)


def _spread(knots: np.ndarray, width: float, min_px: float) -> np.ndarray:
    """Cumulative x of `knots` from 0 over `width`: each gap `min_px` (shrunk to fit) plus its share."""
    if len(knots) < 2:
        return np.zeros(len(knots))
    gaps = np.diff(knots)
    floor = min(min_px, width * 0.5 / len(gaps))
    share = (width - floor * len(gaps)) * gaps / max(gaps.sum(), 1.0)
    return np.concatenate(([0.0], np.cumsum(floor + share)))


def nice_ticks(lo: float, hi: float, count: int = 6) -> list[int]:
    """About `count` round numbers (1, 2 or 5 times a power of ten apart) inside [lo, hi]."""
    if hi <= lo:
        return [int(lo)]
    raw = (hi - lo) / max(count, 1)
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    step = next((m * mag for m in (1, 2, 5, 10) if m * mag >= raw), 10 * mag)
    step = max(int(step), 1)
    first = math.ceil(lo / step) * step
    return list(range(int(first), int(hi) + 1, step))


@dataclass(frozen=True)
class Band:
    """A stretch of one epoch as drawn: pixels, and the offsets it stands for (for its tooltip)."""

    x: float
    w: float
    epoch: int
    first: int
    end: int          # exclusive

    @property
    def fill(self) -> str:
        return colour(self.epoch)


def bands(runs: np.ndarray, axis: Axis) -> list[Band]:
    """Epoch runs (rows: first offset, end offset exclusive, epoch) as bands on `axis`.

    Runs of one epoch separated by less than half a pixel become one band; if that still leaves more than
    `MAX_BANDS` (epochs alternating faster than pixels), each pixel column shows the epoch at its centre."""
    runs = np.asarray(runs, dtype=np.int64).reshape(3, -1)
    keep = (runs[1] > axis.lo) & (runs[0] < axis.hi)
    first, end, epoch = np.maximum(runs[0, keep], axis.lo), np.minimum(runs[1, keep], axis.hi), runs[2, keep]
    if not len(first):
        return []
    xa = np.interp(first, axis.knots, axis.xs)
    xb = np.interp(end, axis.knots, axis.xs)
    joins = (epoch[1:] == epoch[:-1]) & (xa[1:] - xb[:-1] < GAP_PX)
    heads = np.flatnonzero(np.concatenate(([True], ~joins)))
    tails = np.concatenate((heads[1:], [len(first)])) - 1
    if len(heads) > MAX_BANDS:
        return _binned(first, end, epoch, axis)
    return [Band(float(xa[h]), max(float(xb[t] - xa[h]), 0.5), int(epoch[h]), int(first[h]), int(end[t]))
            for h, t in zip(heads.tolist(), tails.tolist(), strict=True)]


def _binned(first: np.ndarray, end: np.ndarray, epoch: np.ndarray, axis: Axis) -> list[Band]:
    """One epoch per pixel column (the run under its centre), equal neighbours joined."""
    cols = np.arange(math.floor(axis.x0), math.ceil(axis.x1), dtype=np.float64) + 0.5
    at = np.interp(cols, axis.xs, axis.knots)
    idx = np.searchsorted(first, at, side="right") - 1
    inside = (idx >= 0) & (at < end[np.maximum(idx, 0)])
    code = np.where(inside, epoch[np.maximum(idx, 0)], -2)
    out: list[Band] = []
    start = 0
    for i in range(1, len(cols) + 1):
        if i == len(cols) or code[i] != code[start]:
            if code[start] != -2:
                lo, hi = float(at[start]), float(at[i - 1])
                out.append(Band(float(cols[start] - 0.5), float(i - start), int(code[start]), int(lo), int(hi) + 1))
            start = i
    return out
