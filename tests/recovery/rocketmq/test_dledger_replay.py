"""DLedger stores through the store model and replay, on hand-built peers: the Raft rules of dledger 0.3.x
(election by last term/index, `DLedgerEntryPusher#doCompare` truncation) and the model's offsets (pos + 48)."""
from __future__ import annotations

from pathlib import Path

import pytest

from replog.formats.errors import ReplogError
from replog.formats.rocketmq import commitlog as cl
from replog.formats.rocketmq import dledger as dl
from replog.recovery.rocketmq.dledger_replay import choose_leader, common_index, replay_dledger
from replog.recovery.rocketmq.doctor import diagnose_store
from replog.recovery.rocketmq.ha import replay_stores
from replog.recovery.rocketmq.store_model import load_store

FILE = 4096


def store(root: Path, peer: str, bodies: list[tuple[int, int]], *, committed: int | None = None,
          vote: tuple[int, str] | None = None) -> Path:
    """A store root holding `dledger-<peer>`: entries of (sequence number, term)."""
    w = dl.DLedgerWriter(FILE)
    for seq, term in bodies:
        w.append(cl.build_message(topic="T", body=f"seq-{seq}".encode(), queue_id=0, queue_offset=seq,
                                  store_timestamp=seq), term)
    d = w.write_to(root / peer / f"dledger-{peer}", committed_index=committed)
    if vote is not None:
        (d / dl.CURRTERM).write_text(f"currTerm={vote[0]}\nvoteLeader={vote[1]}\n")
    return root / peer


def group(tmp_path: Path) -> list[Path]:
    """n0 led term 1 and appended 5 and 6 without a quorum; n1 and n2 went on in term 2 (n2 elected)."""
    common = [(i, 1) for i in range(5)]
    return [store(tmp_path, "n0", common + [(100, 1), (101, 1)], committed=4, vote=(1, "n0")),
            store(tmp_path, "n1", common + [(i, 2) for i in range(5, 9)], vote=(2, "n2")),
            store(tmp_path, "n2", common + [(i, 2) for i in range(5, 9)], vote=(2, "n2"))]


def test_model_reads_entries_as_messages(tmp_path: Path) -> None:
    paths = group(tmp_path)
    m = load_store(paths[0], "n0")
    assert m.dledger is not None, "not read as DLedger"
    assert [x.physical_offset for x in m.messages] == [e.pos + 48 for e in m.dledger.entries], "offset is not pos+48"
    assert m.max_offset == m.dledger.entries[-1].end, "model end is not the last kept entry's end"
    assert m.dledger.committed_offset == m.dledger.entries[4].end, "committed offset is not entry 4's end"
    assert m.recovery()["rule"] == "dledger", f"recovery {m.recovery()}"


def test_doctor_finds_nothing_on_a_clean_peer(tmp_path: Path) -> None:
    findings, files = diagnose_store(group(tmp_path)[1])
    assert [f for f in findings if f.severity != "info"] == [], f"findings {findings}"
    assert any(p.parent.name == "index" for p in files), "index files not among the files read"


def test_election_and_truncation(tmp_path: Path) -> None:
    stores = [load_store(p, p.name) for p in group(tmp_path)]
    leader, why = choose_leader(stores, None)
    assert leader.name == "n2", f"leader {leader.name}: {why}"
    assert common_index(stores[0].dledger, leader.dledger) == 4, "common index is not 4"  # type: ignore[arg-type]
    result = replay_dledger(stores)
    n0 = next(r for r in result.replicas if r.model.name == "n0")
    entries = stores[0].dledger.entries  # type: ignore[union-attr]
    assert n0.status == "truncated", f"n0 {n0.status}"
    assert n0.truncated_to == entries[4].end, f"truncated to {n0.truncated_to}, entry 4 ends at {entries[4].end}"
    assert [m.queue_offset for m in n0.lost] == [100, 101], f"lost {[m.queue_offset for m in n0.lost]}"
    assert n0.max_offset_after == leader.max_offset, "n0 does not end with the leader's log"
    n1 = next(r for r in result.replicas if r.model.name == "n1")
    assert (n1.status, n1.lost) == ("in_sync", []), f"n1 {n1.status} {n1.lost}"


