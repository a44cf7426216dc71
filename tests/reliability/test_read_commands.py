"""The read commands (ls, dump, doctor, recover, replay) on hostile inputs, each through a real process:
a finding or a clear exit 2, never a traceback or an internal error, never a hang, memory by the child's
own peak RSS. Each case is what broke before: a batch whose offsets overflow its segment under
`recover --salvage`; files Kafka leaves while cleaning; files that vanish mid-scan; a 12 M-record
batch; a sparse 100 GiB segment; a segment that cannot be mapped under an address-space limit;
a segment symlinked out of the inputs; a log dir locked with flock."""
from __future__ import annotations

import os
import resource
import struct
import subprocess
import sys
from pathlib import Path

from crc32c import crc32c

from replog.formats.kafka import batch as v2
from replog.formats.kafka.offset_index import write_offset_index
from replog.formats.kafka.producer_snapshot import build_producer_snapshot
from tests.recovery.kafka.replicas import replica_dir
from tests.reliability.children import run, vanish_prefix
from tests.reliability.hostile import many_empty_batches, many_records_batch

SEG = "00000000000000000000"


def _partition(root: Path, name: str = "b", n: int = 10) -> Path:
    return replica_dir(root, name, [(o, 0) for o in range(n)], hw=n, segment_bytes=400)


# --- item 5: a valid batch whose last offset delta is 0x7fffffff ---------------------------------


def test_salvage_leaves_out_a_batch_its_segment_cannot_index(tmp_path: Path) -> None:
    big = [v2.build_batch([v2.Record(o, 1, b"k", b"v" * 5000)], base_offset=o) for o in range(3)]
    over = bytearray(v2.build_batch([v2.Record(3, 1, b"k", b"v" * 5000)], base_offset=3))
    struct.pack_into(">i", over, v2.AT["last_offset_delta"], 0x7FFFFFFF)
    struct.pack_into(">I", over, v2.AT["crc"], crc32c(bytes(over[v2.CRC_START:])))
    after = v2.build_batch([v2.Record(9, 1, b"k", b"v")], base_offset=9)
    pdir = tmp_path / "in" / "t-0"
    pdir.mkdir(parents=True)
    (pdir / f"{SEG}.log").write_bytes(b"".join(big) + b"\xff" * 30 + bytes(over) + after)
    res = run("recover", pdir, "--out", tmp_path / "out", "--salvage", "--format", "json", tmp=tmp_path)
    assert res.clean() and res.returncode == 1, res.stderr  # 1: the damage is an error finding
    doc = res.json()
    assert doc["verification"]["errors"] == 0
    assert [(s["first_offset"], s["last_offset"]) for s in doc["salvaged"]] == [(9, 9)]
    assert doc["dropped"]["holes"][0]["first_offset"] == 3 and doc["log_end_offset"] == 10


# --- item 6: .swap, .cleaned and .deleted files ------------------------------------------------------


def test_dump_reads_every_file_kafka_leaves_while_cleaning_or_deleting(tmp_path: Path) -> None:
    pdir = _partition(tmp_path)
    first = sorted(pdir.glob("*.log"))[0].name.removesuffix(".log")
    files = {"log": (pdir / f"{first}.log").read_bytes(), "index": write_offset_index([(0, 0), (1, 70)], 0),
             "timeindex": (pdir / f"{first}.timeindex").read_bytes(), "txnindex": bytes(34),
             "snapshot": build_producer_snapshot([])}
    for suffix in ("swap", "cleaned", "deleted"):
        for kind, data in files.items():
            (pdir / f"{first}.{kind}.{suffix}").write_bytes(data)
    res = run("dump", pdir, "--format", "jsonl", tmp=tmp_path)
    assert res.clean() and res.returncode in (0, 1), res.stderr
    entries = res.lines()
    for suffix in ("swap", "cleaned", "deleted"):
        kinds = {e["kind"] for e in entries if e.get("path", "").endswith(f".{suffix}")}
        assert {"file", "batch", "index_entry", "time_index_entry", "txn_entry", "finding"} <= kinds, (suffix, kinds)
    verify = run("dump", pdir / f"{first}.index.swap", "--verify-index-only", "--format", "jsonl", tmp=tmp_path)
    assert verify.clean() and "KAFKA_INDEX_WITHOUT_LOG" not in verify.codes()  # checked against .log.swap


