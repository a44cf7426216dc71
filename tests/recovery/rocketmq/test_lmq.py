"""LMQ multi-dispatch (`recovery.rocketmq.lmq`) on stores written byte by byte (`independent`): the rules of
`LmqDispatch`, `ConsumeQueue#multiDispatchLmqQueue` and `LmqConsumerOffsetManager` (apache/rocketmq 5.3.3)."""
from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from replog.recovery.rocketmq.doctor import diagnose_store
from replog.recovery.rocketmq.impact import read_offsets
from replog.recovery.rocketmq.lmq import lmq_targets
from replog.recovery.rocketmq.queue_recovery import recover_queues
from replog.recovery.rocketmq.recover import rebuild_consume_queues
from replog.recovery.rocketmq.store_model import load_store
from tests.recovery.rocketmq.independent import Sent, Store, write_queue
from tests.recovery.rocketmq.independent import units as cq_units

DISPATCH = {"a": "%LMQ%a", "ab": "%LMQ%a,%LMQ%b"}


def test_targets_follow_the_brokers_rules() -> None:
    props = {"INNER_MULTI_DISPATCH": "%LMQ%a,%LMQ%b", "INNER_MULTI_QUEUE_OFFSET": "4,7"}
    assert lmq_targets("T", props) == (("%LMQ%a", 4), ("%LMQ%b", 7)), "both LMQ units"
    assert lmq_targets("%RETRY%g", props) == (), "retry topics are not multi-dispatched"
    assert lmq_targets("rmq_sys_x", props) == (), "system topics are not multi-dispatched"
    assert lmq_targets("T", {**props, "INNER_MULTI_QUEUE_OFFSET": "4"}) == (), "lists of unequal length: none"
    assert lmq_targets("T", {"INNER_MULTI_DISPATCH": "%LMQ%a"}) == (), "no offsets (enableLmq off): none"
    mixed = {"INNER_MULTI_DISPATCH": "plain,%LMQ%a/x,%LMQ%c", "INNER_MULTI_QUEUE_OFFSET": "null,1,2"}
    assert lmq_targets("T", mixed) == (("%LMQ%c", 2),), "non-LMQ names and names with a separator are skipped"


def lmq_store(tmp_path: Path, *, bad_unit: bool = False) -> Path:
    """Four messages on T/0, each dispatched to %LMQ%a, every other one to %LMQ%b, with the units the dispatcher
    writes (queue id 0, the offsets of INNER_MULTI_QUEUE_OFFSET); `bad_unit` moves one %LMQ%b unit's offset."""
    st = Store(file_size=4096)
    lmq: dict[str, list[Sent]] = {"%LMQ%a": [], "%LMQ%b": []}
    for i in range(4):
        names = DISPATCH["ab" if i % 2 == 0 else "a"].split(",")
        offsets = [len(lmq[n]) for n in names]
        s = st.append("T", 0, f"m{i}".encode(), props={"INNER_MULTI_DISPATCH": ",".join(names),
                                                      "INNER_MULTI_QUEUE_OFFSET": ",".join(map(str, offsets))})
        for name, offset in zip(names, offsets, strict=True):
            lmq[name].append(Sent(name, 0, offset, s.offset, s.size, s.store_ts, s.tags))
    root = st.write(tmp_path / "store")
    if bad_unit:
        lmq["%LMQ%b"][1].offset = lmq["%LMQ%a"][1].offset
        lmq["%LMQ%b"][1].size = lmq["%LMQ%a"][1].size
    for name, sents in lmq.items():
        write_queue(root, name, 0, sents, 2000)
    return root


def test_lmq_units_verify(tmp_path: Path) -> None:
    root = lmq_store(tmp_path)
    findings, _ = diagnose_store(root)
    assert [f for f in findings if f.code.startswith("ROCKETMQ_CQ") or f.code == "ROCKETMQ_QUEUE_OFFSET_GAP"] == [], \
        f"LMQ units point at the messages that name them: {findings}"
    heads = load_store(root).lmq_heads()
    assert [o for o, _ in heads[("%LMQ%b", 0)]] == [0, 1], "%LMQ%b gets every other message"


