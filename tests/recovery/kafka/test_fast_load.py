"""`load_replica` and `summarize_partition` give the same answer on the compiled walk as on the reference.

The fast path is forced with `fast_threshold=0` on generated partitions: v2
data batches (every codec, rising and falling epochs, timestamps of 0 and -1),
control markers (valid and broken), legacy v0/v1 messages (plain and
compressed), gaps, offsets going back, byte flips, truncations, zero tails and
several segments.
"""
from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from replog.formats.kafka import batch as v2
from replog.formats.kafka import checkpoint, codecs, control, fastwalk, legacy, names
from replog.recovery.kafka.logdir import summarize_log_dir, summarize_partition, use_fast_walk
from replog.recovery.kafka.replica import batch_rows, load_replica

pytestmark = pytest.mark.skipif(not fastwalk.HAVE_NUMBA, reason="numba not installed: nothing fast to compare")

TS = 1_700_000_000_000


def _entry(rnd: random.Random, offset: int, epoch: int) -> tuple[bytes, int]:
    """One entry at `offset`; returns its bytes and the next offset."""
    kind = rnd.choice(["data"] * 6 + ["marker", "control", "legacy", "legacy_z"])
    if kind == "marker":
        return control.build_marker_batch(offset=offset, commit=rnd.random() < 0.5, producer_id=7, producer_epoch=0,
                                          coordinator_epoch=1, timestamp=TS + offset,
                                          partition_leader_epoch=epoch), offset + 1
    if kind == "control":  # a control batch whose key is not a marker's: may be invalid
        return control.build_control_batch(offset=offset, control_type=rnd.choice([0, 1, 2, 3, 9]),
                                           value=rnd.randbytes(rnd.randrange(0, 8)), timestamp=TS,
                                           partition_leader_epoch=epoch), offset + 1
    if kind == "legacy":
        magic = rnd.choice([0, 1])
        return legacy.build_message(offset, b"k", rnd.randbytes(6), magic=magic, timestamp=TS + offset), offset + 1
    if kind == "legacy_z":
        recs = [(offset + i, TS + i, b"k%d" % i, b"v" * 5) for i in range(3)]
        return legacy.build_compressed(recs, magic=rnd.choice([0, 1]), codec=codecs.GZIP), offset + 3
    n = rnd.randrange(1, 5)
    ts = rnd.choice([TS, 0, -1, TS + 5])
    recs = [v2.Record(offset + i, ts, b"k", rnd.randbytes(rnd.randrange(0, 20))) for i in range(n)]
    return v2.build_batch(recs, base_offset=offset, partition_leader_epoch=epoch,
                          codec=rnd.choice([0, 0, 0, 1, 3, 4]), producer_id=rnd.choice([-1, 5]),
                          timestamp_type=rnd.choice([v2.CREATE_TIME, v2.LOG_APPEND_TIME])), offset + n


def _segment(rnd: random.Random, offset: int, epoch: int, count: int) -> tuple[bytes, int, int]:
    out = bytearray()
    for _ in range(count):
        offset += rnd.choice([0] * 8 + [3, -2])           # gaps and offsets going back
        epoch = max(-1, epoch + rnd.choice([0] * 6 + [1, 2, -1]))
        raw, offset = _entry(rnd, max(offset, 0), epoch)
        out += raw
    return bytes(out), offset, epoch


