"""Timer messages against a real RocketMQ 5.3.3 broker (tests/brokers/rocketmq_timers.py): a store crashed with
timer messages pending, recovered (or repaired) by replog, and a broker started on replog's output must deliver
each timer message exactly once; replog's reading of the crashed copy's timer files must agree with what the
broker reported before the crash (`timerCongestNum`, the deliveries still to come).
"""
from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from replog.formats.fileio import mapped
from replog.formats.rocketmq.timer_wheel import DEFAULT_PRECISION_MS, all_num
from replog.recovery.rocketmq.store_model import load_store
from replog.recovery.rocketmq.timers import pending_deliveries, timer_files
from tests.brokers.rocketmq_timers import (
    CUT,
    LATE,
    LONG,
    SHORT,
    VERSION,
    TimerOutcome,
    cut_late,
    timers_across_crash,
)
from tests.toolkit.test_cli import replog_json

pytestmark = pytest.mark.brokers
FULL = pytest.mark.brokers_full
TIMER_FILES = ("timerwheel", "timerlog/00000000000000000000", "config/timercheck", "config/timermetrics")



def recover(copy: Path, dest: Path) -> Path:
    replog_json("recover", str(copy), "--out", str(dest), "--broker-version", VERSION)
    return dest


def repair(copy: Path, dest: Path) -> Path:
    """A master and a slave that had caught up (an identical copy): `repair` writes both; the master is started."""
    slave = dest.with_name("slave-copy")
    shutil.copytree(copy, slave)
    replog_json("repair", f"master={copy}", f"slave={slave}", "--protocol", "classic", "--broker-version", VERSION,
                "--out", str(dest))
    return dest / "master"


WRITERS = {"recover": recover, "repair": repair}


def cases(*ci: str) -> list[Any]:
    """Each writer; the labels named run in `make test`, the rest in `make test-brokers`."""
    return [pytest.param(name, id=name, marks=() if name in ci else FULL) for name in WRITERS]


def check_agreement(outcome: TimerOutcome) -> None:
    """replog's reading of the crashed copy against what the broker reported before the crash."""
    pending_seqs = set(range(SHORT, SHORT + LONG))
    assert set(outcome.delivered_before) == set(range(SHORT)), \
        f"premise: the broker delivered {sorted(outcome.delivered_before)} before the crash, expected the short ones"
    assert outcome.congest_before == LONG, f"premise: the broker's timerCongestNum is {outcome.congest_before}"
    tf = timer_files(outcome.copy)
    cp = tf.checkpoint()
    assert cp is not None and tf.wheel is not None, f"the crashed copy has no timer checkpoint or wheel: {tf}"
    with mapped(tf.wheel) as buf:
        congest = all_num(buf, cp.last_read_time_ms, DEFAULT_PRECISION_MS)
    assert congest == outcome.congest_before, \
        f"replog's wheel count {congest} != the broker's timerCongestNum {outcome.congest_before}"
    pending = pending_deliveries(load_store(outcome.copy))   # (undamaged copy)
    seqs = {int(k[1:]) for d in pending for k in d.keys if k.startswith("k")}
    assert seqs == pending_seqs, f"replog's pending timer messages {sorted(seqs)} != the undelivered {pending_seqs}"
    assert {d.real_topic for d in pending} == {"TimerLab"}, f"real topics {[d.real_topic for d in pending]}"


def check_doctor(store: Path, tmp_path: Path) -> None:
    """doctor reads every timer file (each in the manifest, none left UNKNOWN_FILE) and finds no error in them."""
    manifest = tmp_path / f"manifest-{store.name}.json"
    doc = replog_json("doctor", str(store), "--manifest", str(manifest))
    listed = {Path(i["path"]).relative_to(store).as_posix() for i in json.loads(manifest.read_text())["inputs"]}
    assert set(TIMER_FILES) <= listed, f"timer files missing from the manifest: {set(TIMER_FILES) - listed}"
    unknown = [f["path"] for f in doc["findings"] if f["code"] == "UNKNOWN_FILE"
               and Path(f["path"]).relative_to(store).as_posix() in TIMER_FILES]
    assert not unknown, f"timer files no check reads: {unknown}"
    errors = [f for f in doc["findings"] if f["code"].startswith("ROCKETMQ_TIMER") and f["severity"] == "error"]
    assert not errors, f"doctor finds timer errors in {store}: {errors}"


@pytest.mark.parametrize("writer", cases("recover"))
def test_timers_delivered_exactly_once(tmp_path: Path, writer: str) -> None:
    outcome = timers_across_crash(tmp_path, WRITERS[writer])
    check_agreement(outcome)
    expected = Counter({seq: 1 for seq in range(SHORT + LONG)})
    twice = sorted(s for s, n in outcome.delivered_after.items() if n > 1)
    missing = sorted(set(expected) - set(outcome.delivered_after))
    assert outcome.delivered_after == expected, (
        f"the broker on replog's {writer} output delivered {sorted(outcome.delivered_after.items())}; "
        f"delivered more than once: {twice}; missing: {missing}")
    check_doctor(outcome.copy, tmp_path)
    check_doctor(outcome.output, tmp_path)


@FULL
def test_lost_scheduled_deliveries_match_the_broker(tmp_path: Path) -> None:
    """The crashed copy damaged so that the broker's recovery drops the last CUT timer messages: the deliveries a
    broker started on the damaged copy never makes are replog's lost scheduled deliveries, and the broker on
    replog's output delivers the others exactly once."""
    result: dict[str, Any] = {}

    def write(copy: Path, dest: Path) -> Path:
        result.update(replog_json("recover", str(copy), "--out", str(dest), "--broker-version", VERSION))
        return dest
    outcome = timers_across_crash(tmp_path, write, cut_late)
    everything = set(range(SHORT + LONG + LATE))
    assert outcome.delivered_own is not None, "premise: a broker started on the damaged copy"
    never = everything - set(outcome.delivered_own)
    assert never == set(range(SHORT + LONG + LATE - CUT, SHORT + LONG + LATE)), \
        f"premise: the broker on the damaged copy never delivered {sorted(never)}"
    lost = result["rebuilt"]["timers"]["lost_scheduled_deliveries"]
    lost_seqs = {int(k[1:]) for d in lost["deliveries"] for k in d["keys"] if k.startswith("k")}
    assert lost_seqs == never, f"replog's lost scheduled deliveries {sorted(lost_seqs)} != never delivered {never}"
    assert lost["topics"] == ["TimerLab"], f"lost topics {lost['topics']}"
    own_twice = sorted(s for s, n in outcome.delivered_own.items() if n > 1)
    assert not own_twice, f"premise: the broker on the damaged copy delivered {own_twice} twice"
    expected = Counter({seq: 1 for seq in everything - never})
    assert outcome.delivered_after == expected, (
        f"the broker on replog's output delivered {sorted(outcome.delivered_after.items())}, expected each of "
        f"{sorted(expected)} once")
