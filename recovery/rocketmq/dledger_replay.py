"""Offline replay of a DLedger group (RocketMQ 4.5-4.9 `enableDLegerCommitLog`): which peer leads and what each
follower keeps, loses and fetches when the group runs again (docs/reference/rocketmq.md §15.6).

The rules are dledger 0.3.x's (openmessaging/dledger, tag dledger-all-0.3.1.2):
- Election (`DLedgerLeaderElector#handleVote`): a peer grants its vote only to a candidate whose log is at least
  as up to date, by (ledgerEndTerm, ledgerEndIndex); so with every peer present the leader has the greatest
  (last term, last index). Among peers tied on it (their logs are equal, so any of them keeps the same entries)
  the name is a race the disk can only bias: every peer restarts as a candidate whose first vote request is in
  its stored term (`lastParseResult` starts `WAIT_TO_REVOTE`), and a peer that voted in that term (`currterm`'s
  voteLeader, restored by `MemberState#loadTerm`) refuses any other candidate in it (`REJECT_ALREADY_VOTED`). So
  the peer a majority of the `currterm` files voted for in the newest term wins its first request unless a
  refused peer's random timer (`getNextTimeToRequestVote`: 300-1000 ms) fires twice before it and wins the next
  term; with no such majority the first timer to fire wins. replog names the majority's peer, else the first
  given, and says the name is not certain.
- Follower repair (`DLedgerEntryPusher.EntryDispatcher#doCompare`): the leader compares from its end index down,
  starting at the follower's end when that is lower; the first index where the follower's entry equals the
  leader's (`DLedgerEntry#equals`: size, magic, index, term, channel, pos, body) is the truncate index, unless it
  is the follower's end (then it only appends). The follower truncates after that entry
  (`DLedgerMmapFileStore#truncate`: to its pos + size) and appends the leader's entries after it: its entries
  past the truncate index are lost, whatever its checkpoint counted as committed.
- A peer restarting after an abnormal stop on 5.2.0+ unindexes its last data file's tail (`dledger_restart`).
"""
from __future__ import annotations

from collections.abc import Sequence

from replog.formats.errors import ReplogError
from replog.recovery.rocketmq.dledger_log import DLedgerLog, EntryRef
from replog.recovery.rocketmq.dledger_restart import restart_findings
from replog.recovery.rocketmq.ha_result import HAReplayResult, Plan, ReplicaOutcome
from replog.recovery.rocketmq.store_model import StoreModel
from replog.recovery.transcript import Transcript

DLEDGER = "dledger"


def _log(store: StoreModel) -> DLedgerLog:
    if store.dledger is None:
        raise ReplogError(f"{store.name} is not a DLedger store: replay a DLedger group's stores together "
                          "(--protocol dledger), a classic or controller group's without it")
    return store.dledger


def choose_leader(stores: Sequence[StoreModel], leader: str | None) -> tuple[StoreModel, str]:
    """The peer that leads once the group runs (the module's election rule), and why."""
    names = [s.name for s in stores]
    if leader is not None:
        if leader not in names:
            raise ReplogError(f"--leader {leader!r} is not one of {', '.join(names)}")
        return next(s for s in stores if s.name == leader), f"{leader} chosen by the user"
    best = max((_log(s).last_term, _log(s).last_index) for s in stores)
    tied = [s for s in stores if (_log(s).last_term, _log(s).last_index) == best]
    why = (f"the greatest (last term, last index) = {best}: DLedgerLeaderElector#handleVote grants votes only to a "
           "log at least as up to date")
    if len(tied) == 1:
        return tied[0], f"{tied[0].name} has {why}"
    voted = _term_leader(stores)
    chosen = next((s for s in tied if s.name == voted or _log(s).peer == voted), tied[0])
    because = ("the likely winner: a majority of the `currterm` files voted for it in their newest term, and "
               "handleVote refuses the others in that term (REJECT_ALREADY_VOTED)" if chosen.name == voted
               or _log(chosen).peer == voted else "the first given: no term file majority, so the first random "
               "vote timer to fire wins (getNextTimeToRequestVote)")
    because += "; equal logs keep the same entries whichever leads"
    return chosen, f"{', '.join(s.name for s in tied)} share {why}; {chosen.name} is {because}"


