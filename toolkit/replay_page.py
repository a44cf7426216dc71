"""The replay / repair report page, Kafka and RocketMQ: what a person opens it for, drawn.

The page renders the replay's JSON document (the one `--format json` prints:
values, tables, the transcript, and any member added to it later, see
`EXTRA_SECTIONS`) and, for the pictures, each replica's `LogView` before and
after (`replay_logs`): its log as epoch-coloured bands with its log start, high
watermark and log end marked, over the whole log; then a zoom on the region
from the last common batch to the longest log end, where every batch (message)
is drawn and truncated, lost and fetched ranges are told apart; then the
protocol as a sequence diagram.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np

from replog.toolkit import pages
from replog.toolkit.axes import Axis, Band, bands, colour, linear, zoomed
from replog.toolkit.documents import Event, Fetched, Premise, ReplayDoc, typed
from replog.toolkit.render import Columns
from replog.toolkit.replay_logs import LogView
from replog.toolkit.sequence import Diagram, describe, diagram

WIDTH, LEFT, RIGHT = 1100, 170, 44
ROW_H, STRIP_H, PAIR_GAP, GROUP_GAP, TOP = 20, 5, 6, 18, 28
ZOOM_CAP = 300            # batches (messages) drawn one by one per row in the zoom; the rest as epoch bands
MAX_TRANSCRIPT = 5000     # events listed in the transcript table
RANGE_KINDS = {"truncated": "truncated by the replay", "lost": "lost: removed and not fetched again",
               "fetched": "fetched from the leader", "hole": "hole: offsets the broker never fetches again"}


@dataclass(frozen=True)
class Section:
    """A section of the page for one member of the replay JSON, shown only when the document has it.

    To add one (the impact of a truncation, say): write `templates/sections/<member>.html.j2`, which sees
    the member's value as `data` and the whole document as `doc`, and append a `Section` here."""

    member: str
    title: str
    template: str
    prepare: str | None = None   # "module:function" turning the member's value into what the template draws


def section_data(section: Section, doc: Mapping[str, object]) -> Any:
    """What a section's template sees as `data`: the member's value, or its prepared form. (A section
    names its member as data, so the document is read here as the open object it is.)"""
    if section.prepare is None:
        return doc[section.member]
    import importlib
    module, _, name = section.prepare.partition(":")
    return getattr(importlib.import_module(module), name)(doc[section.member])


EXTRA_SECTIONS: list[Section] = [
    Section("what_if", "Which leader loses least", "sections/what_if.html.j2", "replog.toolkit.what_if_view:page_data"),
    Section("elections", "The controller's election record", "sections/elections.html.j2"),
    Section("repaired", "What repair wrote", "sections/repaired.html.j2"),
    Section("impact", "Impact on consumers, producers and transactions",
            "sections/impact.html.j2", "replog.toolkit.impact_view:page_data"),
]


@dataclass(frozen=True)
class Mark:
    kind: str         # start | hw | end | diverged
    x: float
    title: str


@dataclass(frozen=True)
class Strip:
    kind: str         # a RANGE_KINDS key
    x: float
    w: float
    title: str


@dataclass(frozen=True)
class Box:
    """One batch (message) in the zoom."""

    x: float
    w: float
    epoch: int
    tone: str         # "" | lost | fetched
    title: str

    @property
    def fill(self) -> str:
        return colour(self.epoch)


@dataclass
class Row:
    replica: str
    when: str
    leader: bool
    y: float
    bands: list[Band] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    strips: list[Strip] = field(default_factory=list)
    boxes: list[Box] = field(default_factory=list)
    faint: list[Band] = field(default_factory=list)      # zoom: the part not drawn batch by batch
    note: str = ""


@dataclass
class Plot:
    name: str
    rows: list[Row]
    height: float
    ticks: list[tuple[float, str]]
    regions: list[Strip]
    x0: float
    x1: float
    caption: str = ""
    row_h: int = ROW_H
    strip_h: int = STRIP_H


@dataclass(frozen=True)
class Region:
    """The zoom: from the last common batch (`start`) through the first change (`focus`) to the longest log end."""

    start: int
    focus: int
    end: int


