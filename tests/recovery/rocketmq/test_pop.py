"""POP revive log (`recovery.rocketmq.pop`) on stores written byte by byte: checkpoints (tag "ck", `PopCheckPoint`
fastjson body) and acks (tag "ack" `AckMsg`, "bAck" `BatchAckMsg`) in `rmq_sys_REVIVE_LOG_<cluster>`, merged as
`PopReviveService#consumeReviveMessage` merges them."""
from __future__ import annotations

import json
from pathlib import Path

from replog.recovery.rocketmq.pop import ACK_LOST, CHECKPOINT_LOST, checkpoints, compare
from replog.recovery.rocketmq.store_model import load_store
from tests.recovery.rocketmq.independent import Store

REVIVE = "rmq_sys_REVIVE_LOG_LabCluster"


def ck(start: int, num: int, bitmap: int = 0, pop_time: int = 1000, diffs: list[int] | None = None) -> bytes:
    doc = {"so": start, "pt": pop_time, "it": 30000, "bm": bitmap, "n": num, "q": 0, "t": "T", "c": "g", "ro": 0,
           "bn": "broker-a"} | ({"d": diffs} if diffs is not None else {})
    return json.dumps(doc).encode()


def ack(start: int, offset: int, pop_time: int = 1000) -> bytes:
    doc = {"ao": offset, "so": start, "c": "g", "t": "T", "q": 0, "pt": pop_time, "bn": "broker-a"}
    return json.dumps(doc).encode()


def revive_store(tmp_path: Path, name: str, acks: list[int], *, with_ck: bool = True) -> Path:
    """One checkpoint of offsets 10, 11, 13 (diffs 0, 1, 3), the first acked in its bitmap; `acks` as ack messages."""
    st = Store(file_size=8192)
    st.append("T", 0, b"x")
    if with_ck:
        st.append(REVIVE, 0, ck(10, 3, bitmap=0b001, diffs=[0, 1, 3]), tags="ck")
    for offset in acks:
        st.append(REVIVE, 0, ack(10, offset), tags="ack")
    st.append(REVIVE, 1, json.dumps({"aol": [13], "so": 10, "c": "g", "t": "T", "q": 0, "pt": 999}).encode(),
              tags="bAck")   # another pop time: not this checkpoint's
    return st.write(tmp_path / name)


def test_acks_merge_into_their_checkpoint(tmp_path: Path) -> None:
    cks = checkpoints(load_store(revive_store(tmp_path, "s", [11])).messages)
    assert [(c.offsets, c.unacked) for c in cks.values()] == [((10, 11, 13), (13,))], \
        f"10 acked in the bitmap, 11 by an ack, 13 is revived: {cks}"


def test_consumed_revive_offset_skips_processed_checkpoints(tmp_path: Path) -> None:
    msgs = load_store(revive_store(tmp_path, "s", [])).messages
    assert checkpoints(msgs, {(REVIVE, 0): 5}) == {}, "a checkpoint below the revive group's offset is processed"


def test_lost_ack_and_lost_checkpoint(tmp_path: Path) -> None:
    full = checkpoints(load_store(revive_store(tmp_path, "a", [11, 13])).messages)
    no_ack = checkpoints(load_store(revive_store(tmp_path, "b", [11])).messages)
    no_ck = checkpoints(load_store(revive_store(tmp_path, "c", [], with_ck=False)).messages)
    assert [(what, offsets) for _, what, offsets in compare(full, no_ack)] == [(ACK_LOST, (13,))], \
        "13's ack is lost: delivered again"
    assert compare(full, no_ck) == [], "a fully acked checkpoint lost: nothing to revive"
    assert [(what, offsets) for _, what, offsets in compare(no_ack, no_ck)] == [(CHECKPOINT_LOST, (13,))], \
        "a checkpoint with 13 un-acked is lost: 13 is never revived"


def test_malformed_revive_bodies_are_skipped(tmp_path: Path) -> None:
    st = Store(file_size=8192)
    st.append(REVIVE, 0, b"{not json", tags="ck")
    st.append(REVIVE, 0, b"[1, 2]", tags="ack")
    st.append(REVIVE, 0, json.dumps({"so": "x", "n": None, "t": "T", "c": "g"}).encode(), tags="ck")
    cks = checkpoints(load_store(st.write(tmp_path / "s")).messages)
    assert [(c.start_offset, c.offsets) for c in cks.values()] == [(0, ())], \
        f"bad JSON skipped, wrong field types read as 0: {cks}"


TIMER = "rmq_sys_wheel_timer"


def held(st: Store, body: bytes, tags: str, revive_queue: int = 0) -> None:
    """A revive message the timer holds (timerWheelEnable): in the timer topic, the revive topic in REAL_TOPIC."""
    st.append(TIMER, 0, body, tags=tags, props={"REAL_TOPIC": REVIVE, "REAL_QID": str(revive_queue),
                                                "TIMER_OUT_MS": "99999999999999"})


def test_timer_held_checkpoints_and_acks_are_pending(tmp_path: Path) -> None:
    """A 5.3.3 broker stopped within the invisible time keeps its checkpoints and acks in the timer topic."""
    st = Store(file_size=8192)
    st.append("T", 0, b"x")
    held(st, ck(10, 3, bitmap=0b001, diffs=[0, 1, 3]), "ck", revive_queue=2)
    held(st, ack(10, 11), "ack")
    cks = checkpoints(load_store(st.write(tmp_path / "s")).messages)
    assert [(c.offsets, c.unacked, c.revive_queue, c.revive_offset) for c in cks.values()] == \
        [((10, 11, 13), (13,), 2, -1)], f"the held checkpoint with the held ack merged: {cks}"


def test_a_delivered_checkpoint_outranks_its_timer_copy(tmp_path: Path) -> None:
    """Once the timer delivered a checkpoint, its revive-topic copy decides: processed below the revive offset."""
    st = Store(file_size=8192)
    st.append("T", 0, b"x")
    held(st, ck(10, 3, diffs=[0, 1, 3]), "ck")
    st.append(REVIVE, 0, ck(10, 3, diffs=[0, 1, 3]), tags="ck")
    msgs = load_store(st.write(tmp_path / "s")).messages
    assert checkpoints(msgs, {(REVIVE, 0): 1}) == {}, "the delivered copy is processed: the held one is not pending"
    assert [c.revive_offset for c in checkpoints(msgs).values()] == [0], "the delivered copy, at revive offset 0"