def _term_leader(stores: Sequence[StoreModel]) -> str | None:
    """The peer a majority of the `currterm` files voted for in the newest term they record, if any."""
    terms = [_log(s).current_term for s in stores if _log(s).current_term is not None]
    if not terms:
        return None
    top = max(t for t in terms if t is not None)
    votes = [_log(s).vote_leader for s in stores if _log(s).current_term == top and _log(s).vote_leader]
    for vote in set(votes):
        if votes.count(vote) * 2 > len(stores):
            return vote
    return None


def common_index(follower: DLedgerLog, leader: DLedgerLog) -> int:
    """`doCompare`'s truncate point: the greatest index at or below both ends where the entries are equal; -1 when
    none is (the follower then takes the leader's log from the leader's first entry)."""
    top = min(follower.last_index, leader.last_index)
    for index in range(top, max(follower.first_index, leader.first_index) - 1, -1):
        if _at(follower, index).same_as(_at(leader, index)):
            return index
    return -1


def _at(log: DLedgerLog, index: int) -> EntryRef:
    return log.entries[index - log.first_index]


def replay_follower(leader: StoreModel, store: StoreModel, events: Transcript) -> ReplicaOutcome:
    """What `store` keeps, loses and fetches as a follower of `leader`."""
    mine, theirs = _log(store), _log(leader)
    out = ReplicaOutcome(store, "follower", "in_sync")
    common = common_index(mine, theirs)
    events.add("compare", store.name, leader=leader.name, follower_end_index=mine.last_index,
               leader_end_index=theirs.last_index, common_index=common)
    keep = _at(mine, common).end if common >= 0 else min(store.min_offset, leader.min_offset)
    dropped = [e for e in mine.entries if e.index > common]
    if dropped:
        out.status = "truncated"
        out.truncated_to = keep
        out.diverged_at = dropped[0].pos
        out.lost = [e.message for e in dropped if e.message is not None]
        events.add("truncate", store.name, truncate_index=common, pos=_at(mine, common).pos if common >= 0 else None,
                   truncated_to=keep, lost_entries=len(dropped),
                   rule="DLedgerEntryPusher#doCompare: truncate after the last equal entry")
    fetched = [e for e in theirs.entries if e.index > common]
    if fetched:
        out.status = "fetched" if not dropped else out.status
        out.fetched_bytes = sum(e.size for e in fetched)
        out.frames = len(fetched)
        events.add("append", store.name, first_index=fetched[0].index, last_index=fetched[-1].index,
                   from_offset=fetched[0].pos, to_offset=theirs.entries[-1].end)
    _after(out, leader)
    return out


def _after(out: ReplicaOutcome, leader: StoreModel) -> None:
    """Every peer ends with the leader's log, committed to its end once a majority holds it."""
    end = leader.max_offset
    out.plan = out.repair_plan = Plan(out.truncated_to if out.truncated_to is not None else out.model.max_offset,
                                      out.truncated_to if out.truncated_to is not None else out.model.max_offset,
                                      end, [], end)
    out.max_offset_after = end
    out.min_offset_after = out.model.min_offset if out.model.files else leader.min_offset
    out.confirm_after = end


def replay_dledger(stores: Sequence[StoreModel], leader: str | None = None) -> HAReplayResult:
    """Replay a DLedger group's stores: the leader, then each follower against it, in the order given."""
    master, why = choose_leader(stores, leader)
    events = Transcript()
    log = _log(master)
    events.add("leader", master.name, last_term=log.last_term, last_index=log.last_index,
               max_offset=master.max_offset, committed_index=log.committed_index)
    results = []
    for s in stores:
        if s is master:
            r = ReplicaOutcome(s, "leader", "leader")
            _after(r, master)
        else:
            r = replay_follower(master, s, events)
        r.findings += restart_findings(s)     # each peer restarts from its store (5.2.0+: dledger_restart)
        results.append(r)
    return HAReplayResult(DLEDGER, master.name, why, results, events)
