"""RocketMQ doctor and recover on stores built by the format writers, one damage kind at a time."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from replog.formats.errors import UnreadableInput, UnsafeOutput
from replog.formats.rocketmq.checkpoint import Checkpoint, write_checkpoint
from replog.formats.rocketmq.commitlog import CommitLogWriter, file_name
from replog.formats.rocketmq.consumequeue import ENTRY
from replog.formats.rocketmq.epoch_file import EpochEntry, build_epoch_file
from replog.recovery.rocketmq.doctor import diagnose_store, infer_hash_slot_num
from replog.recovery.rocketmq.recover import recover_store
from replog.recovery.rocketmq.store_model import load_store
from tests.realdata import REALDATA
from tests.recovery.rocketmq.stores import FILE_SIZE, SLOTS, T0, Built, append, build, finish, spec, tree_digest

N = 24


def errors(findings):  # noqa: ANN001, ANN201
    return [f for f in findings if f.severity.value == "error"]


def codes(findings) -> set[str]:  # noqa: ANN001
    return {f.code for f in findings}


@pytest.fixture
def store(tmp_path: Path) -> Built:
    return build(tmp_path / "store", [spec(i) for i in range(N)])


def seg(b: Built, offset: int) -> tuple[Path, int]:
    start = offset - offset % FILE_SIZE
    return b.root / "commitlog" / file_name(start), offset - start


def patch(path: Path, pos: int, data: bytes) -> None:
    buf = bytearray(path.read_bytes())
    buf[pos:pos + len(data)] = data
    path.write_bytes(bytes(buf))


def recovered_clean(b: Built, tmp_path: Path, rebuild_queues: bool = False) -> dict:
    before = tree_digest(b.root)
    result = recover_store(b.root, tmp_path / "out", rebuild_queues=rebuild_queues)
    assert tree_digest(b.root) == before, "the input changed"
    after, _ = diagnose_store(tmp_path / "out")
    assert not [f for f in after if f.severity.value != "info"], [f.to_dict() for f in after]
    assert result["verification"]["summary"]["errors"] == 0
    return result


def test_clean_store_has_no_findings_and_lists_every_file(store: Built) -> None:
    findings, files = diagnose_store(store.root)
    assert findings == []
    names = {p.name for p in files}
    assert {"checkpoint", "topics.json", "20231114221320000", file_name(0)} <= names
    model = load_store(store.root)
    assert model.max_offset == store.max_offset and len(model.messages) == N


def test_index_geometry_is_inferred(store: Built) -> None:
    assert infer_hash_slot_num((store.root / "index" / "20231114221320000").read_bytes()) == SLOTS


def test_body_crc_mismatch_is_located_and_recovery_cuts_there(store: Built, tmp_path: Path) -> None:
    victim = store.messages[-3]
    path, pos = seg(store, victim.offset)
    patch(path, pos + 90, b"\xff")   # inside the body
    (store.root / "abort").write_bytes(b"77")
    findings, _ = diagnose_store(store.root)
    crc = [f for f in findings if f.code == "ROCKETMQ_BODY_CRC_MISMATCH"]
    assert [(f.path, f.position, f.offset) for f in crc] == [(str(path), pos, victim.offset)]
    assert "ROCKETMQ_ABORT_PRESENT" in codes(findings)
    assert "ROCKETMQ_DIRTY_TAIL" in codes(findings)       # two valid messages lie past the cut
    assert load_store(store.root).max_offset == victim.offset
    result = recovered_clean(store, tmp_path)
    assert result["truncated_to"] == victim.offset and result["dropped"]["messages"] == 3


def test_dirty_tail_is_truncated(store: Built, tmp_path: Path) -> None:
    path, pos = seg(store, store.max_offset)
    patch(path, pos, b"\x00\x00\x00\x9e\xda\xa3\x20\xa7" + b"half-written" * 3)
    findings, _ = diagnose_store(store.root)
    tail = [f for f in findings if f.code == "ROCKETMQ_DIRTY_TAIL"]
    assert tail and tail[0].position == pos and tail[0].offset == store.max_offset
    result = recovered_clean(store, tmp_path)
    assert result["truncated_to"] == store.max_offset
    out_seg = tmp_path / "out" / "commitlog" / path.name
    assert out_seg.read_bytes()[pos:] == bytes(FILE_SIZE - pos)


def test_total_size_disagreeing_with_fields(store: Built, tmp_path: Path) -> None:
    victim = store.messages[-1]
    path, pos = seg(store, victim.offset)
    patch(path, pos, struct.pack(">i", victim.size + 4))
    findings, _ = diagnose_store(store.root)
    assert any(f.code in ("ROCKETMQ_MESSAGE_BAD_SIZE", "ROCKETMQ_DIRTY_TAIL") and f.position == pos
               for f in findings)
    assert recovered_clean(store, tmp_path)["truncated_to"] == victim.offset


def test_physical_offset_field_mismatch(store: Built) -> None:
    victim = store.messages[5]
    path, pos = seg(store, victim.offset)
    patch(path, pos + 28, struct.pack(">q", victim.offset + 1000))
    findings, _ = diagnose_store(store.root)
    bad = [f for f in findings if f.code == "ROCKETMQ_PHYSICAL_OFFSET_MISMATCH"]
    assert [(f.position, f.offset) for f in bad] == [(pos, victim.offset)]


def test_queue_offset_gap(tmp_path: Path) -> None:
    w = CommitLogWriter(FILE_SIZE)
    b = Built(tmp_path / "s", w)
    for i in range(6):
        append(w, b.messages, spec(i, queues=1))
    a = w.append(topic="orders", body=b"x", queue_id=0, queue_offset=9, properties={"TAGS": "TagA"},
                 store_timestamp=T0 + 9000)
    finish(b, cq=False)
    findings, _ = diagnose_store(b.root)
    gap = [f for f in findings if f.code == "ROCKETMQ_QUEUE_OFFSET_GAP"]
    assert len(gap) == 1 and gap[0].offset == a.physical_offset
    assert gap[0].details["expected"] == 6 and gap[0].details["actual"] == 9


@pytest.mark.parametrize("field,value", [("size", 99), ("tags", 12345), ("offset", 1)])
def test_consume_queue_entry_mismatch_then_rebuilt(store: Built, tmp_path: Path, field: str, value: int) -> None:
    cq = store.root / "consumequeue" / "orders" / "0" / file_name(0)
    off, size, tags = ENTRY.unpack_from(cq.read_bytes(), 20)
    new = {"size": (off, value, tags), "tags": (off, size, value), "offset": (value, size, tags)}[field]
    patch(cq, 20, ENTRY.pack(*new))
    findings, _ = diagnose_store(store.root)
    bad = [f for f in findings if f.code == "ROCKETMQ_CQ_ENTRY_MISMATCH"]
    assert [(f.path, f.position, f.offset) for f in bad] == [(str(cq), 20, 1)]
    # the broker keeps a unit that passes its own test (offset >= 0, size > 0) and never rewrites it
    recover_store(store.root, tmp_path / "kept")
    kept, _ = diagnose_store(tmp_path / "kept")
    assert [(f.code, f.position) for f in kept if f.code == "ROCKETMQ_CQ_ENTRY_MISMATCH"] == [
        ("ROCKETMQ_CQ_ENTRY_MISMATCH", 20)]
    result = recovered_clean(store, tmp_path, rebuild_queues=True)
    assert result["rebuilt"]["queues"]["mode"] == "rebuilt"


def test_index_slot_and_count_damage_then_rebuilt(store: Built, tmp_path: Path) -> None:
    idx = store.root / "index" / "20231114221320000"
    patch(idx, 32, struct.pack(">i", 3))           # hash slot count
    findings, _ = diagnose_store(store.root)
    assert any(f.code == "ROCKETMQ_INDEX_INVALID" and f.position == 32 for f in findings)
    patch(idx, 40 + 4 * 2, struct.pack(">i", 500))   # a slot pointing past the entries
    findings, _ = diagnose_store(store.root)
    assert any(f.code == "ROCKETMQ_INDEX_INVALID" and f.position == 48 for f in findings)
    result = recovered_clean(store, tmp_path)
    assert result["rebuilt"]["index_files"] == 1


def test_index_entry_pointing_at_the_wrong_message(store: Built) -> None:
    idx = store.root / "index" / "20231114221320000"
    entry1 = 40 + SLOTS * 4 + 20
    patch(idx, entry1 + 4, struct.pack(">q", store.messages[3].offset))
    findings, _ = diagnose_store(store.root)
    assert any(f.code == "ROCKETMQ_INDEX_INVALID" and f.position == entry1 for f in findings)


def test_checkpoint_ahead_of_data(store: Built, tmp_path: Path) -> None:
    write_checkpoint(store.root / "checkpoint", Checkpoint(T0 + 10**9, T0, T0, 0, store.max_offset + 500))
    findings, _ = diagnose_store(store.root)
    ahead = sorted(f.position for f in findings if f.code == "ROCKETMQ_CHECKPOINT_AHEAD")
    assert ahead == [0, 32]
    recovered_clean(store, tmp_path)


def test_blank_filler_damage(store: Built) -> None:
    path = store.root / "commitlog" / file_name(0)
    last = max((m for m in store.messages if m.offset < FILE_SIZE), key=lambda m: m.offset)
    end = last.offset + last.size
    patch(path, end, bytes(8))
    findings, _ = diagnose_store(store.root)
    blank = [f for f in findings if f.code == "ROCKETMQ_BLANK_INVALID"]
    assert blank and blank[0].path == str(path) and blank[0].position == end


def test_file_naming_and_continuity(store: Built) -> None:
    files = sorted((store.root / "commitlog").iterdir())
    files[-1].rename(files[-1].with_name(file_name(int(files[-1].name) + FILE_SIZE)))
    with open(files[0], "ab") as f:
        f.write(b"\0" * 10)
    found = codes(diagnose_store(store.root)[0])
    assert {"ROCKETMQ_FILE_GAP", "ROCKETMQ_FILE_NAME_MISMATCH"} <= found


def test_epoch_file_and_config_damage(store: Built) -> None:
    text = build_epoch_file([EpochEntry(1, 0), EpochEntry(2, store.max_offset + 10)])
    (store.root / "epochFileCheckpoint").write_text(text)
    (store.root / "config" / "broken.json").write_text("{0:")
    findings, _ = diagnose_store(store.root)
    epoch = [f for f in findings if f.code == "ROCKETMQ_EPOCH_FILE_INVALID"]
    assert epoch and epoch[0].offset == store.max_offset + 10
    assert "ROCKETMQ_CONFIG_INVALID" in codes(findings)
    (store.root / "epochFileCheckpoint").write_text(text.replace("2-", "9-", 1) + "x")
    assert "ROCKETMQ_EPOCH_FILE_INVALID" in codes(errors(diagnose_store(store.root)[0]))


def test_recover_refuses_unsafe_outputs_and_non_stores(store: Built, tmp_path: Path) -> None:
    with pytest.raises(UnsafeOutput):
        recover_store(store.root, store.root / "out")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("x")
    with pytest.raises(UnsafeOutput):
        recover_store(store.root, tmp_path / "busy")
    with pytest.raises(UnreadableInput):
        diagnose_store(tmp_path / "busy")


def test_random_damage_never_raises(store: Built, tmp_path: Path) -> None:
    import random
    rng = random.Random(5)
    files = [p for p in store.root.rglob("*") if p.is_file()]
    for _ in range(12):
        p = rng.choice(files)
        data = bytearray(p.read_bytes())
        if data:
            for _ in range(4):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            p.write_bytes(bytes(data))
        diagnose_store(store.root)
    recover_store(store.root, tmp_path / "rec")


def test_real_unit_test_store_reads_clean() -> None:
    root = REALDATA / "rocketmq-apache-pr-unit-store"
    if not root.exists():
        pytest.skip("real data absent")
    findings, files = diagnose_store(root)
    assert not errors(findings) and any(p.name == file_name(0) for p in files)
    model = load_store(root)
    assert len(model.messages) == 47 and model.max_offset == model.messages[-1].end
