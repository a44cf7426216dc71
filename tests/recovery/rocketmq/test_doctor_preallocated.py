"""doctor on a killed store with an all-zero pre-allocated next commit-log file (issue 29).

The broker (apache/rocketmq 5.3.3 `CommitLog#recoverAbnormally`) ends the log at the zero tail of the last
written file and serves every message; doctor must report no error there, and the recovered end is that tail.
"""
from __future__ import annotations

from pathlib import Path

from replog.recovery.rocketmq.doctor import diagnose_store
from replog.recovery.rocketmq.store_model import load_store
from tests.recovery.rocketmq.independent import Store

FILE_SIZE = 4096


def test_doctor_on_a_killed_store_with_a_preallocated_file(tmp_path: Path) -> None:
    store = Store(FILE_SIZE)
    for i in range(25):
        store.append("T", i % 2, b"m%04d" % i + b"x" * 200)
    root = store.write(tmp_path / "store", abort=True)
    nxt = max(store.files) + FILE_SIZE
    (root / "commitlog" / f"{nxt:020d}").write_bytes(bytes(FILE_SIZE))
    findings, _ = diagnose_store(root)
    errors = [(f.code, f.offset) for f in findings if f.severity == "error"]
    assert not errors, f"the broker serves every message of this store: {errors}"
    assert ("ROCKETMQ_PREALLOCATED_FILE", nxt) in {(f.code, f.offset) for f in findings}, \
        "the pre-allocated file is named"
    model = load_store(root)
    assert model.max_offset == store.end, f"recovered end {model.max_offset}, the broker's {store.end}"
    assert len(model.messages) == 25, f"{len(model.messages)} messages recovered of 25"
