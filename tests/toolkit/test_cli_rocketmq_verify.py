"""`replog doctor` and `replog recover` on RocketMQ stores, through typer's runner."""
from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from replog.toolkit.cli import app
from tests.recovery.rocketmq.stores import FILE_SIZE, build, spec, tree_digest

runner = CliRunner()


def locate(root: Path, physical_offset: int) -> tuple[Path, int]:
    """The commitlog file holding a physical offset, and the position in it."""
    start = physical_offset // FILE_SIZE * FILE_SIZE
    return root / "commitlog" / f"{start:020d}", physical_offset - start


def test_doctor_finds_a_body_crc_flip_in_a_store(tmp_path: Path) -> None:
    store = build(tmp_path / "s", [spec(i) for i in range(12)])
    clean = runner.invoke(app, ["doctor", str(store.root), "--format", "json"])
    assert clean.exit_code == 0, clean.output
    victim = store.messages[5]
    log, at = locate(store.root, victim.offset)
    data = bytearray(log.read_bytes())
    body = spec(5)["body"]
    data[data.index(body, at) + 2] ^= 0xFF  # a byte of this message's body
    log.write_bytes(bytes(data))
    res = runner.invoke(app, ["doctor", str(store.root), "--format", "json"])
    assert res.exit_code == 1
    report = json.loads(res.output)
    crc = [f for f in report["findings"] if f["code"] == "ROCKETMQ_BODY_CRC_MISMATCH"]
    assert crc and crc[0]["offset"] == victim.offset
    assert any(i["path"] == str(log) for i in report["inputs"])


def test_recover_store_writes_a_clean_store_and_leaves_the_input(tmp_path: Path) -> None:
    store = build(tmp_path / "s", [spec(i) for i in range(12)])
    end = store.messages[-1].offset + store.messages[-1].size
    log, at = locate(store.root, end)
    data = bytearray(log.read_bytes())
    data[at:at + 40] = b"\x01" * 40  # a dirty tail after the last message
    log.write_bytes(bytes(data))
    before = tree_digest(store.root)
    res = runner.invoke(app, ["recover", str(store.root), "--out", str(tmp_path / "out"), "--format", "json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["truncated_to"] == end
    assert tree_digest(store.root) == before
    assert runner.invoke(app, ["doctor", str(tmp_path / "out"), "--format", "json"]).exit_code == 0