def region(doc: ReplayDoc, pairs: Sequence[tuple[LogView, LogView]]) -> Region | None:
    """Where the replicas part: the lowest divergence, truncation, hole or changed log end; None when the
    replay changes nothing."""
    points: list[int] = []
    for r in doc["replicas"]:
        points += [p for p in (r["diverged_at"], r["truncated_to"]) if p is not None]
        if r["log_end_offset_after"] != r["log_end_offset_before"]:
            points.append(min(r["log_end_offset_after"], r["log_end_offset_before"]))
        points += [h["first_offset"] for h in r.get("holes") or []]
    if not points:
        return None
    focus = min(points)
    end = max(focus + 1, *(v.log_end for pair in pairs for v in pair))
    leader = next((b for b, _ in pairs if b.replica == doc["leader"]), pairs[0][0])
    start = leader.unit_before(focus)
    return Region(focus if start is None or start >= focus else start, focus, end)


def _marks(view: LogView, axis: Axis, diverged_at: int | None) -> list[Mark]:
    out = [Mark("start", axis.x(view.log_start), f"log start {view.log_start:,}"),
           Mark("end", axis.x(view.log_end), f"log end {view.log_end:,}")]
    if view.high_watermark is not None:
        out.append(Mark("hw", axis.x(view.high_watermark), f"high watermark {view.high_watermark:,}"))
    if diverged_at is not None and view.when == "before":
        out.append(Mark("diverged", axis.x(diverged_at), f"diverges from the leader at {diverged_at:,}"))
    return [m for m in out if axis.x0 - 0.5 <= m.x <= axis.x1 + 0.5]


def _strips(view: LogView, axis: Axis) -> list[Strip]:
    out = []
    for kind, a, b in view.ranges:
        if b > axis.lo and a < axis.hi:
            x, w = axis.span(max(a, axis.lo), min(b, axis.hi), min_px=3)
            out.append(Strip(kind, x, w, f"{RANGE_KINDS[kind]}: {a:,}..{b - 1:,} ({b - a:,} offsets)"))
    return out


def _layout(pairs: Sequence[tuple[LogView, LogView]], leader: str) -> list[Row]:
    rows, y = [], TOP
    for before, after in pairs:
        for view in (before, after):
            rows.append(Row(view.replica, view.when, view.replica == leader, y))
            y += ROW_H + STRIP_H + PAIR_GAP
        y += GROUP_GAP - PAIR_GAP
    return rows


def _views(pairs: Sequence[tuple[LogView, LogView]]) -> list[LogView]:
    return [v for pair in pairs for v in pair]


def overview(doc: ReplayDoc, pairs: Sequence[tuple[LogView, LogView]], zoom: Region | None) -> Plot:
    """Every replica's whole log, before and after, on one straight axis."""
    views = _views(pairs)
    lo, hi = min(v.log_start for v in views), max(v.log_end for v in views)
    axis = linear(lo, hi, LEFT, WIDTH - RIGHT)
    diverged = {r["name"]: r["diverged_at"] for r in doc["replicas"]}
    rows = _layout(pairs, doc["leader"])
    for row, view in zip(rows, views, strict=True):
        row.bands = bands(view.runs, axis)
        row.marks = _marks(view, axis, diverged.get(view.replica))
        row.strips = _strips(view, axis)
    regions = []
    if zoom is not None:
        x, w = axis.span(zoom.start, zoom.end, min_px=8)
        regions.append(Strip("zoom", x, w, f"offsets {zoom.start:,}..{zoom.end - 1:,}: drawn batch by batch below"))
    return Plot("overview", rows, rows[-1].y + ROW_H + STRIP_H + 30, axis.ticks(), regions, axis.x0, axis.x1,
                f"offsets {lo:,} to {hi:,}, one pixel ≈ {(hi - lo) / (axis.x1 - axis.x0):,.1f} offsets")