# --- item 7: files that vanish mid-scan -----------------------------------------------------------


def test_a_file_or_folder_vanishing_mid_scan_is_a_finding(tmp_path: Path) -> None:
    logs = _partition(tmp_path).parent
    other = replica_dir(tmp_path, "b", [(o, 0) for o in range(4)], hw=4, topic="u")  # beside t-0
    segment = sorted((logs / "t-0").glob("*.log"))[1]
    for command in (["ls", logs], ["doctor", logs]):
        res = run(*command, "--format", "json", tmp=tmp_path, prefix=vanish_prefix(segment))
        assert res.clean() and res.returncode in (0, 1), (command, res.stderr)
        assert "INPUT_VANISHED" in res.codes() or "input-vanished" in res.stdout, (command, res.stdout[:3000])
        segment.with_name(segment.name + ".deleted").rename(segment)
    res = run("dump", logs, "--format", "jsonl", tmp=tmp_path, prefix=vanish_prefix(other))
    assert res.clean() and res.returncode in (0, 1), res.stderr
    assert "INPUT_VANISHED" in res.codes()
    assert any(e["kind"] == "batch" for e in res.lines())  # the rest is dumped


# --- item 10: 12 M tiny records in one zstd batch ------------------------------------------------


def test_a_batch_of_twelve_million_records_is_a_finding_in_bounded_time_and_memory(tmp_path: Path) -> None:
    """Before: doctor took 2.2 GiB (here 450 MB; held to its own run on a 1 MiB segment of empty batches,
    the same kernels loaded and nothing to decode), `dump --deep` 106 s."""
    small, huge = tmp_path / "small" / "t-0", tmp_path / "huge" / "t-0"
    small.mkdir(parents=True)
    (small / f"{SEG}.log").write_bytes(many_empty_batches(20_000))
    huge.mkdir(parents=True)
    (huge / f"{SEG}.log").write_bytes(many_records_batch(12_000_000))
    assert (huge / f"{SEG}.log").stat().st_size > 9 << 20
    base = run("doctor", small, "--format", "json", tmp=tmp_path)
    for command in (["doctor", huge, "--format", "json"], ["dump", huge, "--deep", "--format", "jsonl"]):
        res = run(*command, tmp=tmp_path, timeout=120)  # a hang bound, not a speed test (that is bench/'s)
        assert res.clean(), res.stderr
        assert "KAFKA_BATCH_TOO_MANY_RECORDS" in res.codes()
        if command[0] == "doctor":
            assert res.peak_rss < base.peak_rss + (64 << 20), (res.peak_rss, base.peak_rss)


# --- item 11: a sparse 100 GiB segment ---------------------------------------------------------------


def test_a_sparse_100_gib_segment_is_read_where_it_holds_data(tmp_path: Path) -> None:
    pdir = _partition(tmp_path)
    last = sorted(pdir.glob("*.log"))[-1]
    os.truncate(last, 100 << 30)  # a hole: no disk, no time
    for command in (["ls", pdir, "--format", "json"], ["doctor", pdir, "--format", "json"],
                    ["recover", pdir, "--out", tmp_path / "out", "--format", "json"]):
        res = run(*command, tmp=tmp_path, timeout=120)  # reading the hole would take minutes: a hang bound
        assert res.clean() and res.returncode == 1, (command[0], res.stderr)
        assert "KAFKA_SEGMENT_TOO_LARGE" in res.codes(), command[0]
        assert res.peak_rss < 2 << 30, (command[0], res.peak_rss)
        if command[0] == "doctor":
            assert "INPUT_NOT_HASHED" in res.codes()