def test_tied_peers_name_the_term_majority_and_say_it_is_a_race(tmp_path: Path) -> None:
    """n1 and n2 hold equal logs; n2 has the votes of term 2 (handleVote: REJECT_ALREADY_VOTED to n1 in it)."""
    stores = [load_store(p, p.name) for p in group(tmp_path)]
    leader, why = choose_leader(stores, None)
    assert leader.name == "n2", f"the term's majority peer must be named: {leader.name}"
    assert "REJECT_ALREADY_VOTED" in why, f"the reason does not cite the vote rule: {why}"
    assert "same entries" in why, f"the reason does not say the tie keeps the same entries: {why}"


def test_tied_peers_without_a_term_majority_take_the_first_given(tmp_path: Path) -> None:
    paths = [store(tmp_path, name, [(i, 1) for i in range(3)], vote=(1, name)) for name in ("x", "y", "z")]
    leader, why = choose_leader([load_store(p, p.name) for p in paths], None)
    assert leader.name == "x", f"the first given must be named: {leader.name}"
    assert "getNextTimeToRequestVote" in why, f"the reason does not say the timers decide: {why}"


def test_longest_term_wins_over_longest_log(tmp_path: Path) -> None:
    """A longer log of an older term loses the vote (handleVote compares ledgerEndTerm first)."""
    a = store(tmp_path, "a", [(i, 1) for i in range(9)])
    b = store(tmp_path, "b", [(i, 1) for i in range(3)] + [(50, 3)])
    stores = [load_store(a, "a"), load_store(b, "b")]
    assert choose_leader(stores, None)[0].name == "b", "the greater last term must lead"
    r = replay_dledger(stores).replicas[0]
    assert (r.status, len(r.lost)) == ("truncated", 6), f"a: {r.status}, lost {len(r.lost)}"


def test_follower_behind_only_appends(tmp_path: Path) -> None:
    a = store(tmp_path, "a", [(i, 1) for i in range(3)])
    b = store(tmp_path, "b", [(i, 1) for i in range(6)])
    r = replay_dledger([load_store(a, "a"), load_store(b, "b")]).replicas[0]
    assert (r.status, r.truncated_to, r.frames) == ("fetched", None, 3), f"{r.status} {r.truncated_to} {r.frames}"


def test_classic_refuses_dledger_stores(tmp_path: Path) -> None:
    stores = [load_store(p, p.name) for p in group(tmp_path)]
    with pytest.raises(ReplogError, match="--protocol dledger"):
        replay_stores(stores, None, "classic")


def test_cli_ls_and_replay_name_the_dledger_store(tmp_path: Path) -> None:
    import json

    from tests.toolkit.test_cli import run_replog

    paths = group(tmp_path)
    ls = run_replog("ls", str(paths[0]), "--format", "json")
    assert ls.returncode == 0, ls.stderr
    store = json.loads(ls.stdout)["store"]
    assert (store["dledger"]["peer"], store["dledger"]["committed_index"], store["messages"]) == ("n0", 4, 7), store
    table = run_replog("ls", str(paths[0]), "--format", "table")
    assert "DLedger peer n0: entries 0..6" in table.stdout, table.stdout[-500:]
    done = run_replog("replay", *[f"{p.name}={p}" for p in paths], "--format", "json")
    assert done.returncode == 1, f"replay exit {done.returncode} (n0 loses 2): {done.stderr[-500:]}"
    result = json.loads(done.stdout)
    assert (result["protocol"], result["leader"]) == ("dledger", "n2"), f"{result['protocol']} {result['leader']}"


def test_doctor_says_uncommitted_entries_wait_for_a_leader(tmp_path: Path) -> None:
    """n0's entries past its committed index have no consume-queue units: the broker dispatches them only once
    committed (DLedgerCommitLog#getData stops at committedPos), not at start."""
    findings, _ = diagnose_store(group(tmp_path)[0])
    notes = [f.message for f in findings if f.code == "ROCKETMQ_CQ_ENTRY_MISMATCH"]
    assert notes and all("2 of them lie past the DLedger committed index 4" in n for n in notes), f"notes {notes}"