def _damage(rnd: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    what = rnd.choice(["none", "none", "flip", "truncate", "zeros", "garbage"])
    if what == "flip" and buf:
        for _ in range(rnd.randrange(1, 4)):
            buf[rnd.randrange(len(buf))] ^= 1 << rnd.randrange(8)
    elif what == "truncate" and buf:
        del buf[rnd.randrange(len(buf)):]
    elif what == "zeros":
        buf += bytes(rnd.randrange(1, 300))
    elif what == "garbage":
        buf += rnd.randbytes(rnd.randrange(1, 40))
    return bytes(buf)


def build_partition(root: Path, seed: int) -> Path:
    """A log dir with one generated partition `t-0` and root checkpoints."""
    rnd = random.Random(seed)
    pdir = root / "t-0"
    pdir.mkdir(parents=True)
    offset, epoch = rnd.choice([0, 100]), rnd.choice([-1, 0, 2])
    for _ in range(rnd.randrange(1, 4)):
        base = offset if rnd.random() < 0.8 else offset + rnd.choice([-5, 5])
        data, offset, epoch = _segment(rnd, offset, epoch, rnd.randrange(0, 60))
        (pdir / names.segment_file_name(max(base, 0), "log")).write_bytes(_damage(rnd, data))
    if rnd.random() < 0.7:
        entries = sorted({(e, s) for e, s in [(rnd.randrange(0, 6), rnd.randrange(0, offset + 1)) for _ in range(3)]})
        (pdir / names.LEADER_EPOCH_CHECKPOINT).write_bytes(checkpoint.build_leader_epoch_checkpoint(entries))
    for name in (names.REPLICATION_OFFSET_CHECKPOINT, names.RECOVERY_POINT_OFFSET_CHECKPOINT,
                 names.LOG_START_OFFSET_CHECKPOINT):
        if rnd.random() < 0.7:
            (root / name).write_bytes(checkpoint.build_offset_checkpoint({("t", 0): rnd.randrange(0, offset + 10)}))
    return pdir


def replica_state(rep) -> dict:
    d = {f.name: getattr(rep, f.name) for f in dataclasses.fields(rep)}
    d["epochs"] = [tuple(e) for e in rep.epochs.entries]
    d["log"] = batch_rows(rep.log)
    d["pieces"] = [(p.file, p.position, p.end_position, p.batches, p.records, p.first_offset, p.last_offset, p.min_base,
                    p.max_last, p.ordered, p.runs.tolist()) for p in rep.log.pieces]
    d["fingerprint"] = None if rep.fingerprint is None else [a.tolist() for a in rep.fingerprint.table()]
    d["findings"] = [f.to_dict() for f in rep.findings]
    return d


def summary_state(part) -> dict:
    d = dataclasses.asdict(part)
    d["findings"] = [f.to_dict() for f in part.findings]
    for seg, s in zip(d["segments"], part.segments, strict=True):
        seg["findings"] = [f.to_dict() for f in s.findings]
    return d


SEEDS = range(60)


@pytest.mark.parametrize("seed", SEEDS)
def test_load_replica_fast_equals_reference(tmp_path: Path, seed: int) -> None:
    pdir = build_partition(tmp_path, seed)
    ref = load_replica(pdir, "r", fast_threshold=1 << 40)
    fast = load_replica(pdir, "r", fast_threshold=0)
    assert replica_state(fast) == replica_state(ref)


@pytest.mark.parametrize("seed", SEEDS)
def test_summarize_partition_fast_equals_reference(tmp_path: Path, seed: int) -> None:
    pdir = build_partition(tmp_path, seed)
    ref = summarize_partition(pdir, fast_threshold=1 << 40)
    fast = summarize_partition(pdir, fast_threshold=0)
    assert summary_state(fast) == summary_state(ref)


def test_generated_partitions_cover_the_cases(tmp_path: Path) -> None:
    """The generator does produce damage, legacy and control batches, and dropped batches."""
    codes, magics, dropped, controls = set(), set(), 0, 0
    for seed in SEEDS:
        rep = load_replica(build_partition(tmp_path / str(seed), seed), "r", fast_threshold=0)
        codes |= {f.code for f in rep.findings}
        magics |= {b.magic for b in batch_rows(rep.log)}
        dropped += rep.dropped_at_load
        controls += sum(1 for f in rep.findings if f.code == "KAFKA_CONTROL_RECORD_INVALID")
    assert {0, 1, 2} <= magics and dropped > 0 and controls > 0
    assert {"KAFKA_BATCH_CRC_MISMATCH", "KAFKA_OFFSET_GAP", "KAFKA_OFFSETS_NOT_INCREASING", "KAFKA_ZERO_TAIL",
            "KAFKA_TORN_TAIL"} <= codes


def test_first_timestamp_zero_is_kept(tmp_path: Path) -> None:
    """A batch stamped 0 (1970) is the minimum, on both paths (the reference once treated 0 as absent)."""
    pdir = tmp_path / "t-0"
    pdir.mkdir()
    data = b"".join(v2.build_batch([v2.Record(i, ts, None, b"v")], base_offset=i) for i, ts in enumerate([0, 5, 3]))
    (pdir / names.segment_file_name(0, "log")).write_bytes(data)
    for threshold in (0, 1 << 40):
        seg = summarize_partition(pdir, fast_threshold=threshold).segments[0]
        assert (seg.first_timestamp, seg.max_timestamp) == (0, 5)


def test_small_segments_stay_on_the_reference_path() -> None:
    assert not use_fast_walk(8 << 20) and not use_fast_walk(100, threshold=100)
    assert use_fast_walk(101, threshold=100) == fastwalk.HAVE_NUMBA


def test_log_dir_summary_unchanged_by_default(tmp_path: Path) -> None:
    """The default threshold keeps these small files on the reference path and gives the same summary."""
    build_partition(tmp_path, 3)
    got = summarize_log_dir(tmp_path)
    assert summary_state(got.partitions[0]) == summary_state(summarize_partition(tmp_path / "t-0", got.checkpoints,
                                                                                 fast_threshold=0))