# --- item 12: a segment that cannot be mapped under an address-space limit -----------------------


def _address_space(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def test_an_unmappable_segment_is_a_finding_in_every_command(tmp_path: Path) -> None:
    a, b = _partition(tmp_path, "a", 12), _partition(tmp_path, "b", 12)
    for pdir in (a, b):
        middle = sorted(pdir.glob("*.log"))[1]
        os.truncate(middle, 1900 << 20)  # a hole: more than the limit leaves room to map
    limit = 1536 << 20
    for command in (["ls", a, "--format", "json"], ["dump", sorted(a.glob("*.log"))[1], "--format", "jsonl"],
                    ["recover", a, "--out", tmp_path / "out", "--format", "json"],
                    ["replay", f"a={a}", f"b={b}", "--format", "json"]):
        res = run(*command, tmp=tmp_path, preexec_fn=lambda: _address_space(limit))
        assert res.clean() and res.returncode in (0, 1), (command[0], res.returncode, res.stderr)
        assert "UNREADABLE_FILE" in res.codes(), (command[0], res.stdout[:1500])


# --- item 13: a segment symlinked out of the inputs --------------------------------------------------


def test_a_symlink_out_of_the_inputs_is_reported_and_not_read(tmp_path: Path) -> None:
    pdir = _partition(tmp_path)
    secret = tmp_path / "elsewhere" / "secret.log"
    secret.parent.mkdir()
    secret.write_bytes(v2.build_batch([v2.Record(100, 1, b"k", b"TOP-SECRET")], base_offset=100))
    os.symlink(secret, pdir / "00000000000000000100.log")
    for command in (["dump", pdir, "--print-data", "--format", "jsonl"], ["doctor", pdir, "--format", "json"]):
        res = run(*command, tmp=tmp_path)
        assert res.clean() and "SYMLINK_OUTSIDE_INPUTS" in res.codes(), (command[0], res.stderr)
        assert "TOP-SECRET" not in res.stdout
    followed = run("dump", pdir, "--print-data", "--follow-symlinks", "--format", "jsonl", tmp=tmp_path)
    assert followed.clean() and "TOP-SECRET" in followed.stdout
    assert "SYMLINK_OUTSIDE_INPUTS" not in followed.codes()


def test_replicas_loaded_in_threads_keep_the_commands_read_policy(tmp_path: Path) -> None:
    """Two replicas load in a thread pool (`recovery.kafka.replica.load_replicas`): its threads read under the
    command's policy, so the link out of the inputs is reported, not followed, there too."""
    a, b = _partition(tmp_path, "a"), _partition(tmp_path, "b")
    secret = tmp_path / "elsewhere" / "secret.log"
    secret.parent.mkdir()
    secret.write_bytes(v2.build_batch([v2.Record(100, 1, b"k", b"TOP-SECRET")], base_offset=100))
    os.symlink(secret, b / "00000000000000000100.log")
    res = run("replay", f"a={a}", f"b={b}", "--format", "json", tmp=tmp_path)
    assert res.clean(), res.stderr
    assert "SYMLINK_OUTSIDE_INPUTS" in res.codes(), res.stdout[:1500]


# --- item 14: a log dir locked with flock -----------------------------------------------------------

_FLOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(60)
"""


def test_a_flock_on_the_log_dir_lock_is_a_running_broker(tmp_path: Path) -> None:
    logs = _partition(tmp_path).parent
    lock = logs / ".lock"
    lock.write_bytes(b"")
    holder = subprocess.Popen([sys.executable, "-c", _FLOCK, str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        res = run("doctor", logs, "--format", "json", tmp=tmp_path)
    finally:
        holder.kill()
        holder.wait()
    assert res.clean() and "KAFKA_BROKER_RUNNING" in res.codes(), res.stdout[:2000]
