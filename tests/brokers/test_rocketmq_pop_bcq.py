"""BatchConsumeQueue and POP revive records a real RocketMQ 5.3.3 broker wrote (tests/brokers/rocketmq_pop_bcq.py),
read in place by replog: `doctor` finds no error in them and reads every file, `dump` lists every batch unit, and
each unit (base offset, batch size, commit-log offset, size, tag code) equals what the broker served through its
admin API.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from replog.recovery.rocketmq.impact import read_offsets
from replog.recovery.rocketmq.pop import (
    ACK_TAG,
    BATCH_ACK_TAG,
    REVIVE_GROUP,
    REVIVE_PREFIX,
    TIMER_TOPIC,
    checkpoints,
)
from replog.recovery.rocketmq.store_model import load_store
from tests.brokers.rocketmq_pop_bcq import (
    ACKED,
    BATCH_TOPIC,
    BATCHES,
    INVISIBLE_MS,
    POP_COUNT,
    POP_GROUP,
    POP_SIZES,
    POP_TOPIC,
    BatchOutcome,
    batch_queue_store,
    pop_store,
)
from tests.toolkit.test_cli import replog_json

pytestmark = [pytest.mark.brokers, pytest.mark.brokers_full]



def replog_units(store: Path) -> list[tuple[int, int, int, int, int, int]]:
    """(queue, base offset, batch size, commit-log offset, size, tag code) of every `batch_cq_entry` `dump` lists,
    file by file in name order."""
    out = []
    for q in sorted(BATCHES):
        for path in sorted((store / "batchconsumequeue" / BATCH_TOPIC / str(q)).iterdir()):
            for e in replog_json("dump", str(path)):
                assert e["kind"] in ("file", "batch_cq_entry"), f"dump of {path} reports {e}"
                if e["kind"] == "batch_cq_entry":
                    out.append((q, e["base_offset"], e["batch_size"], e["physical_offset"], e["size"],
                                e["tags_code"]))
    return out


def check_units(outcome: BatchOutcome) -> None:
    broker = [(u.queue, u.base_offset, u.batch_size, u.physical_offset, u.size, u.tags_code) for u in outcome.units]
    ours = replog_units(outcome.store)
    assert ours == broker, f"replog's batch units {ours} != the broker's {broker}"


def check_doctor(store: Path, tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.json"
    doc = replog_json("doctor", str(store), "--manifest", str(manifest))
    listed = {Path(i["path"]).relative_to(store).as_posix() for i in json.loads(manifest.read_text())["inputs"]}
    bcq = store / "batchconsumequeue"
    files = {p.relative_to(store).as_posix() for p in bcq.rglob("*") if p.is_file()} if bcq.is_dir() else set()
    assert files <= listed, f"batch consume-queue files missing from the manifest: {files - listed}"
    unknown = [f["path"] for f in doc["findings"] if f["code"] == "UNKNOWN_FILE"]
    assert not unknown, f"files no check reads: {unknown}"
    errors = [f for f in doc["findings"] if f["severity"] in ("error", "warning")]
    assert not errors, f"doctor finds problems in the broker's clean store: {errors}"


def test_batch_consume_queue_matches_the_broker(tmp_path: Path) -> None:
    outcome = batch_queue_store(tmp_path)
    sizes = {q: tuple(n for sq, n, _, _ in outcome.sent if sq == q) for q in BATCHES}
    assert sizes == BATCHES and all(s == "SEND_OK" for _, _, s, _ in outcome.sent), \
        f"premise: every batch sent: {outcome.sent}"
    served = {q: (0, sum(BATCHES[q])) for q in BATCHES}
    assert outcome.ranges == served, f"premise: the broker serves offsets {outcome.ranges}, expected {served}"
    assert [u.batch_size for u in outcome.units] == [n for q in sorted(BATCHES) for n in BATCHES[q]], \
        f"premise: the broker keeps one unit per batch: {outcome.units}"
    assert len(list((outcome.store / "batchconsumequeue" / BATCH_TOPIC / "0").iterdir())) > 1, \
        "premise: queue 0 spans several batch consume-queue files"
    check_units(outcome)
    check_doctor(outcome.store, tmp_path)


@pytest.mark.parametrize("ack_mode", ["single", "batch"])
def test_pop_revive_view_matches_the_broker(tmp_path: Path, ack_mode: str) -> None:
    """replog's reading of the stopped store's revive records (checkpoints still to process, acks merged) must name
    exactly the popped offsets the restarted broker delivers again, and those acked as acked; the acks written one
    per message ("ack") or one per checkpoint ("bAck", a batch ack)."""
    outcome = pop_store(tmp_path, ack_mode)
    assert sorted(outcome.popped) == list(range(POP_COUNT)), f"premise: every message popped: {outcome.popped}"
    assert outcome.acked == {s: "OK" for s in ACKED}, f"premise: the acks succeeded: {outcome.acked}"
    first_revive = min(t for _, t, _ in outcome.popped.values()) + INVISIBLE_MS - 1000   # ck deliver time
    assert outcome.stopped_ms < first_revive, \
        f"premise: the broker stopped ({outcome.stopped_ms}) before the first checkpoint's deliver time {first_revive}"
    again = sorted(s for s, _, _ in outcome.redelivered)
    unacked = sorted(set(range(POP_COUNT)) - ACKED)
    assert again == unacked, f"premise: the restarted broker delivered again {again}, expected the un-acked {unacked}"
    model = load_store(outcome.copy)
    tags = {m.field("TAGS") for m in model.messages if m.topic.startswith(REVIVE_PREFIX) or m.topic == TIMER_TOPIC}
    expected_tag = {"single": ACK_TAG, "batch": BATCH_ACK_TAG}[ack_mode]
    assert expected_tag in tags, f"premise: the {ack_mode} acks left {expected_tag!r} revive records; tags {tags}"
    offsets, _ = read_offsets(model, [])
    consumed = {(t, q): o for (t, g), qs in offsets.items() if g == REVIVE_GROUP for q, o in qs.items()}
    cks = [ck for ck in checkpoints(model.messages, consumed).values() if ck.group == POP_GROUP]
    expected = [(0, POP_SIZES[0]), (POP_SIZES[0], POP_SIZES[1])]
    assert sorted((ck.start_offset, len(ck.offsets)) for ck in cks) == expected, \
        f"replog's pending checkpoints of {POP_GROUP} on the stopped store: {cks}"
    assert all(ck.topic == POP_TOPIC and ck.invisible_time == INVISIBLE_MS for ck in cks), f"checkpoints {cks}"
    pending = sorted(o for ck in cks for o in ck.unacked)
    offset_of = {seq: o for seq, (o, _, _) in outcome.popped.items()}
    assert pending == sorted(offset_of[s] for s in again), \
        f"replog's un-acked offsets {pending} != the offsets of what the broker delivered again {again}"
    acked = sorted(o for ck in cks for o in ck.acked)
    assert acked == sorted(offset_of[s] for s in ACKED), f"replog's acked offsets {acked}, acked seqs {sorted(ACKED)}"
    check_doctor(outcome.copy, tmp_path)
