"""Cases for the writer tests: random partitions of every kind of batch the writers meet, random
options, scratch dirs and file trees to compare (helpers, not tests)."""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from replog.formats.kafka import batch as v2
from replog.formats.kafka import codecs, control, legacy
from replog.recovery.kafka.epoch_cache import EpochCache

TS = 1_700_000_000_000
TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
FEW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

KINDS = ["data", "data", "data", "producer", "txn", "txn", "txn", "abort", "abort", "commit", "legacy0", "legacy1",
         "wrapper", "bad_crc", "leader_change", "no_epoch"]


@st.composite
def partitions(draw: Any) -> list[bytes]:
    """Batches in offset order (mostly): v2 data, producers, transactions and markers, legacy
    entries and wrappers, a damaged CRC, other control batches; random sizes, epochs, timestamps."""
    out: list[bytes] = []
    offset, epoch = draw(st.integers(0, 40)), draw(st.integers(0, 2))
    for _ in range(draw(st.integers(0, 40))):
        kind = draw(st.sampled_from(KINDS))
        offset += draw(st.sampled_from([0, 0, 0, 0, 1, 5, -2]))  # gaps, an occasional step back
        offset = max(offset, 0)
        epoch = max(0, epoch + draw(st.sampled_from([0, 0, 0, 1, -1])))
        ts = TS + draw(st.integers(-50, 50)) if draw(st.booleans()) else -1
        pid = draw(st.sampled_from([3, 4, 9]))
        n = draw(st.integers(1, 4))
        size = draw(st.integers(0, 300))
        recs = [v2.Record(offset + i, ts + i if ts >= 0 else ts, b"k", b"v" * size) for i in range(n)]
        if kind in ("data", "bad_crc", "no_epoch"):
            b = v2.build_batch(recs, base_offset=offset, partition_leader_epoch=-1 if kind == "no_epoch" else epoch,
                               codec=draw(st.sampled_from([codecs.NONE, codecs.NONE, codecs.GZIP])))
            if kind == "bad_crc":
                b = b[:-1] + bytes([b[-1] ^ 1])
        elif kind in ("producer", "txn"):
            b = v2.build_batch(recs, base_offset=offset, partition_leader_epoch=epoch, producer_id=pid,
                               producer_epoch=0, base_sequence=draw(st.integers(0, 100)),
                               transactional=kind == "txn")
        elif kind in ("abort", "commit"):
            n = 1
            b = control.build_marker_batch(offset=offset, commit=kind == "commit", producer_id=pid, producer_epoch=0,
                                           coordinator_epoch=draw(st.integers(0, 3)), timestamp=max(ts, 0),
                                           partition_leader_epoch=epoch)
        elif kind == "leader_change":
            n = 1
            b = control.build_control_batch(offset=offset, control_type=2, value=b"\0" * 8, timestamp=max(ts, 0),
                                            partition_leader_epoch=epoch)
        elif kind == "wrapper":
            b = legacy.build_compressed([(offset + i, max(ts, 0) + i, None, b"w" * size) for i in range(n)],
                                        magic=draw(st.sampled_from([0, 1])), codec=codecs.GZIP)
        else:
            n = 1
            b = legacy.build_message(offset, b"k", b"v" * size, magic=int(kind[-1]), timestamp=max(ts, 0))
        out.append(b)
        offset += n
    return out


OPTIONS = st.fixed_dictionaries({
    "segment_bytes": st.sampled_from([1, 100, 700, 3000, 1 << 30]),
    "interval": st.sampled_from([0, 1, 150, 500, 4096]),
    "start_offset": st.sampled_from([0, 0, 7, 100]),
    "topic_id": st.sampled_from([None, TOPIC_ID]),
    "epochs": st.sampled_from([None, [(0, 0), (5, 3)]]),
})


def options(drawn: dict[str, Any]) -> dict[str, Any]:
    kw = dict(drawn)
    kw["epochs"] = None if kw["epochs"] is None else EpochCache(kw["epochs"])
    return kw


def tree(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of a dir: its bytes and its mode (permissions included)."""
    return {p.name: (p.read_bytes(), p.stat().st_mode) for p in sorted(root.iterdir())}


@contextmanager
def scratch() -> Iterator[Path]:
    """A fresh directory per example (hypothesis runs many examples per test function), written without
    fsync: these tests compare bytes, and a few thousand fsyncs would make them slow for nothing."""
    path = Path(tempfile.mkdtemp(prefix="writer-test-"))
    try:
        with mock.patch.object(os, "fsync", lambda fd: None):
            yield path
    finally:
        shutil.rmtree(path)