def test_a_unit_its_message_does_not_name_is_an_error(tmp_path: Path) -> None:
    findings, _ = diagnose_store(lmq_store(tmp_path, bad_unit=True))
    bad = [f for f in findings if f.code == "ROCKETMQ_CQ_ENTRY_MISMATCH" and f.severity == "error"]
    assert len(bad) == 1, f"one %LMQ%b unit points at a message dispatched to %LMQ%a only: {findings}"
    assert "%LMQ%b" in bad[0].path, f"the finding names the LMQ queue: {bad[0].path}"


def test_lmq_offsets_are_read(tmp_path: Path) -> None:
    root = lmq_store(tmp_path)
    (root / "config").mkdir()
    (root / "config" / "lmqConsumerOffset.json").write_text(json.dumps(
        {"offsetTable": {"T@g": {"0": 2}}, "lmqOffsetTable": {"%LMQ%a@%LMQ%a": 3}}))
    skipped: list[str] = []
    offsets, sources = read_offsets(load_store(root), skipped)
    assert offsets == {("T", "g"): {0: 2}, ("%LMQ%a", "%LMQ%a"): {0: 3}}, f"both tables read: {offsets}"
    assert sources == [str(root / "config" / "lmqConsumerOffset.json")], f"one source: {sources}"
    assert skipped == [], f"nothing skipped: {skipped}"


def test_abnormal_recovery_redispatches_lmq_units(tmp_path: Path) -> None:
    """`ConsumeQueue#putMessagePositionInfoWrapper` runs `multiDispatchLmqQueue` for each message the recovery
    dispatches: a dropped LMQ unit comes back at the offset the message names."""
    root = lmq_store(tmp_path)
    (root / "abort").write_bytes(b"")
    path = root / "consumequeue" / "%LMQ%a" / "0" / f"{0:020d}"
    data = bytearray(path.read_bytes())
    data[60:80] = bytes(20)                       # the last of its four units
    path.write_bytes(bytes(data))
    model = load_store(root)
    queues = recover_queues(model, model.max_offset, 2000, legacy_reput=False)
    got = [(o, size) for _, o, size in queues[("%LMQ%a", 0)].files[0].units(2000) if size > 0]
    want = [(m.physical_offset, m.size) for _, m in model.lmq_heads()[("%LMQ%a", 0)]]
    assert got == want, f"%LMQ%a after recovery: {got}, its messages: {want}"


@given(st.lists(st.tuples(st.text("abcXYZ09_-", min_size=1, max_size=8), st.integers(0, 2**62)), min_size=1,
                max_size=5))
def test_targets_round_trip(units: list[tuple[str, int]]) -> None:
    """What `LmqDispatch#wrapLmqDispatch` writes (names and offsets joined by ",") reads back unit by unit."""
    props = {"INNER_MULTI_DISPATCH": ",".join(f"%LMQ%{n}" for n, _ in units),
             "INNER_MULTI_QUEUE_OFFSET": ",".join(str(o) for _, o in units)}
    assert lmq_targets("T", props) == tuple((f"%LMQ%{n}", o) for n, o in units), "every unit, in order"


def test_rebuilt_queues_carry_lmq_units(tmp_path: Path) -> None:
    """HA repair's rebuild (`recover.rebuild_consume_queues`) writes the LMQ units a store with LMQ queues had."""
    model = load_store(lmq_store(tmp_path))
    out = tmp_path / "rebuilt"
    rebuild_consume_queues(out, model.messages, 2000, multi_dispatch=True)
    for name in ("%LMQ%a", "%LMQ%b"):
        want = [(m.physical_offset, m.size) for _, m in model.lmq_heads()[(name, 0)]]
        got = [(o, size) for o, size, _ in cq_units(out, name, 0)]
        assert got == want, f"{name}: rebuilt {got}, its messages {want}"
