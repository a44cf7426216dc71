from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.formats.errors import FormatError
from replog.formats.rocketmq.abort import build_abort, parse_abort, read_abort
from replog.formats.rocketmq.checkpoint import (
    CHECKPOINT,
    Checkpoint,
    build_checkpoint,
    check_checkpoint,
    parse_checkpoint,
    read_checkpoint,
    write_checkpoint,
)
from tests.realdata import REALDATA

REAL = REALDATA / "rocketmq-shaoxubao" / "store"
i64 = st.integers(-2**63, 2**63 - 1)


@given(st.builds(Checkpoint, i64, i64, i64, i64, i64))
def test_round_trip_and_layout(cp: Checkpoint) -> None:
    raw = build_checkpoint(cp)
    assert len(raw) == 4096 and parse_checkpoint(raw) == cp
    c = CHECKPOINT.parse(raw)
    assert (c.physic_msg_timestamp, c.logics_msg_timestamp, c.index_msg_timestamp,
            c.master_flushed_offset, c.confirm_phy_offset) == dataclasses.astuple(cp)
    assert CHECKPOINT.build(c) == raw[:40]


def test_min_timestamp_like_store_checkpoint_test() -> None:
    cp = Checkpoint(0xAABB, 0xCCDD, 0)
    assert cp.physic_msg_timestamp - cp.min_timestamp == 3000
    assert Checkpoint(100, 200, 50).min_timestamp == 0


def test_short_and_odd_files(tmp_path: Path) -> None:
    with pytest.raises(FormatError):
        parse_checkpoint(bytes(23))
    assert parse_checkpoint(b"\0" * 7 + b"\1" + bytes(16)) == Checkpoint(1)
    assert [f.code for f in check_checkpoint(bytes(30))] == ["ROCKETMQ_CHECKPOINT_INVALID"]
    assert list(check_checkpoint(build_checkpoint(Checkpoint(1, 2, 3)))) == []
    p = tmp_path / "checkpoint"
    write_checkpoint(p, Checkpoint(1, 2, 3, 4, 5))
    assert read_checkpoint(p) == Checkpoint(1, 2, 3, 4, 5)


def test_abort_marker(tmp_path: Path) -> None:
    assert parse_abort(b"") is None and parse_abort(build_abort(4242)) == 4242
    with pytest.raises(FormatError):
        parse_abort(b"hello")
    assert not read_abort(tmp_path).present
    (tmp_path / "abort").write_bytes(b"77")
    (tmp_path / "abort.bak").write_bytes(b"")
    m = read_abort(tmp_path)
    assert (m.present, m.pid, m.bak_pid) == (True, 77, None)


@pytest.mark.realdata
def test_real_checkpoint_and_abort() -> None:
    if not REAL.exists():
        pytest.skip("real data absent")
    raw = (REAL / "checkpoint").read_bytes()
    cp = parse_checkpoint(raw)
    # ../shared/realdata/PROVENANCE.md: physic = logics = 1551626238066, index = 0; a 4.x file (5.x fields zero)
    assert cp == Checkpoint(1551626238066, 1551626238066, 0, 0, 0)
    assert list(check_checkpoint(raw)) == []
    assert build_checkpoint(cp) == raw
    m = read_abort(REAL)
    assert m.present and m.pid is None  # 4.x: empty abort file
