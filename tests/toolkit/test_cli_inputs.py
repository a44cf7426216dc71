"""What on-call engineers met, through a real `replog` process on inputs built here: FIFOs and device
links named like segments, symlink loops, unreadable files, non-UTF-8 names, `recover`'s exit code and
its salvage summary, `ls` of a missing path or of a folder holding a RocketMQ store.

Every run has a timeout (a hang fails the test), its stdout must be valid UTF-8 JSON, and the inputs
must be byte for byte the same afterwards."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from replog.recovery.kafka.writer import write_partition
from tests.formats.kafka.segments import data_batch

EXE = Path(sys.executable).parent / "replog"
ENV = dict(os.environ, COLUMNS="250")  # stderr lines unwrapped, so messages can be matched whole


def run(*args: str | os.PathLike[str], prefix: Sequence[str] = (), timeout: float = 120,
        ) -> subprocess.CompletedProcess[bytes]:
    """`replog ARGS` in a process of its own; bytes out, so invalid UTF-8 cannot hide."""
    return subprocess.run([*prefix, str(EXE), *(os.fspath(a) for a in args)], capture_output=True,
                          timeout=timeout, env=ENV)


def out_json(proc: subprocess.CompletedProcess[bytes]) -> Any:
    """The JSON document on stdout, decoded strictly as UTF-8."""
    return json.loads(proc.stdout.decode("utf-8"))


def out_lines(proc: subprocess.CompletedProcess[bytes]) -> list[Any]:
    return [json.loads(line) for line in proc.stdout.decode("utf-8").splitlines() if line.strip()]


def err(proc: subprocess.CompletedProcess[bytes]) -> str:
    return proc.stderr.decode("utf-8", "replace")


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under `root` with its type, and the SHA-256 of each regular file (never opening others)."""
    out = {}
    for entry in _walk(root):
        st = entry.lstat()
        if stat.S_ISREG(st.st_mode):
            out[os.fsdecode(entry)] = hashlib.sha256(entry.read_bytes()).hexdigest() if st.st_mode & 0o444 else "-"
        else:
            out[os.fsdecode(entry)] = stat.filemode(st.st_mode) + (os.readlink(entry) if entry.is_symlink() else "")
    return out


def _walk(root: Path) -> Iterator[Path]:
    for entry in sorted(root.iterdir()):
        yield entry
        if entry.is_dir() and not entry.is_symlink() and os.access(entry, os.R_OK | os.X_OK):
            yield from _walk(entry)


def log_dir(tmp_path: Path, *names: str) -> Path:
    """A log dir of small healthy partitions (two segments each)."""
    logs = tmp_path / "logs"
    for name in names or ("orders-0", "orders-1"):
        write_partition(logs / name, [data_batch(i * 3, 3) for i in range(8)], segment_bytes=600)
    return logs


def rows_by_partition(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {f"{r['topic']}-{r['partition']}": r for r in rows}


def findings_at(doc: dict[str, Any], path: Path) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["path"] == os.fsdecode(path)]


# --- item 2: FIFOs and device files ----------------------------------------------------------------


def test_fifo_named_as_segment_is_reported_and_never_read(tmp_path: Path) -> None:
    logs = log_dir(tmp_path)
    fifo = logs / "orders-0" / "00000000000000099999.log"
    os.mkfifo(fifo)
    before = snapshot(logs)

    ls = run("ls", logs, "--format", "json")
    assert ls.returncode == 1, err(ls)
    rows = rows_by_partition(out_json(ls))
    assert rows["orders-1"]["flags"] == [] and rows["orders-1"]["segments"] == 2
    assert "wrong-file-type" in rows["orders-0"]["flags"] and rows["orders-0"]["segments"] == 2
    [problem] = rows["orders-0"]["problems"]
    assert problem["code"] == "WRONG_FILE_TYPE" and problem["path"] == str(fifo) and "FIFO" in problem["message"]

    doctor = run("doctor", logs, "--format", "json")
    assert doctor.returncode == 1, err(doctor)
    [f] = findings_at(out_json(doctor), fifo)
    assert f["code"] == "WRONG_FILE_TYPE" and f["severity"] == "error"
    assert "FIFO" in f["message"] and "directory" not in f["message"]

    for target in (fifo, logs / "orders-0"):
        dump = run("dump", target, "--format", "jsonl")
        assert dump.returncode == 1, err(dump)
        [f] = [e for e in out_lines(dump) if e["kind"] == "finding"]
        assert (f["code"], f["path"]) == ("WRONG_FILE_TYPE", str(fifo)) and "FIFO" in f["message"]
    assert snapshot(logs) == before


