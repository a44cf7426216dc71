"""The fleet report page: where, among thousands of partitions, the few bad ones are.

A broker x topic heat map of findings and one of divergence (click a cell to
filter the tables to that broker and topic), bar charts with one unit per axis
that leave out series and rows with nothing to show, and the report's tables,
sortable and filterable, as long as the scan found them (up to `PAGE_ROWS`).
Everything is drawn from the report's JSON document (`FleetReport.to_dict`).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from replog.formats.codes import CODES
from replog.toolkit import pages
from replog.toolkit.axes import nice_ticks, short
from replog.toolkit.render import Columns

if TYPE_CHECKING:
    from replog.spark.report import BrokerTopic, FleetReportDoc, Section

PAGE_ROWS = 20_000           # rows per table on the page; the terminal and JSON list 20
MAX_TOPICS = 60              # heat-map columns (the worst topics); the tables list every one
MAX_BARS = 25                # rows per bar chart (the largest)
CELL_MIN, CELL_MAX, MAP_LEFT, MAP_TOP, MAP_RIGHT = 18, 34, 160, 130, 110
CHART_LEFT, CHART_W, BAR_H = 250, 560, 14
RED, AMBER, BLUE, CLEAN = (198, 40, 40), (230, 140, 0), (41, 98, 255), "#e9edf1"
SEVERITY_COLOURS = {"error": "#c62828", "warning": "#e68a00", "info": "#78909c"}
FILTERED_TABLES = "divergent-table lagging-table damaged_segments-table worst_partitions-table"


def _shade(rgb: tuple[int, int, int], value: float, peak: float) -> str:
    """`rgb` at a strength that grows with log(value) up to `peak` (never as pale as a clean cell)."""
    t = 0.25 + 0.75 * math.log1p(value) / math.log1p(max(peak, 1))
    r, g, b = (round(255 - (255 - c) * t) for c in rgb)
    return f"#{r:02x}{g:02x}{b:02x}"


@dataclass(frozen=True)
class Cell:
    x: float
    y: float
    fill: str
    title: str
    filter: str
    value: int


@dataclass
class HeatMap:
    name: str
    title: str
    width: float
    height: float
    brokers: Sequence[tuple[float, str]]
    topics: Sequence[tuple[float, str]]
    cells: list[Cell]
    legend: list[tuple[str, str]]
    elided: int
    cell: float
    left: float = MAP_LEFT
    top: float = MAP_TOP


def _topic(name: str | None) -> str:
    return "—" if name is None else name


def heat_maps(cells: Sequence[BrokerTopic]) -> list[HeatMap]:
    """The findings map and the divergence map over the same brokers (rows) and worst topics (columns)."""
    if not cells:
        return []
    brokers = sorted({c["broker"] for c in cells})
    worst: dict[str, tuple[int, int, int, int]] = {}
    for c in cells:
        w = worst.get(_topic(c["topic"]), (0, 0, 0, 0))
        worst[_topic(c["topic"])] = (w[0] + c["errors"], w[1] + c["divergent"], w[2] + c["warnings"],
                                     w[3] + c["lagging"])
    topics = sorted(worst, key=lambda t: (tuple(-v for v in worst[t]), t))
    shown = topics[:MAX_TOPICS]
    cell = max(CELL_MIN, min(CELL_MAX, 320 // len(shown)))        # few topics: cells large enough to click
    ys = {b: MAP_TOP + i * cell for i, b in enumerate(brokers)}
    xs = {t: MAP_LEFT + i * cell for i, t in enumerate(shown)}
    width, height = MAP_LEFT + len(shown) * cell + MAP_RIGHT, MAP_TOP + len(brokers) * cell + 10
    peak = {"errors": max(c["errors"] for c in cells), "warnings": max(c["warnings"] for c in cells),
            "divergent": max(c["divergent"] for c in cells), "lagging": max(c["lagging"] for c in cells)}
    finds, parts = [], []
    for c in cells:
        t = _topic(c["topic"])
        if t not in xs:
            continue
        where, flt = f"{c['broker']} / {t}: {c['partitions']:,} partitions", f"{c['broker']} {c['topic'] or ''}".strip()
        fill = (_shade(RED, c["errors"], peak["errors"]) if c["errors"] else
                _shade(AMBER, c["warnings"], peak["warnings"]) if c["warnings"] else CLEAN)
        finds.append(Cell(xs[t], ys[c["broker"]], fill, f"{where}; {c['errors']:,} errors, {c['warnings']:,} warnings",
                          flt, c["errors"] + c["warnings"]))
        fill = (_shade(RED, c["divergent"], peak["divergent"]) if c["divergent"] else
                _shade(BLUE, c["lagging"], peak["lagging"]) if c["lagging"] else CLEAN)
        why = f"{where}; diverges in {c['divergent']:,} replica sets, lags in {c['lagging']:,}"
        parts.append(Cell(xs[t], ys[c["broker"]], fill, why, flt, c["divergent"] + c["lagging"]))
    rows, cols = [(ys[b], b) for b in brokers], [(xs[t], t) for t in shown]
    elided = len(topics) - len(shown)
    return [
        HeatMap("findings", "Findings by broker and topic", width, height, rows, cols, finds,
                [("#c62828", "errors"), ("#e68a00", "warnings only"), (CLEAN, "clean")], elided, cell),
        HeatMap("divergence", "Divergence by broker and topic", width, height, rows, cols, parts,
                [("#c62828", "replica diverges"), ("#2962ff", "replica lags"), (CLEAN, "in step")], elided, cell),
    ]


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    w: float
    fill: str
    title: str
    value: float


@dataclass
class Chart:
    title: str
    unit: str
    height: float
    labels: list[tuple[float, str]]
    bars: list[Bar]
    ticks: list[tuple[float, str]]
    legend: list[tuple[str, str]]
    note: str = ""
    axis_y: float = 0.0
    left: float = CHART_LEFT
    plot_w: float = CHART_W
    width: float = field(default=CHART_LEFT + CHART_W + 60)


def bar_chart(title: str, unit: str, labels: Sequence[str], series: Sequence[tuple[str, str, Sequence[float]]]
              ) -> Chart | None:
    """Grouped horizontal bars in one `unit`; series that are all zero and rows with nothing are left out,
    the largest `MAX_BARS` rows kept; None when nothing is left to draw."""
    series = [s for s in series if any(s[2])]
    rows = [i for i in range(len(labels)) if any(s[2][i] for s in series)]
    if not rows:
        return None
    rows.sort(key=lambda i: -max(s[2][i] for s in series))
    kept = rows[:MAX_BARS]
    peak = max(s[2][i] for s in series for i in kept)
    group = BAR_H * len(series) + 8
    out: list[Bar] = []
    for k, i in enumerate(kept):
        for j, (name, fill, values) in enumerate(series):
            v = values[i]
            out.append(Bar(CHART_LEFT, 24 + k * group + j * BAR_H, CHART_W * v / peak if v else 0, fill,
                           f"{labels[i]}: {v:,} {unit} ({name})", v))
    axis_y = 24 + len(kept) * group + 4
    ticks = [(CHART_LEFT + CHART_W * t / peak, short(t)) for t in nice_ticks(0, peak, 5)]
    note = f"{len(rows) - len(kept):,} more with fewer {unit}" if len(rows) > len(kept) else ""
    return Chart(title, unit, axis_y + 34, [(24 + k * group + group / 2 - 4, labels[i]) for k, i in enumerate(kept)],
                 out, ticks, [(name, fill) for name, fill, _ in series] if len(series) > 1 else [], note, axis_y)


def charts(doc: FleetReportDoc) -> tuple[list[Chart], list[str]]:
    """The report's charts, and a sentence for each that had nothing to draw."""
    brokers, topics = doc["brokers"], doc["topics"]
    codes = list(doc["finding_codes"].items())
    wanted = [
        ("Findings per broker", "findings", [b["broker"] for b in brokers],
         [("errors", "#c62828", [b["errors"] for b in brokers]),
          ("warnings", "#e68a00", [b["warnings"] for b in brokers])],
         "No broker has errors or warnings."),
        ("Replica spread per topic", "offsets", [t["topic"] for t in topics],
         [("largest log-end spread", "#2962ff", [t["max_leo_spread"] for t in topics]),
          ("largest high-watermark spread", "#7d3c98", [t["max_hw_spread"] for t in topics])],
         "Every topic's replicas end at the same offsets."),
        ("Divergent replica sets per topic", "replica sets", [t["topic"] for t in topics],
         [("divergent", "#c62828", [t["divergent"] for t in topics])], "No replica set diverges."),
        ("Records at risk per topic", "records", [t["topic"] for t in topics],
         [("at risk", "#f28e2b", [t["records_at_risk"] for t in topics])], "No records are at risk."),
        ("Findings by code", "findings", [c for c, _ in codes],
         [("findings", "#78909c", [n for _, n in codes])], "No findings."),
    ]
    drawn, empty = [], []
    for title, unit, labels, series, nothing in wanted:
        chart = bar_chart(title, unit, labels, series)
        if chart is None:
            empty.append(nothing)
        else:
            if title == "Findings by code":
                chart.bars = [Bar(b.x, b.y, b.w, SEVERITY_COLOURS.get(_severity(lbl), b.fill), b.title, b.value)
                              for b, (_, lbl) in zip(chart.bars, chart.labels, strict=True)]
            drawn.append(chart)
    return drawn, empty