def zoom_plot(doc: ReplayDoc, pairs: Sequence[tuple[LogView, LogView]], zoom: Region,
              unit_name: str) -> Plot:
    """The region around the divergence, every batch at least a few pixels wide, rows aligned by offset."""
    views = _views(pairs)
    drawn = [v.units(zoom.start, zoom.end, ZOOM_CAP) for v in views]
    breaks = {zoom.start, zoom.focus, zoom.end}
    for (units, _), view in zip(drawn, views, strict=True):
        for first, end, _, _ in units:
            breaks.update((max(first, zoom.start), min(end, zoom.end)))
        breaks.update(o for o in (view.log_end, view.high_watermark) if o is not None and zoom.start <= o <= zoom.end)
        breaks.update(min(max(o, zoom.start), zoom.end) for _, a, b in view.ranges for o in (a, b))
    axis = zoomed(sorted(breaks), zoom.focus, LEFT, WIDTH - RIGHT)
    diverged = {r["name"]: r["diverged_at"] for r in doc["replicas"]}
    rows = _layout(pairs, doc["leader"])
    for row, view, (units, more) in zip(rows, views, drawn, strict=True):
        tone = {k: [(a, b) for kind, a, b in view.ranges if kind == k] for k in ("lost", "fetched")}
        for first, end, epoch, title in units:
            x, w = axis.span(max(first, zoom.start), min(end, zoom.end), min_px=1)
            hit = next((k for k, rs in tone.items() if any(a < end and first < b for a, b in rs)), "")
            row.boxes.append(Box(x, w, epoch, hit, title))
        if more:
            rest = units[-1][1] if units else zoom.start
            row.faint = bands(view.runs, Axis(*_clip(axis, rest)))
            row.note = f"{more:,} more {unit_name} from {rest:,} drawn as epoch bands"
        row.marks = _marks(view, axis, diverged.get(view.replica))
        row.strips = _strips(view, axis)
    regions = [Strip("context", axis.x0, axis.x(zoom.focus) - axis.x0, f"shared history up to {zoom.focus:,}"),
               Strip("divergent", axis.x(zoom.focus), axis.x1 - axis.x(zoom.focus),
                     f"offsets {zoom.focus:,}..{zoom.end - 1:,}: where the replicas part")]
    shown = sum(len(u) for u, _ in drawn)
    return Plot("zoom", rows, rows[-1].y + ROW_H + STRIP_H + 30, axis.knot_ticks(sorted(breaks), 80), regions,
                axis.x0, axis.x1, f"offsets {zoom.start:,} to {zoom.end:,}; {shown:,} {unit_name} drawn, each at "
                f"least a few pixels wide (the axis is stretched where batches are short); the shared history "
                f"before {zoom.focus:,} is compressed to the grey part")


def _clip(axis: Axis, lo: int) -> tuple[np.ndarray, np.ndarray]:
    """The knots of `axis` from offset `lo` on (for bands drawn on part of a zoom)."""
    keep = axis.knots >= lo
    knots = np.concatenate(([lo], axis.knots[keep]))
    return knots, np.interp(knots, axis.knots, axis.xs)


def epochs_drawn(plots: Sequence[Plot]) -> list[tuple[int, str]]:
    """(epoch, colour) of every epoch any band or batch shows: the legend."""
    seen = {b.epoch for p in plots for r in p.rows for b in (*r.bands, *r.faint)}
    seen |= {b.epoch for p in plots for r in p.rows for b in r.boxes}
    return [(e, colour(e)) for e in sorted(seen)]


def ranges_drawn(plots: Sequence[Plot]) -> dict[str, str]:
    """The legend of the ranges some row shows (truncated, lost, fetched, hole), in that order."""
    kinds = {s.kind for p in plots for r in p.rows for s in r.strips}
    return {k: words for k, words in RANGE_KINDS.items() if k in kinds}


def story(doc: ReplayDoc) -> list[tuple[str, str, str]]:
    """(replica, tone, sentence) per replica: what the replay does to it, in words."""
    out = []
    for r in doc["replicas"]:
        parts = []
        if r["name"] == doc["leader"]:
            parts.append("leads; keeps its log")
        if r["diverged_at"] is not None:
            parts.append(f"differs from the leader from offset {r['diverged_at']:,}")
        if compaction := r.get("compaction_difference"):
            parts.append(f"compacted differently below {compaction['up_to']:,} (same records kept)")
        if r["truncated_to"] is not None:
            parts.append(f"truncates to {r['truncated_to']:,}")
        lost = r["lost"]
        if lost["records"]:
            parts.append(f"loses {lost['records']:,} records ({lost['first_offset']:,}..{lost['last_offset']:,}, "
                         f"{lost['bytes']:,} bytes)")
        if any(r["fetched"].values()):
            parts.append("fetches " + fetched_words(r["fetched"]))
        parts.append(f"ends at {r['log_end_offset_after']:,} (was {r['log_end_offset_before']:,})")
        tone = "harm" if lost["records"] or r.get("failed") or r.get("stall") else "ok"
        out.append((r["name"], tone, "; ".join(parts) + "."))
    return out


