"""Saving what a replica would lose, before anything is repaired: a segment plus JSON lines."""
from __future__ import annotations

import json
import os
from pathlib import Path

from replog.formats.filecopy import OutputFile, open_source
from replog.formats.kafka import names
from replog.formats.kafka.partition_files import is_live_segment
from replog.recovery.kafka.replay import ReplayResult
from replog.recovery.kafka.replica_log import ReplicaLog
from replog.recovery.outputs import claimed_output, evidence_roots, mark_complete
from replog.toolkit.dump import DumpOptions, dump_file


def in_offset_order(lost: ReplicaLog) -> ReplicaLog:
    """The lost pieces by offset: successive truncation rounds (KIP-279) remove the later offsets first,
    and a segment of the lost batches must read as one, offsets rising, named by its first."""
    return ReplicaLog(sorted(lost.pieces, key=lambda piece: piece.min_base))


def export_lost(result: ReplayResult, out: str | os.PathLike[str], *, force: bool = False) -> list[str]:
    """Per replica with losses: `NAME/<first offset>.log` (the batches as they are on disk)
    and `NAME/lost.jsonl` (every record, keys and values in hex). Returns the files written."""
    with claimed_output(out, evidence_roots(r.replica.path for r in result.replicas), force) as root:
        return _export(result, root)


def _export(result: ReplayResult, root: Path) -> list[str]:
    written: list[str] = []
    for r in result.replicas:
        if not r.lost:
            continue
        d = root / r.replica.name
        d.mkdir()
        lost = in_offset_order(r.lost)
        log = d / names.segment_file_name(lost.first_offset, "log")
        with OutputFile(log) as sink:
            for file, start, end, _base in lost.byte_ranges():
                with open_source(file, live=is_live_segment(file)) as source:
                    sink.copy(source, start, end)
        opts = DumpOptions(deep=True, key_decoder="hex", value_decoder="hex")
        with OutputFile(d / "lost.jsonl") as lines:   # streamed: a lost tail can be large
            for e in dump_file(log, opts):
                if e["kind"] in ("record", "finding"):
                    lines.write((json.dumps(e) + "\n").encode())
            if not lines.size:
                lines.write(b"\n")
        written += [str(log), str(d / "lost.jsonl")]
    mark_complete(root, f"replog export-lost: {len(written)} files")
    return written