@pytest.mark.skipif(not (os.path.exists("/dev/zero") and os.path.exists("/dev/urandom")), reason="no /dev")
def test_device_links_are_not_taken_for_empty_segments(tmp_path: Path) -> None:
    logs = log_dir(tmp_path, "orders-0")
    pdir = logs / "devices-0"
    pdir.mkdir()
    (pdir / "00000000000000000000.log").symlink_to("/dev/zero")
    (pdir / "00000000000000000100.log").symlink_to("/dev/urandom")
    before = snapshot(logs)

    ls = run("ls", logs, "--format", "json")
    assert ls.returncode == 1, err(ls)
    rows = rows_by_partition(out_json(ls))
    assert rows["orders-0"]["flags"] == []
    devices = rows["devices-0"]
    assert devices["segments"] == 0 and devices["flags"] == ["wrong-file-type"]
    assert [p["message"].count("character device") for p in devices["problems"]] == [1, 1]

    doctor = run("doctor", pdir, "--format", "json")
    assert doctor.returncode == 1, err(doctor)
    found = out_json(doctor)["findings"]
    assert sorted(f["code"] for f in found) == ["WRONG_FILE_TYPE", "WRONG_FILE_TYPE"]
    assert all("character device" in f["message"] and "directory" not in f["message"] for f in found)

    dump = run("dump", pdir / "00000000000000000100.log", "--format", "jsonl", timeout=60)
    assert dump.returncode == 1
    assert [e["code"] for e in out_lines(dump) if e["kind"] == "finding"] == ["WRONG_FILE_TYPE"]
    assert snapshot(logs) == before


# --- item 4: ls shows every partition it can ------------------------------------------------------


def test_ls_marks_symlink_loops_and_lists_the_rest(tmp_path: Path) -> None:
    logs = log_dir(tmp_path)
    (logs / "loop-0").symlink_to("loop-0")  # a partition's name on a link to itself
    seg_loop = logs / "orders-1" / "00000000000000099999.log"
    seg_loop.symlink_to(seg_loop.name)
    before = snapshot(logs)

    ls = run("ls", logs, "--format", "json")
    assert ls.returncode == 1, err(ls)
    assert "internal error" not in err(ls)
    rows = rows_by_partition(out_json(ls))
    assert set(rows) == {"orders-0", "orders-1", "loop-0"}
    assert rows["orders-0"]["flags"] == [] and rows["orders-1"]["segments"] == 2
    for name, path in (("loop-0", logs / "loop-0"), ("orders-1", seg_loop)):
        [problem] = rows[name]["problems"]
        assert problem["path"] == str(path) and "symlink loop" in problem["message"], problem

    doctor = run("doctor", logs, "--format", "json")
    assert doctor.returncode == 1 and "internal error" not in err(doctor)
    assert [f["code"] for f in findings_at(out_json(doctor), seg_loop)] == ["WRONG_FILE_TYPE"]
    assert snapshot(logs) == before


