"""LMQ multi-dispatch and transactional messages against a real RocketMQ 5.3.3 broker (`rocketmq_misc`).

Premise (stated in `lmq_and_transactions`): the broker is stopped cleanly and copied; a damaged copy loses the
last op batch to a crash; a broker restarted on that copy is read through its admin API. replog reads the copies
offline and must agree, field by field, with what the broker served:
* every LMQ queue's units (queue index, commit-log offset, size) resolved from the messages' INNER_MULTI_* properties,
  and `doctor` finding no mismatch in them and no file it does not know (the manifest lists every store file);
* `recover` of the damaged copy writing the LMQ units the restarted broker serves (it re-dispatches dropped ones);
* each transaction's state on the damaged copy (committed, rolled back, committed with its op message lost, or
  unresolved) as the restarted broker's half, op and real queues give it, and none open on the clean copy;
* the LMQ group's committed offset from `config/lmqConsumerOffset.json` against the LMQ queue's max offset.
"""
from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from replog.recovery.rocketmq.store_model import load_store
from tests.brokers.rocketmq_misc import (
    HALF_TOPIC,
    LMQ_COMMITTED,
    LMQ_GROUP,
    LMQ_QUEUES,
    OP_TOPIC,
    TXN_TOPIC,
    QueueView,
    lmq_and_transactions,
    removed_halves,
)
from tests.brokers.test_rocketmq_recover import written_units
from tests.toolkit.test_cli import replog_json

pytestmark = pytest.mark.brokers
FULL = pytest.mark.brokers_full
OPEN = {"commit_op_lost", "unresolved"}


def cases(*ci: str) -> list[Any]:
    return [pytest.param(v, id=v, marks=() if v in ci else FULL) for v in ("5.3.3",)]



def broker_states(view: QueueView) -> dict[int, str]:
    """Half queue offset -> transaction state, from what the broker serves: removed when an op message it serves
    names the offset, committed when its real topic serves a message with the half's transaction id."""
    removed = removed_halves(view[(OP_TOPIC, 0)])
    committed = {s.props.get("UNIQ_KEY") for q in (0, 1) for s in view[(TXN_TOPIC, q)]}
    out = {}
    for half in view[(HALF_TOPIC, 0)]:
        done, commit = half.index in removed, half.props.get("__transactionId__") in committed
        out[half.index] = ("committed" if commit else "rolled_back") if done else \
            ("commit_op_lost" if commit else "unresolved")
    return out


def replog_states(impact: dict[str, Any], store: str) -> dict[int, str]:
    return {t["half_queue_offsets"][0]: t["state_after"] for t in impact["transactions"] if t["store"] == store}


def check_recover(damaged: Path, out: Path, view: QueueView) -> None:
    """`replog recover` of the damaged copy keeps the LMQ units the restarted broker serves (its abnormal recovery
    re-dispatches the dropped ones through the messages' INNER_MULTI_* properties)."""
    predicted = replog_json("recover", str(damaged), "--out", str(out), "--broker-version", "5.3.3")
    for q in LMQ_QUEUES:
        theirs = [(s.index, s.physical_offset, s.size) for s in view[(q, 0)]]
        ours = written_units(Path(predicted["output"]), q, 0)
        assert ours == theirs, f"recover {q}: replog writes {ours}, the broker serves {theirs}"


def check_lmq_units(outcome_clean: Path, view: QueueView) -> None:
    heads = load_store(outcome_clean).lmq_heads()
    for q in LMQ_QUEUES:
        broker = [(s.index, s.physical_offset, s.size) for s in view[(q, 0)]]
        ours = [(offset, m.physical_offset, m.size) for offset, m in heads.get((q, 0), [])]
        assert broker, f"the broker serves nothing in {q}: the scenario did not multi-dispatch"
        assert ours == broker, f"{q}: replog resolves {ours}, the broker serves {broker}"


def check_doctor(store: Path, manifest: Path) -> None:
    """No error-severity unit mismatch (LMQ units resolve; a unit past the log end is a warning: the broker drops
    it), no unknown file, every file in the manifest."""
    doc = replog_json("doctor", str(store), "--manifest", str(manifest))
    codes = Counter(f["code"] for f in doc["findings"] if f["severity"] == "error")
    assert codes["ROCKETMQ_CQ_ENTRY_MISMATCH"] == 0, f"doctor: LMQ/CQ mismatches {doc['findings']}"
    unknown = [f["path"] for f in doc["findings"] if f["code"] == "UNKNOWN_FILE"]
    assert not unknown, f"doctor does not know these store files: {unknown}"
    listed = {Path(e["path"]).resolve() for e in json.loads(manifest.read_text())["inputs"]}
    on_disk = {(Path(d) / n).resolve() for d, _, names in os.walk(store) for n in names}
    assert on_disk <= listed, f"files missing from the manifest: {sorted(on_disk - listed)}"


@pytest.mark.parametrize("version", cases("5.3.3"))
def test_lmq_and_transactions_agree_with_broker(tmp_path: Path, version: str) -> None:
    o = lmq_and_transactions(tmp_path, version)
    check_lmq_units(o.clean, o.before)
    check_doctor(o.clean, tmp_path / "manifest-clean.json")
    check_doctor(o.damaged, tmp_path / "manifest-damaged.json")
    assert len(o.after[(LMQ_QUEUES[0], 0)]) == len(o.before[(LMQ_QUEUES[0], 0)]), \
        f"the restarted broker re-dispatched the dropped {LMQ_QUEUES[0]} units: {o.after[(LMQ_QUEUES[0], 0)]}"
    check_recover(o.damaged, tmp_path / "recovered", o.after)

    impact = replog_json("impact", f"master={o.damaged}", f"slave={o.clean}", "--protocol", "classic",
                         "--leader", "master")
    after, before = broker_states(o.after), broker_states(o.before)
    assert set(after.values()) & OPEN, f"the cut lost no op message the broker needed: {after}"
    assert replog_states(impact, "master") == {o: s for o, s in after.items() if s in OPEN}, \
        f"transactions on the damaged copy: replog {replog_states(impact, 'master')}, broker {after}"
    assert replog_states(impact, "slave") == {o: s for o, s in before.items() if s in OPEN}, \
        f"transactions on the clean copy: replog {replog_states(impact, 'slave')}, broker {before}"

    lmq = [g for g in impact["consumer_groups"] if g["group"] == LMQ_GROUP and g["store"] == "master"]
    assert [(g["topic"], g["queue_id"], g["committed_offset"]) for g in lmq] == [(LMQ_QUEUES[0], 0, LMQ_COMMITTED)], \
        f"LMQ group offsets from lmqConsumerOffset.json: {lmq}"
    served = len(o.after[(LMQ_QUEUES[0], 0)])
    assert lmq[0]["max_offset_after"] == served, \
        f"{LMQ_QUEUES[0]} max offset: replog {lmq[0]['max_offset_after']}, the broker serves {served} units"
