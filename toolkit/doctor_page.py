"""The doctor page: where in each file the damage is, grouped by finding code.

For every code, one row per file it was found in: the file's bytes as a bar,
each finding a mark at its byte position (a damaged tail shaded to the end of
the file), hover for the message. Then every finding in one sortable,
filterable table. Drawn from doctor's JSON document (`DoctorReport.to_dict`).
"""
from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from replog.formats.codes import CODES
from replog.toolkit import pages
from replog.toolkit.axes import short
from replog.toolkit.documents import DoctorReport, Finding
from replog.toolkit.render import Column, Columns, thousands

WIDTH, LEFT, RIGHT, ROW_H = 1100, 330, 80, 26
MAX_FILES = 40           # rows per code; the table lists every finding
TABLE_ROWS = 20_000      # findings listed in the table (errors first, as doctor orders them)
SEVERITY_COLOURS = {"error": "#c62828", "warning": "#e68a00", "info": "#607d8b"}
_RANK = {"error": 0, "warning": 1, "info": 2}


def reaches_end(code: str) -> bool:
    """A finding about a file's tail (torn, zero-filled, dirty, trailing bytes): the damage runs from its
    position to the end of the file, as the code's explanation says (`formats.codes`)."""
    return code.endswith("_TAIL") or code == "KAFKA_TRAILING_BYTES"


@dataclass(frozen=True)
class Mark:
    x: float
    w: float
    title: str


@dataclass
class FileRow:
    label: str
    path: str
    y: float
    size: int
    marks: list[Mark]


@dataclass
class CodeGroup:
    code: str
    severity: str
    explanation: str
    count: int
    files: int
    rows: list[FileRow]
    height: float
    unplaced: int           # findings of this code without a byte position (or in a file not read)
    elided: int             # files with this code not drawn

    @property
    def colour(self) -> str:
        return SEVERITY_COLOURS.get(self.severity, "#607d8b")


def _marks(findings: Sequence[tuple[int, Finding]], size: int) -> list[Mark]:
    """One mark per pixel column that holds findings, each with its byte position (their count and first
    message in its tooltip)."""
    x0, w = LEFT, WIDTH - LEFT - RIGHT
    pos = np.array([at for at, _ in findings], dtype=np.float64)
    cols = np.minimum(np.floor(pos / max(size, 1) * w), w - 1).astype(np.int64)
    columns: dict[int, tuple[tuple[int, Finding], int]] = {}
    for placed, col in zip(findings, cols.tolist(), strict=True):
        shown, n = columns.get(col, (placed, 0))
        columns[col] = (shown, n + 1)
    out = []
    for col, ((at, first), n) in sorted(columns.items()):
        end = size if reaches_end(first["code"]) else None
        width = max(2.0, (end - at) / max(size, 1) * w) if end is not None else 2.0
        more = f" (and {n - 1:,} more here)" if n > 1 else ""
        where = f"byte {at:,}" + (f", offset {first['offset']:,}" if first["offset"] is not None else "")
        out.append(Mark(x0 + col, min(width, x0 + w - (x0 + col)), f"{where}: {first['message']}{more}"))
    return out


def _label(path: str, root: str) -> str:
    rel = os.path.relpath(path, root) if root else path
    return rel if not rel.startswith("..") else path


def code_groups(doc: DoctorReport) -> list[CodeGroup]:
    """Findings by code, errors first, then the most frequent."""
    sizes = {i["path"]: i["size"] for i in doc["inputs"]}
    root = os.path.commonpath([os.path.dirname(p) for p in sizes]) if sizes else ""
    by_code: dict[str, list[Finding]] = defaultdict(list)
    for f in doc["findings"]:
        by_code[f["code"]].append(f)
    groups = []
    for code, found in by_code.items():
        by_file: dict[str, list[tuple[int, Finding]]] = defaultdict(list)
        unplaced = 0
        for f in found:
            if f["position"] is None or sizes.get(f["path"]) is None:
                unplaced += 1
            else:
                by_file[f["path"]].append((f["position"], f))
        paths = sorted(by_file, key=lambda p: (-len(by_file[p]), p))
        rows = [FileRow(_label(p, root), p, 8 + i * ROW_H, sizes[p], _marks(by_file[p], sizes[p]))
                for i, p in enumerate(paths[:MAX_FILES])]
        known = CODES.get(code)
        groups.append(CodeGroup(code, found[0]["severity"], known.explanation if known else "", len(found),
                                len(by_file), rows, 8 + len(rows) * ROW_H + 4, unplaced,
                                max(0, len(paths) - MAX_FILES)))
    return sorted(groups, key=lambda g: (_RANK.get(g.severity, 3), -g.count, g.code))


FINDINGS_TABLE = Columns(
    Column("severity", "severity"), Column("code", "code"), Column("file", "path"),
    Column("byte", "position", thousands), Column("offset", "offset", thousands), Column("message", "message"),
)


def render_doctor(doc: DoctorReport) -> str:
    return pages.render("doctor.html.j2", doc=doc, s=doc["summary"], groups=code_groups(doc),
                        findings=pages.table(FINDINGS_TABLE, doc["findings"][:TABLE_ROWS]), width=WIDTH, left=LEFT,
                        right=RIGHT, row_h=ROW_H, short=short, listed=min(len(doc["findings"]), TABLE_ROWS))
