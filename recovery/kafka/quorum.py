"""Copies of the KRaft metadata log (`__cluster_metadata-0`) replayed as the quorum replays them (KIP-595).

A metadata log given as `--metadata` (or once among partition replicas) is the
controller's record of a partition's elections (`controller.py`). Several
copies of it given as the replicas themselves are the voters of the
controller quorum: this module reads what each holds beside its log
(`quorum-state`, the KRaft snapshots `<end offset>-<epoch>.checkpoint`),
chooses the leader as the quorum does, and replays the voters' logs by the
KRaft fetch rules (`protocol.replay_raft`) with the model every replay uses
(`replica.Replica`, `replay.ReplicaResult`), so the lost batches, the
truncation points and the JSON are those of a partition's replay, plus a
`quorum` object: the commit point (high watermark) as the copies stand and
after the replay, and what each voter loses above it.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from replog.formats.errors import FormatError, ReplogError, UnreadableInput
from replog.formats.fileio import mapped, read_small
from replog.formats.findings import Finding, finding
from replog.formats.kafka import names
from replog.formats.kafka.internal.metadata import decode_metadata_record
from replog.formats.kafka.partition_files import list_partition_files
from replog.formats.kafka.quorum_state import CODE as QS_CODE
from replog.formats.kafka.quorum_state import QuorumState, parse_quorum_state
from replog.formats.kafka.segment import SegmentWalk, batch_records
from replog.recovery.kafka.election import OPTION, LeaderChoice
from replog.recovery.kafka.protocol import EPOCH, RaftCommit, replay_raft
from replog.recovery.kafka.replica import Replica, load_replicas
from replog.recovery.kafka.replica_log import ReplicaLog
from replog.recovery.progress import Tally

if TYPE_CHECKING:
    from replog.recovery.kafka.replay import ReplayResult

QUORUM_STATE, VOTE = "quorum_state", "vote"
MAX_LOST_SAMPLE = 20   # lost metadata records named in the output, per voter


@dataclass(frozen=True)
class Voter:
    """What a voter's metadata log dir holds beside its batches."""

    name: str
    node_id: int | None
    state: QuorumState | None
    snapshots: tuple[tuple[int, int], ...]    # complete snapshots (end offset, epoch), oldest first
    findings: tuple[Finding, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        s = self.state
        latest = self.snapshots[-1] if self.snapshots else None
        return {"name": self.name, "node_id": self.node_id,
                "quorum_state": None if s is None else {"leader_id": s.leader_id, "leader_epoch": s.leader_epoch,
                                                        "voted_id": s.voted_id, "current_voters": s.current_voters},
                "latest_snapshot": None if latest is None else {"end_offset": latest[0], "epoch": latest[1]}}


def read_voter(rep: Replica) -> Voter:
    """`quorum-state` (`FileQuorumStateStore`) and the complete snapshots of a voter's log dir; a damaged
    quorum-state is a finding, and the voter counts as holding none."""
    d = Path(rep.path)
    state, found = None, []
    qs = d / names.QUORUM_STATE
    if qs.is_file():
        try:
            state = parse_quorum_state(read_small(qs))
        except (FormatError, UnreadableInput) as e:
            found.append(finding(getattr(e, "code", QS_CODE), str(qs), message=str(e)))
    snaps = []
    for p in list_partition_files(d).kraft_snapshots:
        parsed = names.parse_kraft_snapshot_name(p.name)
        if parsed is not None and parsed.state == "complete":
            snaps.append((parsed.end_offset, parsed.epoch))
    return Voter(rep.name, rep.broker_id, state, tuple(sorted(snaps)), tuple(found))


def voter_count(voters: Sequence[Voter]) -> int:
    """How many voters the quorum has: the `currentVoters` of the newest quorum-state that lists them
    (quorum-state version 0, static `controller.quorum.voters`), else the copies given. A voter whose
    copy is missing holds nothing as far as the replay knows."""
    listed = [v.state for v in voters if v.state is not None and v.state.current_voters]
    if not listed:
        return len(voters)
    newest = max(listed, key=lambda s: s.leader_epoch)
    return max(len(newest.current_voters or ()), len(voters))


def _up_to_date(r: Replica) -> tuple[int, int]:
    """A log's (last epoch, end offset): the order a voter compares a candidate's log with its own before
    granting a vote (raft `KafkaRaftClient.handleVoteRequest` -> `OffsetAndEpoch.compareTo`)."""
    return (r.epochs.latest_epoch if r.epochs.latest_epoch is not None else -1, r.log_end_offset)


def can_win(replicas: Sequence[Replica], name: str, voters: int) -> bool:
    """A majority of the voters would vote for `name`: their logs are no more up to date than its own
    (voters not given are not counted for it)."""
    mine = _up_to_date(next(r for r in replicas if r.name == name))
    return sum(_up_to_date(r) <= mine for r in replicas) > voters // 2


def choose_quorum_leader(replicas: Sequence[Replica], voters: Sequence[Voter], count: int,
                         leader: str | None = None) -> LeaderChoice:
    """The leader the quorum has or elects: the one `--leader` names; else the leader of the highest epoch
    any copy's quorum-state records, when its copy is given; else the voter whose log is most up to date
    (last epoch, then end offset), which a majority votes for. Its epoch: the recorded one when it is that
    leader, else one above every epoch recorded (a new election)."""
    states = [v.state for v in voters if v.state is not None]
    top = max((s.leader_epoch for s in states), default=-1)
    top = max([top] + [r.epochs.latest_epoch for r in replicas if r.epochs.latest_epoch is not None])
    by_id = {v.node_id: v.name for v in voters if v.node_id is not None}
    recorded = max(states, key=lambda s: s.leader_epoch, default=None)
    if leader is not None:
        if leader not in [r.name for r in replicas]:
            raise ReplogError(f"--leader {leader!r} is not one of {', '.join(r.name for r in replicas)}")
        same = recorded is not None and by_id.get(recorded.leader_id) == leader
        epoch = recorded.leader_epoch if same and recorded is not None else top + 1
        clean = can_win(replicas, leader, count)
        return LeaderChoice(leader, not clean, f"{leader} chosen by the user, leader epoch {epoch}"
                            + ("" if clean else "; a majority of the voters hold a more up-to-date log, so they "
                                                "would not vote for it: records they hold may be lost"), OPTION, epoch)
    if recorded is not None and recorded.leader_id >= 0 and recorded.leader_id in by_id:
        name = by_id[recorded.leader_id]
        return LeaderChoice(name, False, f"{name} is node {recorded.leader_id}, the leader of epoch "
                            f"{recorded.leader_epoch} by quorum-state", QUORUM_STATE, recorded.leader_epoch)
    best = max(replicas, key=_up_to_date)
    why = (f"{best.name} holds the most up-to-date log (last epoch {_up_to_date(best)[0]}, end offset "
           f"{best.log_end_offset}): a majority votes for it")
    if recorded is not None and recorded.leader_id >= 0:
        why = f"quorum-state names leader {recorded.leader_id} of epoch {recorded.leader_epoch}, no copy given; " + why
    return LeaderChoice(best.name, False, why, VOTE, top + 1)


@dataclass
class QuorumView:
    """The quorum's side of a metadata-log replay, for the `quorum` object of the JSON."""

    voters: list[Voter]
    count: int
    commit: RaftCommit
    leader_end: int                          # the leader's log end before the replay
    lost: dict[str, dict[str, Any]] = field(default_factory=dict)   # per voter: what its lost records were

    def uncommitted(self) -> dict[str, int] | None:
        """The leader's offsets above the commit point as the copies stand: committed only by the replay."""
        lo = self.commit.before if self.commit.before is not None else self.commit.epoch_start
        return None if lo >= self.leader_end else {"first_offset": lo, "last_offset": self.leader_end - 1}

    def to_dict(self) -> dict[str, Any]:
        c = self.commit
        return {"voters": self.count, "epoch_start_offset": c.epoch_start,
                "start_of_epoch_pending": c.start_record_pending,
                "high_watermark_before": c.before, "high_watermark_after": c.after,
                "uncommitted_on_leader": self.uncommitted(),
                "voter_states": [v.to_dict() | {"lost_records": self.lost.get(v.name)} for v in self.voters]}


def lost_records(lost: ReplicaLog) -> dict[str, Any] | None:
    """What a voter's lost batches held: metadata record types counted, the topics they created, and the
    first `MAX_LOST_SAMPLE` records. None records of the leader's log are among them: Raft commits a
    record only once a majority holds it, and a majority's log is the elected leader's or older."""
    if not lost:
        return None
    types: Counter[str] = Counter()
    topics: list[str] = []
    sample: list[dict[str, Any]] = []
    for piece in lost.pieces:
        if piece.file:
            _walk_lost(piece, types, topics, sample)
    return {"types": dict(types), "topics_created": topics, "sample": sample}


def _walk_lost(piece: Any, types: Counter[str], topics: list[str], sample: list[dict[str, Any]]) -> None:
    """Count the records of one lost piece into `types`/`topics`/`sample` (an undecodable batch counts
    as `unreadable`)."""
    try:
        with mapped(piece.file, windows=True) as buf:
            for block in piece.blocks():
                for pos, size in zip(block.position.tolist(), block.size.tolist(), strict=True):
                    one = buf[pos:pos + size]
                    info = next(SegmentWalk(one, piece.file).batches(), None)
                    if info is None:
                        continue
                    if info.is_control:
                        types["control"] += 1
                        continue
                    for rec in batch_records(one, info):
                        _name_record(rec.offset, rec.value, types, topics, sample)
    except (FormatError, OSError, ReplogError):
        types["unreadable"] += 1


def _name_record(offset: int, value: bytes | None, types: Counter[str], topics: list[str],
                 sample: list[dict[str, Any]]) -> None:
    decoded = decode_metadata_record(value) if value else {"type": "empty"}
    kind = str(decoded.get("type"))
    types[kind] += 1
    raw = decoded.get("data")
    data: dict[str, Any] = raw if isinstance(raw, dict) else {}
    if kind == "TopicRecord" and isinstance(data.get("name"), str):
        topics.append(data["name"])
    if len(sample) < MAX_LOST_SAMPLE:
        sample.append({"offset": offset, "type": kind} | ({"name": data["name"]} if "name" in data else {}))


def replay_quorum(named: Sequence[tuple[str, str]], leader: str | None = None,
                  tally: Tally | None = None) -> ReplayResult:
    """Replay copies of the metadata log (`(NAME, PATH)` of each `__cluster_metadata-0`) as the voters of
    the controller quorum: loaded as any replica is (`replica.load_replicas`: startup recovery of each copy),
    the leader chosen by `choose_quorum_leader`, replayed by `protocol.replay_raft`."""
    from replog.recovery.kafka.replay import ReplayResult, replica_results

    replicas = load_replicas(named, tally)
    voters = [read_voter(r) for r in replicas]
    for r, v in zip(replicas, voters, strict=True):
        r.findings.extend(v.findings)
    count = voter_count(voters)
    choice = choose_quorum_leader(replicas, voters, count, leader)
    lead = next(r for r in replicas if r.name == choice.name).copy()
    followers = [r.copy() for r in replicas if r.name != choice.name]
    leader_end = lead.log_end_offset
    transcript, outcomes, commit = replay_raft(lead, followers, choice.leader_epoch, count)
    results = replica_results(replicas, choice.name, [lead, *followers], outcomes)
    view = QuorumView(voters, count, commit, leader_end)
    for res in results:
        found = lost_records(res.lost)
        if found is not None:
            view.lost[res.replica.name] = found
    return ReplayResult(EPOCH, choice, results, transcript, quorum=view)


def refuse_repair(result: ReplayResult) -> None:
    """Repair writes partition replicas; the voters of a quorum bring themselves in line (each truncates
    at its diverging epoch and fetches, `replay_raft`), and a rewritten voter log would lack the leader's
    start-of-epoch records and the quorum-state that goes with it. A usage error, before anything is written."""
    if result.quorum is not None:
        raise ReplogError("repair of copies of the KRaft metadata log is not supported: start the controllers "
                          "and let the voters fetch from the leader (replay shows what each truncates and loses)")
