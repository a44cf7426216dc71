"""The zero tail of the last written commit-log file when an all-zero file follows it (issue 29).

A killed 5.x broker leaves the next file mapped ahead of use (`AllocateMappedFileService`) and all
zeros. Its recovery (apache/rocketmq 5.3.3 `CommitLog#recoverAbnormally`, `checkMessageAndReturnSize`:
magic 0 is an illegal magic code, the scan ends) stops at the zeros and `MappedFileQueue#truncateDirtyFiles`
drops the zero file: every message is served. Zeros before a file that holds data stay an error: the
broker would drop that data. Stores are built with tests/recovery/rocketmq/independent.py, not replog's writer.
"""
from __future__ import annotations

from pathlib import Path

from replog.formats.findings import Finding, Severity
from replog.formats.rocketmq.commitlog import Message
from replog.formats.rocketmq.commitlog_walk import walk_commitlog
from tests.recovery.rocketmq.independent import Sent, Store

FILE_SIZE = 4096


def _written(messages: int) -> tuple[Store, list[Sent]]:
    """A commit log that rolled over to a second file, whose tail is still zeros."""
    store = Store(FILE_SIZE)
    sent = [store.append("T", i % 2, b"m%04d" % i + b"x" * 200) for i in range(messages)]
    assert store.end % FILE_SIZE, "the last message must leave zeros at the end of its file"
    return store, sent


def _walk(store: Store, tmp_path: Path, extra: dict[int, bytes]) -> tuple[list[Message], list[Finding]]:
    root = store.write(tmp_path / "store", abort=True)
    for start, data in extra.items():
        (root / "commitlog" / f"{start:020d}").write_bytes(data)
    out = list(walk_commitlog(root / "commitlog", file_size=FILE_SIZE))
    return [m for m in out if isinstance(m, Message) and m.kind == "message"], \
        [f for f in out if isinstance(f, Finding)]


def test_zero_tail_before_preallocated_files_is_the_end_of_data(tmp_path: Path) -> None:
    store, sent = _written(25)
    nxt = max(store.files) + FILE_SIZE
    msgs, findings = _walk(store, tmp_path, {nxt: bytes(FILE_SIZE), nxt + FILE_SIZE: bytes(FILE_SIZE)})
    assert [m.commitlog_offset for m in msgs] == [s.offset for s in sent], "every written message is walked"
    errors = [(f.code, f.offset) for f in findings if f.severity != Severity.INFO]
    assert not errors, f"a zero tail followed only by all-zero files is the broker's end of data: {errors}"
    pre = [(f.code, f.offset) for f in findings]
    assert pre == [("ROCKETMQ_PREALLOCATED_FILE", nxt), ("ROCKETMQ_PREALLOCATED_FILE", nxt + FILE_SIZE)], \
        f"each all-zero file after the written one is named, as info: {pre}"


def test_zero_tail_before_a_file_with_data_stays_an_error(tmp_path: Path) -> None:
    store, _ = _written(25)
    nxt = max(store.files) + FILE_SIZE
    later = bytearray(FILE_SIZE)
    later[100] = 7   # one byte of data the broker's recovery would drop with the file
    _, findings = _walk(store, tmp_path, {nxt: bytes(FILE_SIZE), nxt + FILE_SIZE: bytes(later)})
    blank = [(f.code, f.offset, f.severity) for f in findings if f.code == "ROCKETMQ_BLANK_INVALID"]
    assert blank == [("ROCKETMQ_BLANK_INVALID", store.end, Severity.ERROR),
                     ("ROCKETMQ_BLANK_INVALID", nxt, Severity.ERROR)], \
        f"zeros without a BLANK before data are where the broker's recovery stops: {blank}"
    assert not any(f.code == "ROCKETMQ_PREALLOCATED_FILE" for f in findings), "no file here is pre-allocated"


def test_a_store_of_zeros_keeps_its_first_file(tmp_path: Path) -> None:
    store = Store(FILE_SIZE)
    msgs, findings = _walk(store, tmp_path, {0: bytes(FILE_SIZE), FILE_SIZE: bytes(FILE_SIZE)})
    assert not msgs, f"no message in zeros: {msgs}"
    assert [(f.code, f.offset) for f in findings] == [("ROCKETMQ_PREALLOCATED_FILE", FILE_SIZE)], \
        f"the first file is the broker's current file, the second one mapped ahead: {findings}"
