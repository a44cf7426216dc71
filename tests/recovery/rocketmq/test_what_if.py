"""`replay --what-if` for RocketMQ on hand-built stores: every store as master, classic and controller mode.

Stores: "a" holds messages 0..39 (it led last: epoch 2 from message 20, confirm offset at message 30), "b" holds
0..29 in epoch 1 then a diverged tail of its own, "c" 0..19. Controller mode: "a" is the controller's choice
(highest epoch) and loses nothing of the others but b's own tail; "b" as master cuts a's 30..39 (10 messages, the
ones below the confirm offset acknowledged) and "c" loses a's 20..39.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from replog.formats.errors import ReplogError
from replog.formats.rocketmq.commitlog import CommitLogWriter
from replog.recovery.rocketmq.ha import AUTOSWITCH, CLASSIC, same_epoch_point
from replog.recovery.rocketmq.store_model import load_store
from replog.recovery.rocketmq.what_if import CLEAN, UNCLEAN, WAIT, commands_for, identity, what_if_paths
from tests.recovery.rocketmq.stores import FILE_SIZE, append, build, spec

COMMON = [spec(i) for i in range(20)]


def offset_after(n: int) -> int:
    w, out = CommitLogWriter(FILE_SIZE), []
    for s in [spec(i) for i in range(n)]:
        append(w, out, s)
    return w.max_offset


def stores(root: Path) -> list[str]:
    x20, x30 = offset_after(20), offset_after(30)
    build(root / "a", [spec(i) for i in range(40)], epochs=[(1, 0), (2, x20)], confirm=x30)
    build(root / "b", [spec(i) for i in range(20)] + [spec(i, body=b"own" * 9) for i in range(20, 25)],
          epochs=[(1, 0)])
    build(root / "c", COMMON, epochs=[(1, 0)])
    for name, bid in (("a", 0), ("b", 1), ("c", 2)):
        (root / name / "brokerIdentity").write_text(f"DefaultCluster#broker-a#{bid}")
    return [f"{n}={root / n}" for n in "abc"]


def test_controller_mode_ranks_the_controllers_choice_first(tmp_path: Path) -> None:
    got = what_if_paths(stores(tmp_path), AUTOSWITCH)
    d = got.to_dict()
    assert [(c["leader"], c["how"]) for c in d["choices"]][0] == ("a", WAIT), "the controller's choice first"
    by = {c["leader"]: c for c in d["choices"]}
    assert by["a"]["lost"]["records"] == 5, "a as master: b's own tail 20..24 is cut"
    assert by["c"]["lost"]["records"] == 20 + 5, "c as master: a's 20..39 and b's own tail"
    assert by["c"]["how"] == UNCLEAN, "c ends below the confirm offset"
    assert by["b"]["how"] == UNCLEAN, "b's own tail diverges from a's log: never in a's SyncStateSet"
    assert by["c"]["lost"]["acknowledged"] == 10 + 5, "a's 20..29 and b's tail lie below a's confirm offset"
    assert by["c"]["lost"]["unconfirmed"] == 10, "a's 30..39 lie past every recorded confirm offset"
    assert by["a"]["lost"]["unconfirmed"] == 0, "b's tail lies below a's confirm offset"
    notes = [n for n in d["notes"] if "confirm offset" in n]
    assert notes and "c: 10" in notes[0] and "a:" not in notes[0], f"the lower-bound note names c only: {notes}"
    rec = d["recommended"]
    assert (rec["mode"], rec["command"]) == ("controller", "start a's broker first"), rec
    assert d["broker_name"] == "broker-a" and d["cluster"] == "DefaultCluster", "identity from brokerIdentity"


def test_controller_mode_elect_master_command(tmp_path: Path) -> None:
    """Without a's store only b and c remain: the recommended one needs electMaster with its id."""
    specs = stores(tmp_path)[1:]
    got = what_if_paths(specs, AUTOSWITCH)
    best = got.recommended
    assert (best.master, best.how) == ("b", WAIT), "b: the highest (epoch, offset) of the two"
    c = next(x for x in got.choices if x.master == "c")
    model = next(r.model for r in c.result.replicas if r.model.name == "c")
    command, steps = commands_for(c, identity(model), AUTOSWITCH)
    assert command == "mqadmin electMaster -a <controller address> -c DefaultCluster -bn broker-a -b 2", command
    assert any("enableElectUncleanMaster" in s for s in steps), steps