def _without_root_powers(probe: Path) -> list[str]:
    """A command prefix under which `probe` (mode 000) cannot be read: none for a normal user; for
    root, setpriv dropping the capabilities that bypass permissions. Skips when neither works."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root reads mode-000 files, and setpriv is not there to drop that power")
    prefix = [setpriv, "--bounding-set", "-dac_override,-dac_read_search"]
    check = subprocess.run([*prefix, sys.executable, "-c", f"open({str(probe)!r}, 'rb')"], capture_output=True,
                           timeout=60)
    if check.returncode == 0:
        pytest.skip("running as root, and setpriv could not drop the power to read any file")
    return prefix


def test_ls_marks_an_unreadable_segment_and_dir_and_lists_the_rest(tmp_path: Path) -> None:
    logs = log_dir(tmp_path, "orders-0", "orders-1", "orders-2")
    segment = sorted((logs / "orders-0").glob("*.log"))[1]
    segment.chmod(0)
    (logs / "orders-1").chmod(0)
    try:
        prefix = _without_root_powers(segment)
        before = snapshot(logs)
        ls = run("ls", logs, "--format", "json", prefix=prefix)
        assert ls.returncode == 1, err(ls)
        rows = rows_by_partition(out_json(ls))
        assert set(rows) == {"orders-0", "orders-1", "orders-2"}
        assert rows["orders-2"]["flags"] == [] and rows["orders-2"]["segments"] == 2
        assert [(p["code"], p["path"]) for p in rows["orders-0"]["problems"]] == [("UNREADABLE_FILE", str(segment))]
        assert [p["code"] for p in rows["orders-1"]["problems"]] == ["UNREADABLE_FILE"]
        doctor = run("doctor", logs, "--format", "json", prefix=prefix)
        assert doctor.returncode == 1 and "internal error" not in err(doctor)
        assert [f["code"] for f in findings_at(out_json(doctor), segment)] == ["UNREADABLE_FILE"]
        assert snapshot(logs) == before
    finally:
        (logs / "orders-1").chmod(0o755)
        segment.chmod(0o644)


# --- item 5: JSON is valid UTF-8 whatever the file names ------------------------------------------


def test_non_utf8_names_give_valid_utf8_json_that_round_trips(tmp_path: Path) -> None:
    name = b"orders\xff-0"
    logs = tmp_path / "logs"
    pdir = Path(os.fsdecode(os.fsencode(logs) + b"/" + name))
    write_partition(pdir, [data_batch(i * 3, 3) for i in range(4)], segment_bytes=300)
    before = snapshot(logs)
    escaped = b'orders\\udcff-0'

    ls = run("ls", logs, "--format", "json")
    assert ls.returncode == 0, err(ls)
    [row] = out_json(ls)
    assert os.fsencode(row["path"]).endswith(b"/" + name) and escaped in ls.stdout
    for args in (["ls", logs, "--format", "jsonl"], ["dump", pdir, "--format", "jsonl"]):
        proc = run(*args)
        assert proc.returncode == 0, err(proc)
        paths = [os.fsencode(e["path"]) for e in out_lines(proc) if "path" in e]
        assert paths and all(name in p for p in paths), args
    doctor = run("doctor", logs, "--format", "json")
    assert doctor.returncode == 0 and all(name in os.fsencode(i["path"]) for i in out_json(doctor)["inputs"])
    table = run("ls", logs, "--format", "table")
    assert table.returncode == 0 and "internal error" not in err(table)
    assert snapshot(logs) == before


# --- items 6 and 7: recover's exit code and its salvage summary -------------------------------------


def _partition(tmp_path: Path, name: str = "orders-0") -> tuple[Path, list[int]]:
    """One segment of 8 batches of 3 records (offsets 0..23); returns the dir and the batch positions."""
    batches = [data_batch(i * 3, 3) for i in range(8)]
    pdir = tmp_path / "in" / name
    write_partition(pdir, batches)
    positions = [sum(len(b) for b in batches[:i]) for i in range(len(batches))]
    return pdir, positions


def test_recover_exits_1_when_it_reports_an_error_finding(tmp_path: Path) -> None:
    pdir, _ = _partition(tmp_path)
    clean = run("recover", pdir, "--out", tmp_path / "clean", "--format", "json")
    assert clean.returncode == 0 and out_json(clean)["findings"] == []
    [segment] = pdir.glob("*.log")
    with open(segment, "ab") as f:
        f.write(data_batch(24, 3)[:40])  # a torn tail
    before = snapshot(pdir)
    torn = run("recover", pdir, "--out", tmp_path / "torn", "--format", "json")
    doc = out_json(torn)
    assert [f["code"] for f in doc["findings"] if f["severity"] == "error"] == ["KAFKA_TORN_TAIL"]
    assert doc["verification"]["errors"] == 0 and doc["truncated_to"] == 24
    assert torn.returncode == 1
    assert snapshot(pdir) == before


def test_salvage_summary_agrees_with_its_holes(tmp_path: Path) -> None:
    pdir, positions = _partition(tmp_path)
    [segment] = pdir.glob("*.log")
    data = bytearray(segment.read_bytes())
    data[positions[2] + 64] ^= 0xFF  # batch 6..8: CRC mismatch, framing intact
    segment.write_bytes(bytes(data))
    before = snapshot(pdir)

    proc = run("recover", pdir, "--out", tmp_path / "salvaged", "--salvage", "--format", "json")
    assert proc.returncode == 1, err(proc)  # the CRC mismatch is an error finding
    doc = out_json(proc)
    [hole] = doc["dropped"]["holes"]
    assert (hole["first_offset"], hole["last_offset"], hole["batches"]) == (6, 8, 1)
    dropped = doc["dropped"]
    assert (dropped["first_offset"], dropped["last_offset"], dropped["batches"]) == (6, 8, 1)
    assert dropped["bytes"] == hole["bytes"] == positions[3] - positions[2]
    assert doc["truncated_to"] is None and doc["log_end_offset"] == 24
    [resync] = [f for f in doc["findings"] if f["code"] == "KAFKA_SALVAGE_RESYNC"]
    assert "offsets 6..8 lost" in resync["message"]

    table = run("recover", pdir, "--out", tmp_path / "salvaged-table", "--salvage", "--format", "table")
    text = table.stdout.decode("utf-8")
    assert table.returncode == 1 and "1 batches, offsets 6..8" in text and "0 batches" not in text
    assert snapshot(pdir) == before


def test_salvage_of_a_torn_tail_says_it_truncated(tmp_path: Path) -> None:
    pdir, positions = _partition(tmp_path)
    [segment] = pdir.glob("*.log")
    with open(segment, "ab") as f:
        f.write(data_batch(24, 3)[:40])
    proc = run("recover", pdir, "--out", tmp_path / "out", "--salvage", "--format", "json")
    doc = out_json(proc)
    assert proc.returncode == 1
    assert (doc["truncated_to"], doc["valid_bytes"]) == (24, segment.stat().st_size - 40)
    assert (doc["dropped"]["bytes"], doc["dropped"]["batches"], doc["dropped"]["first_offset"]) == (40, 0, None)


# --- item 15: ls of a missing path, of a folder holding a store; "none" not "None" -----------------


def test_ls_missing_path_says_no_such_file_like_doctor(tmp_path: Path) -> None:
    for command in ("ls", "doctor"):
        proc = run(command, tmp_path / "nope")
        assert proc.returncode == 2 and "no such file or directory" in err(proc), (command, err(proc))
        assert proc.stdout == b""


def test_ls_finds_the_rocketmq_store_under_a_folder_as_doctor_does(tmp_path: Path) -> None:
    from tests.recovery.rocketmq.stores import build, spec

    store = build(tmp_path / "home" / "store", [spec(i) for i in range(6)]).root
    before = snapshot(tmp_path / "home")
    doctor = run("doctor", tmp_path / "home", "--format", "json")
    assert doctor.returncode == 0, err(doctor)
    ls = run("ls", tmp_path / "home", "--format", "json")
    assert ls.returncode == 0, err(ls)
    doc = out_json(ls)
    assert doc["store"]["path"] == str(store) and doc["store"]["messages"] == 6
    table = run("ls", tmp_path / "home", "--format", "table").stdout.decode("utf-8")
    assert "confirm offset" in table and "None" not in table
    assert snapshot(tmp_path / "home") == before