def _severity(code: str) -> str:
    known = CODES.get(code)
    return known.severity if known else "info"


def render_fleet(doc: FleetReportDoc, sections: Sequence[tuple[str, Section, Columns]], codes: Columns) -> str:
    """The page; `sections` are the report's (title, member, columns) tables as the terminal declares them."""
    drawn, empty = charts(doc)
    tables = []
    for title, member, columns in sections:
        rows = doc.get(member) or []
        total = {"divergent": "divergent_replica_sets", "lagging": "lagging_replica_sets",
                 "damaged_segments": "damaged_segments", "stores": "stores"}.get(member)
        tables.append({"id": f"{member}-table", "title": title[:1].upper() + title[1:],
                       "table": pages.table(columns, rows), "count": len(rows),
                       "total": doc["totals"].get(total, len(rows)) if total else len(rows)})
    code_rows = [{"code": c, "count": n} for c, n in doc["finding_codes"].items()]
    tables.append({"id": "codes-table", "title": "Findings by code", "table": pages.table(codes, code_rows),
                   "count": len(code_rows), "total": len(code_rows)})
    return pages.render("fleet.html.j2", doc=doc, t=doc["totals"], maps=heat_maps(doc.get("broker_topics") or []),
                        charts=drawn, empty=empty, tables=tables, filtered_tables=FILTERED_TABLES,
                        max_topics=MAX_TOPICS)