def test_classic_mode_switch_and_stall(tmp_path: Path) -> None:
    got = what_if_paths(stores(tmp_path), CLASSIC)
    d = got.to_dict()
    by = {c["leader"]: c for c in d["choices"]}
    assert by["a"]["how"] == WAIT, "brokerId 0 is the classic master"
    assert by["a"]["lost"]["records"] == 5, "b's own tail, cut by the operator fix"
    assert got.loses_or_fails, "the operator fix cuts messages even behind the best master: exit 1"
    assert by["c"]["failed"] == ["a", "b"], "a and b are ahead of c: classic HA stalls them"
    assert by["c"]["how"] == "switch", "classic: no election, a reconfiguration"
    assert d["mode"] == "classic", "mode from the protocol"
    assert d["choices"][0]["leader"] == "a", "ranking"
    c = next(x for x in got.choices if x.master == "c")
    command, steps = commands_for(c, None, CLASSIC)
    assert command == "set brokerId=0 and brokerRole=ASYNC_MASTER in c's broker.conf", command
    assert any("never truncates" in s for s in steps), steps


def test_usage_errors(tmp_path: Path) -> None:
    specs = stores(tmp_path)
    with pytest.raises(ReplogError, match="at least two stores"):
        what_if_paths(specs[:1], AUTOSWITCH)
    with pytest.raises(ReplogError, match="unknown protocol"):
        what_if_paths(specs, "epoch")


def test_controller_mode_a_prefix_of_the_last_master_is_clean(tmp_path: Path) -> None:
    """A store holding a prefix of the last master's log (at or past every confirm offset) may be in its
    SyncStateSet: electing it is clean; one running past the last master's end (an older epoch's tail) is not."""
    x20, x30 = offset_after(20), offset_after(30)
    build(tmp_path / "a", [spec(i) for i in range(40)], epochs=[(1, 0), (2, x20)], confirm=x30)
    build(tmp_path / "p", [spec(i) for i in range(35)], epochs=[(1, 0), (2, x20)], confirm=x30)
    build(tmp_path / "t", [spec(i) for i in range(20)] + [spec(i, body=b"t" * 40) for i in range(20, 60)],
          epochs=[(1, 0)])
    got = what_if_paths([f"{n}={tmp_path / n}" for n in "apt"], AUTOSWITCH).to_dict()
    by = {c["leader"]: c["how"] for c in got["choices"]}
    assert by == {"a": WAIT, "p": CLEAN, "t": UNCLEAN}, by


def test_default_master_returning_under_its_old_epoch(tmp_path: Path) -> None:
    """The lab's decision point in small: "old" led epoch 1 and wrote 20..29 alone (its own bytes), "new" was
    elected in epoch 2 at message 20 and wrote 20..24 of its own. If the controller keeps "new" under epoch 2 when
    it returns, `changeToMaster` moves epoch 2's start to its end: "old" then truncates there (not at message 20)
    and keeps 5 diverged messages; the note says so, with both points."""
    x20 = offset_after(20)
    build(tmp_path / "old", [spec(i) for i in range(30)], epochs=[(1, 0)])
    build(tmp_path / "new", [spec(i) for i in range(20)] + [spec(i, body=b"n" * 27) for i in range(20, 25)],
          epochs=[(1, 0), (2, x20)])
    old, new = (load_store(tmp_path / n, n) for n in ("old", "new"))
    got = same_epoch_point(new, old)
    assert got is not None, "the moved epoch changes old's consistent point"
    point, kept = got
    assert point == new.max_offset, f"old truncates at new's end, got {point}"
    assert [m.physical_offset for m in kept][0] == x20 and len(kept) == 5, "old keeps its own 20..24"
    assert same_epoch_point(old, new) is None, "old has no later epoch to move"
    notes = what_if_paths([f"old={tmp_path / 'old'}", f"new={tmp_path / 'new'}"], AUTOSWITCH).notes
    hit = [n for n in notes if "keeps epoch 2" in n]
    assert hit and f"truncates at {new.max_offset}, not {x20}" in hit[0] and "keeps 5 messages" in hit[0], notes