def fetched_words(f: Fetched) -> str:
    """A replay's `fetched` member in words: Kafka's records, batches and offsets; RocketMQ's bytes and frames."""
    if "records" in f:
        span = f" ({f['first_offset']:,}..{f['last_offset']:,})" if f.get("first_offset") is not None else ""
        return f"{f['records']:,} records in {f['batches']:,} batches{span}" if f["records"] else "nothing"
    if "frames" in f:
        return f"{f['bytes']:,} bytes in {f['frames']:,} frames" if f["frames"] else "nothing"
    return pages.value(f)


def hazards(doc: ReplayDoc) -> list[str]:
    """What the broker's own protocol does wrong to a replica: a failed fetcher, a stall, holes."""
    out = []
    for r in doc["replicas"]:
        if failed := r.get("failed"):
            out.append(f"{r['name']} would FAIL ({failed['error']}): {failed['reason']}")
        if stall := r.get("stall"):
            out.append(f"{r['name']} stalls ({stall['cause']}): {stall['explanation']}")
        for h in r.get("holes") or []:
            out.append(f"{r['name']}: offsets {h['first_offset']:,}..{h['last_offset']:,} are a hole the broker's "
                       "own truncation leaves, never fetched again")
    return out


def premise_notes(premise: Premise | None) -> list[str]:
    """What the page says under the premise's sentence: each running follower's reason, the lagging
    checkpoint figures (none for RocketMQ, whose replay states no premise)."""
    from replog.toolkit.premise_view import follower_notes, lag_notes

    return [] if premise is None else follower_notes(premise) + lag_notes(premise)


class TranscriptRow(TypedDict):
    """One event as the page's transcript table lists it."""

    step: int
    replica: str
    to: str | None
    text: str
    prose: str


def transcript_rows(events: Sequence[Event]) -> list[TranscriptRow]:
    return [TranscriptRow(step=e["step"], replica=e["replica"], to=e.get("to"), text=describe(e)[0],
                          prose=describe(e)[1]) for e in events[:MAX_TRANSCRIPT]]


def render_replay(document: Mapping[str, Any], pairs: Sequence[tuple[LogView, LogView]], columns: Columns, *,
                  title: str, unit_name: str, offset_name: str) -> str:
    """The whole page of a replay's (or repair's) JSON `document`. `columns` is the replay's table as the
    terminal declares it; `unit_name` what the zoom draws one by one (batches, messages); `offset_name` what
    an offset is (offset, physical offset)."""
    doc = typed(ReplayDoc, document)
    zoom = region(doc, pairs)
    plots = [overview(doc, pairs, zoom)]
    if zoom is not None:
        plots.append(zoom_plot(doc, pairs, zoom, unit_name))
    seq: Diagram = diagram(doc["events"], [r["name"] for r in doc["replicas"]], doc["leader"], WIDTH)
    sections = [(s, section_data(s, doc)) for s in EXTRA_SECTIONS if doc.get(s.member)]  # absent/null/empty: none
    return pages.render("replay.html.j2", doc=doc, title=title, plots=plots, epochs=epochs_drawn(plots),
                        ranges=ranges_drawn(plots), seq=seq, story=story(doc), hazards=hazards(doc),
                        replicas=pages.table(columns, doc["replicas"]), transcript=transcript_rows(doc["events"]),
                        transcript_elided=max(0, len(doc["events"]) - MAX_TRANSCRIPT), sections=sections,
                        premise_notes=premise_notes(doc.get("premise")),
                        offset_name=offset_name, unit_name=unit_name, width=WIDTH, left=LEFT)
