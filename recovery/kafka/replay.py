"""`replay`: load replicas of one partition, choose the leader, replay, explain what each keeps or loses.

The result carries the contract's JSON shape (`REPLAY_RESULT`, `to_dict`) and
the plan a repair applies: for each replica, its final batch list (with where
each batch's bytes come from).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from replog.formats.errors import FormatError, ReplogError
from replog.formats.shape import Field, Shape
from replog.recovery.kafka.compaction import (
    POLICIES,
    CompactionDifference,
    Side,
    first_record_difference,
)
from replog.recovery.kafka.controller import (
    METADATA_DIR,
    ControllerRecord,
    Returning,
    read_metadata_log,
    read_partition_state,
    recorded_leader,
    replica_broker_id,
)
from replog.recovery.kafka.divergence import (
    BUCKET_BITS,
    LostSummary,
    first_difference,
    first_differing_bucket,
    lost_batches,
    summarize_lost,
)
from replog.recovery.kafka.election import OPTION, Candidate, LeaderChoice, elect
from replog.recovery.kafka.premise import Premise, check_running, judge
from replog.recovery.kafka.profile import CLEANUP, UNCLEAN, ClusterProfile, ProfileApplier
from replog.recovery.kafka.protocol import EPOCH, HW, FollowerOutcome, replay
from replog.recovery.kafka.replica import Replica, default_name, load_replicas
from replog.recovery.kafka.replica_log import Piece, ReplicaLog
from replog.recovery.kafka.tiered import tiered_replicas
from replog.recovery.naming import parse_named, replica_names
from replog.recovery.progress import Progress, Tally
from replog.recovery.transcript import Transcript

if TYPE_CHECKING:
    from replog.recovery.kafka.quorum import QuorumView


@dataclass
class ReplicaResult:
    replica: Replica                # before the replay
    final: Replica                  # after it: the repair plan for this replica
    outcome: FollowerOutcome | None
    diverged_at: int | None
    lost: ReplicaLog = field(default_factory=ReplicaLog)        # removed and not fetched again, in order
    lost_summary: LostSummary = field(default_factory=LostSummary)
    lost_key_sample: list[str] = field(default_factory=list)
    running: bool = False                   # its broker keeps running (`--running`)
    fetcher_restarts: bool | None = None    # a follower's fetcher starts (and truncates); None for the leader
    compaction: CompactionDifference | None = None   # batches differ below the cleaner points, records agree

    def to_dict(self) -> dict[str, Any]:
        return REPLICA_RESULT.dump(self)

    @property
    def loses_or_fails(self) -> bool:
        """This replica loses records, or the broker's fetcher would fail on it (`failed`): what an
        operator must look at before letting the brokers start."""
        return self.lost_summary.records > 0 or (self.outcome is not None and self.outcome.failed is not None)


def _lost(r: ReplicaResult) -> dict[str, Any]:
    lost = r.lost_summary
    return {"records": lost.records, "first_offset": lost.first_offset, "last_offset": lost.last_offset,
            "bytes": lost.bytes, "first_timestamp": lost.first_timestamp, "max_timestamp": lost.max_timestamp,
            "producer_ids": lost.producer_ids,
            "acknowledged": lost.first_offset is not None and lost.first_offset < r.replica.high_watermark,
            "key_sample": r.lost_key_sample}


def _fetched(r: ReplicaResult) -> dict[str, int | None]:
    """What the follower copied from the leader: counts, and the lowest and highest offset (null when none)."""
    fetched = r.outcome.fetched if r.outcome else ReplicaLog()
    return {"records": fetched.records, "batches": fetched.batches,
            "first_offset": fetched.first_offset if fetched else None,
            "last_offset": fetched.last_offset if fetched else None}


MAX_REPLICA_FINDINGS = 100  # what loading a replica found (checkpoints, damage, epoch contradictions), shown


REPLICA_RESULT = Shape(
    Field("name", "replica.name"), Field("path", "replica.path"),
    Field("log_start_offset_before", "replica.log_start_offset"),
    Field("log_start_offset_after", "final.log_start_offset"),
    Field("log_end_offset_before", "replica.log_end_offset"), Field("high_watermark_before", "replica.high_watermark"),
    Field("truncated_to", "outcome.truncated_to"),
    Field("log_end_offset_after", "final.log_end_offset"), Field("high_watermark_after", "final.high_watermark"),
    "diverged_at", Field("lost", _lost), Field("fetched", _fetched),
    Field("epochs_before", lambda r: [list(e) for e in r.replica.epochs.entries]),
    Field("epochs_after", lambda r: [list(e) for e in r.final.epochs.entries]),
    Field("failed", lambda r: r.outcome.failed if r.outcome else None),
    Field("findings", lambda r: [f.to_dict() for f in r.replica.findings[:MAX_REPLICA_FINDINGS]]),
    Field("holes", lambda r: [{"first_offset": a, "last_offset": b} for a, b in r.outcome.holes] if r.outcome else []),
    "running", "fetcher_restarts",
    Field("clean_shutdown", "replica.clean_shutdown"), Field("from_checkpoints", "replica.from_checkpoints"),
    Field("cleaner_offset", "replica.cleaner_offset"),
    Field("compaction_difference", lambda r: r.compaction.to_dict() if r.compaction is not None else None),
    # Tiered storage: below the local log start the records are held in remote storage (`tiered`)
    Field("local_log_start_offset_before", "replica.local_start"),
    Field("local_log_start_offset_after", "final.local_start"),
)


@dataclass
class ReplayResult:
    protocol: str
    leader: LeaderChoice
    replicas: list[ReplicaResult]
    transcript: Transcript
    controller: ControllerRecord | None = None   # the controller's record of elections, when given
    premise: Premise | None = None               # which replicas restart, which keep running
    profile: ClusterProfile | None = None        # the settings the rules used, read or assumed
    cleanup_policy: str | None = None            # the topic's cleanup.policy when known (option or metadata)
    quorum: QuorumView | None = None             # copies of the KRaft metadata log replayed as its quorum

    def to_dict(self) -> dict[str, Any]:
        return REPLAY_RESULT.dump(self)

    @property
    def loses_or_fails(self) -> bool:
        """Any replica loses records or would fail: the contract's exit 1 for replay, repair and impact."""
        return any(r.loses_or_fails for r in self.replicas)


def _elections(result: ReplayResult) -> list[dict[str, Any]]:
    """The controller's record, change by change, each leader id named by the replica on that broker."""
    if result.controller is None:
        return []
    names = {replica_broker_id(r.replica.name, r.replica.broker_id): r.replica.name for r in result.replicas}
    return [e.to_dict() | {"leader_replica": names.get(e.leader)} for e in result.controller.history]


def _controller(result: ReplayResult) -> dict[str, Any] | None:
    c = result.controller
    return None if c is None else {"source": c.source, "path": c.path, "topic_id": c.topic_id}


REPLAY_RESULT = Shape(
    Field("system", lambda _: "kafka"), "protocol", Field("leader", "leader.name"),
    Field("leader_source", "leader.source"), Field("leader_epoch", "leader.leader_epoch"),
    Field("topic", lambda r: r.replicas[0].replica.topic),
    Field("partition", lambda r: r.replicas[0].replica.partition),
    Field("leader_election", "leader", shape=Shape("unclean", "explanation")),
    Field("controller", _controller), Field("elections", _elections),
    Field("premise", lambda r: r.premise.to_dict() if r.premise is not None else None),
    Field("profile", lambda r: r.profile.to_dict(r.replicas[0].replica.topic) if r.profile is not None else None),
    "cleanup_policy",
    Field("replicas", shape=REPLICA_RESULT), Field("events", "transcript.events"),
    Field("quorum", lambda r: r.quorum.to_dict() if r.quorum is not None else None),
)


def choose_leader(replicas: Sequence[Replica]) -> LeaderChoice:
    """The replica a controller could elect, judged from disk alone (`election.elect`)."""
    return elect([Candidate(r.name, r.high_watermark, r.log_end_offset, r.epochs.latest_epoch) for r in replicas])


@dataclass(frozen=True)
class Comparison:
    """Where two replicas' logs part (`diverged_at`), and where they differ only as their cleaners left them."""

    diverged_at: int | None
    compaction: CompactionDifference | None = None


def compare_replicas(a: Replica, b: Replica, start: int | None = None, policy: str | None = None) -> Comparison:
    """The one rule replay and repair compare replicas by.

    Batches (base offset, last offset, CRC) are paired in order from the first reaching `start` (default:
    the higher log start). Where they first differ below C, the higher of the two cleaner points
    (`Replica.cleaned_below`; `policy` is the topic's cleanup.policy when known), the records are compared
    as Kafka's cleaner keeps them (`compaction.first_record_difference`): agreeing there, the replicas differ
    by compaction only, and the batches are paired again from C. Logs out of offset order (damaged), or
    records that cannot be decoded, keep the batch pairing's answer."""
    start = max(a.log_start_offset, b.log_start_offset) if start is None else start
    at = _first_batch_difference(a, b, start)
    if at is None:
        return Comparison(None)
    up_to = max(a.cleaned_below(policy), b.cleaned_below(policy))
    if at >= up_to or not (a.log.ordered and b.log.ordered):
        return Comparison(at)
    lo = max(start, a.log_start_offset, b.log_start_offset)
    try:
        sa, sb = (Side(r.log, r.cleaned_below(policy), r.kept_end, r.epochs, r.epoch_checkpointed) for r in (a, b))
        found = first_record_difference(sa, sb, lo, up_to)
    except ReplogError:   # a batch whose records cannot be decoded: the batch pairing's answer stands
        return Comparison(at)
    if found is not None:
        return Comparison(found)
    return Comparison(_first_batch_difference(a, b, up_to), CompactionDifference(at, up_to))


def first_divergence(a: Replica, b: Replica, start: int | None = None, policy: str | None = None) -> int | None:
    """First offset both logs hold but with different batches (boundaries or CRC), else None; below the
    cleaner points, with different records as the cleaner keeps them (`compare_replicas`)."""
    return compare_replicas(a, b, start, policy).diverged_at


def _first_batch_difference(a: Replica, b: Replica, start: int) -> int | None:
    """Batches paired in order from the first reaching `start`; the fingerprints of two logs as loaded let
    the pairing start at the first bucket of offsets where they differ."""
    skip_to = start
    if a.fingerprint is not None and b.fingerprint is not None:
        # buckets holding no batch that reaches `start` are not paired (below the cleaner points, say)
        reaching = [r.log.from_offset(start) for r in (a, b)]
        firsts = [log.first_offset for log in reaching if log]
        at_least = min(firsts) >> BUCKET_BITS if firsts else None
        bucket = first_differing_bucket(a.fingerprint, b.fingerprint, at_least)
        if bucket is None:
            return None
        skip_to = max(start, bucket << BUCKET_BITS)
    return first_difference(a.log, b.log, start, skip_to)


def run_replay(replicas: Sequence[Replica], leader: str | None = None, protocol: str = EPOCH,
               controller: ControllerRecord | None = None, running: Sequence[str] = (),
               profile: ClusterProfile | None = None) -> ReplayResult:
    """Replay the replicas behind `leader` (a NAME), else behind the leader the controller's record gives,
    else behind the one the election rule picks from disk. `running`: the NAMEs whose broker keeps
    running (`premise`); every other replica restarts from its copy on disk. `profile`: the settings
    the rules use (min.insync.replicas, ELR, unclean elections, cleanup.policy); Kafka's defaults without
    it, except cleanup.policy: unless read or stated, the cleaner checkpoints alone tell where replicas
    were compacted."""
    profile = profile if profile is not None else ClusterProfile()
    if protocol not in (EPOCH, HW):
        raise ReplogError(f"unknown protocol {protocol!r} for Kafka: use epoch or hw")
    cleanup_policy = profile.known(replicas[0].topic, CLEANUP) if replicas else None
    replicas = tiered_replicas(list(replicas), profile)
    names = [r.name for r in replicas]
    if len(set(names)) != len(names):
        raise ReplogError(f"replica names must be unique: {names}")
    if len({(r.topic, r.partition) for r in replicas}) > 1:
        raise ReplogError("replicas are not all the same topic-partition: "
                          + ", ".join(f"{r.name}={r.topic}-{r.partition}" for r in replicas))
    check_running(names, running)
    if controller is not None:
        _check_not_stale(replicas, controller)
    if leader is not None:
        choice = user_choice(replicas, leader, controller)
    elif controller is not None:
        choice = controller_choice(replicas, controller, returning(replicas, running, profile))
    else:
        choice = choose_leader(replicas)
    premise = judge(replicas, choice.name, running, controller, choice.leader_epoch)
    lead = next(r for r in replicas if r.name == choice.name).copy()
    followers = [r.copy() for r in replicas if r.name != choice.name]
    transcript, outcomes = replay(lead, followers, protocol, choice.leader_epoch, continuing=premise.continuing,
                                  new_epoch=premise.new_election, min_isr=effective_min_isr(replicas, controller,
                                                                                            profile))
    results = replica_results(replicas, choice.name, [lead] + followers, outcomes, premise, cleanup_policy)
    return ReplayResult(protocol, choice, results, transcript, controller, premise, profile,
                        cleanup_policy)


def replica_results(replicas: Sequence[Replica], leader: str, finals: Sequence[Replica],
                    outcomes: dict[str, FollowerOutcome], premise: Premise | None = None,
                    policy: str | None = None) -> list[ReplicaResult]:
    """Each replica before and after a replay behind `leader`: where it parted from the leader's log, and
    the batches it removed and did not fetch again (what it really loses)."""
    by_name = {r.name: r for r in finals}
    original_leader = next(x for x in replicas if x.name == leader)
    results = []
    for r in replicas:
        final = by_name[r.name]
        outcome = outcomes.get(r.name)
        lost = lost_batches(outcome.removed, final.log) if outcome else ReplicaLog()
        compared = compare_replicas(r, original_leader, policy=policy)
        results.append(ReplicaResult(r, final, outcome, compared.diverged_at, lost, summarize_lost(lost),
                                     sample_keys(lost), premise is not None and r.name in premise.running,
                                     premise.fetcher_restarts(r.name) if premise is not None else None,
                                     compared.compaction))
    return results


def effective_min_isr(replicas: Sequence[Replica], controller: ControllerRecord | None,
                      profile: ClusterProfile) -> int:
    """min.insync.replicas capped at the replication factor (`Partition.effectiveMinIsr`: "min(replication
    factor, min ISR)"), the assignment's size in the controller's record. ZooKeeper's partition state and a
    replay without a record hold no assignment: the value read or stated stands (replicas not given count as
    out of the ISR, as in `advance_leader_hw`)."""
    value = profile.min_insync_replicas(replicas[0].topic)
    factor = len(controller.current.replicas) if controller is not None else 0
    return min(value, factor) if factor else value


def returning(replicas: Sequence[Replica], running: Sequence[str], profile: ClusterProfile) -> Returning:
    """What the controller learns as the replay's brokers come back: those that restart (not `running`)
    without `.kafka_cleanshutdown` in their log dir's copy shut down uncleanly; the broker reads the
    marker's broker epoch as its `previousBrokerEpoch` and sends -1 without it (`CleanShutdownFileHandler`,
    `BrokerLifecycleManager`), which never matches its last registration's epoch."""
    ids = {r.name: replica_broker_id(r.name, r.broker_id) for r in replicas}
    unclean = frozenset(b for r in replicas if (b := ids[r.name]) is not None
                        and r.name not in running and not r.clean_shutdown)
    return Returning(unclean, profile.elr_enabled, profile.flag(replicas[0].topic, UNCLEAN),
                     tuple(b for b in ids.values() if b is not None))


def user_choice(replicas: Sequence[Replica], leader: str, controller: ControllerRecord | None) -> LeaderChoice:
    """`--leader NAME`: unclean when its log ends below the highest high watermark. With the controller's
    record, it leads in the recorded epoch if the record names its broker, else in the next one."""
    names = [r.name for r in replicas]
    if leader not in names:
        raise ReplogError(f"--leader {leader!r} is not one of {', '.join(names)}")
    chosen = next(r for r in replicas if r.name == leader)
    top_hw = max(r.high_watermark for r in replicas)
    unclean = chosen.log_end_offset < top_hw
    epoch = None
    if controller is not None:
        cur = controller.current
        same = cur.leader >= 0 and replica_broker_id(chosen.name, chosen.broker_id) == cur.leader
        epoch = cur.leader_epoch if same else cur.leader_epoch + 1
    return LeaderChoice(leader, unclean, f"{leader} chosen by the user"
                        + (f"; its log ends at {chosen.log_end_offset}, below the highest high watermark "
                           f"{top_hw}: an unclean election" if unclean else "")
                        + (f"; leader epoch {epoch} by the controller's record" if epoch is not None else ""),
                        OPTION, epoch)


def controller_choice(replicas: Sequence[Replica], controller: ControllerRecord,
                      coming_back: Returning | None = None) -> LeaderChoice:
    """The leader the controller elected (or elects next), mapped to the replica on that broker; a usage
    error when no input replica is on it. The record's verdict on cleanliness stands; where the disk
    shows the leader's log ends below a high watermark another replica recorded, the explanation says
    so: the controller's clean election still loses acknowledged records."""
    rec = recorded_leader(controller, coming_back or Returning())
    on = {r.name: replica_broker_id(r.name, r.broker_id) for r in replicas}
    name = next((n for n, b in on.items() if b == rec.broker), None)
    if name is None:
        given = ", ".join(f"{n}=broker {b if b is not None else '?'}" for n, b in on.items())
        raise ReplogError(f"{rec.explanation}; no input replica is on broker {rec.broker} ({given}): give its "
                          "replica (brokers are named by meta.properties node.id/broker.id, or NAME broker-<id>), "
                          "or choose with --leader")
    lead = next(r for r in replicas if r.name == name)
    top_hw = max(r.high_watermark for r in replicas)
    why = f"{name} is broker {rec.broker}: {rec.explanation}"
    if lead.log_end_offset < top_hw and not rec.unclean:
        why += (f"; yet its log ends at {lead.log_end_offset}, below the high watermark {top_hw} another replica "
                "recorded: acknowledged records are lost although the controller counted the election clean")
    return LeaderChoice(name, rec.unclean, why, controller.source, rec.leader_epoch)


def _check_not_stale(replicas: Sequence[Replica], controller: ControllerRecord) -> None:
    """Every epoch on a replica was handed out by the controller: one above the record's current epoch
    means the record is older than the replicas (a lagging copy), and the replay would be a guess."""
    epoch = controller.current.leader_epoch
    ahead = [(r.name, r.epochs.latest_epoch) for r in replicas
             if r.epochs.latest_epoch is not None and r.epochs.latest_epoch > epoch]
    if ahead:
        raise ReplogError(f"{controller.path}: the controller's record of {controller.topic}-{controller.partition} "
                          f"ends in leader epoch {epoch}, but " + ", ".join(f"{n} holds epoch {e}" for n, e in ahead)
                          + ": the record is older than the replicas; give the current one")


def sample_keys(batches: ReplicaLog, limit: int = 5) -> list[str]:
    """Up to `limit` distinct record keys (UTF-8, else hex) from the first lost batches."""
    keys: list[str] = []
    for piece in batches.pieces:
        if not piece.file or len(keys) >= limit:
            break
        try:
            _piece_keys(piece, keys, limit)
        except (FormatError, OSError, ReplogError):
            continue
    return keys


def _piece_keys(piece: Piece, keys: list[str], limit: int) -> None:
    """Add the keys of `piece`'s batches, in order, to `keys` until it holds `limit`."""
    from replog.formats.fileio import mapped
    from replog.formats.fileview import readable
    from replog.formats.kafka.partition_files import is_live_segment
    from replog.formats.kafka.segment import SegmentWalk, batch_records
    file = piece.file
    with mapped(file, live=is_live_segment(file), windows=True) as buf:
        for block in piece.blocks():
            for pos, size in zip(block.position.tolist(), block.size.tolist(), strict=True):
                readable(buf, pos, pos + size)
                one = buf[pos:pos + size]
                info = next(SegmentWalk(one, file).batches(), None)
                if info is None or info.is_control:   # a marker's key is no record key
                    continue
                try:
                    recs = batch_records(one, info)
                except FormatError:
                    continue
                for rec in recs:
                    if rec.key is not None:
                        text = rec.key.decode("utf-8", "replace") if rec.key.isascii() else rec.key.hex()
                        if text not in keys:
                            keys.append(text)
                    if len(keys) >= limit:
                        return


def replay_paths(specs: Sequence[str], leader: str | None = None, protocol: str = EPOCH,
                 progress: Progress | None = None, *, metadata: str | None = None,
                 partition_state: str | None = None, running: Sequence[str] = (),
                 assumed: dict[str, str] | None = None) -> ReplayResult:
    """Load `[NAME=]PATH` replicas and replay them; `progress` hears of each segment loaded. `running`:
    the NAMEs whose broker keeps running (`premise`). `assumed`: settings stated by options
    (`profile.stated`), used where the metadata log does not say.

    The controller's record comes from `metadata` (a KRaft `__cluster_metadata-0` dir, or a log dir
    holding one), from a `__cluster_metadata-0` dir among `specs`, or from `partition_state`
    (ZooKeeper's partition state JSON). Copies of the metadata log given alone, two or more, are the
    controller quorum's voters, replayed by the KRaft rules (`quorum.replay_quorum`)."""
    quorum = _quorum_copies(specs, metadata, partition_state)
    if quorum:
        from replog.recovery.kafka.quorum import replay_quorum
        named = replica_names([parse_named(spec) for spec in quorum], default_name)
        if running:
            raise ReplogError("--running does not apply to copies of the metadata log: the voters replay as a "
                              "quorum")
        return replay_quorum(named, leader, Tally.of(progress, [path for _, path in named], ".log"))
    inputs = load_inputs(specs, progress, metadata=metadata, partition_state=partition_state, running=running,
                         assumed=assumed)
    return run_replay(inputs.replicas, leader, protocol, inputs.controller, running, inputs.profile)


def _quorum_copies(specs: Sequence[str], metadata: str | None, partition_state: str | None) -> list[str]:
    """The specs when they are two or more copies of the metadata log and nothing else: the quorum's voters."""
    replicas, given = _split_metadata(specs)
    return given if not replicas and len(given) > 1 and metadata is None and partition_state is None else []


@dataclass
class ReplayInputs:
    """What a replay reads once, whoever leads: the replicas, the controller's record, the cluster profile."""

    replicas: list[Replica]
    controller: ControllerRecord | None
    profile: ClusterProfile


def load_inputs(specs: Sequence[str], progress: Progress | None = None, *, metadata: str | None = None,
                partition_state: str | None = None, running: Sequence[str] = (),
                assumed: dict[str, str] | None = None) -> ReplayInputs:
    """`replay_paths`' reading half: the replicas and the controller's record, checked as replay checks them
    (the same usage errors), for one replay or for several behind different leaders (`what_if`)."""
    specs, given = _split_metadata(specs)
    given = [parse_named(spec)[1] for spec in given]
    if metadata is not None:
        given.append(metadata)
    if len(given) > 1 or (given and partition_state is not None):
        raise ReplogError("give the controller's record once: one metadata log, or --partition-state")
    if len(specs) < 2:
        raise ReplogError("replay needs at least two replicas")
    policy = (assumed or {}).get(CLEANUP)
    if policy is not None and policy not in POLICIES:
        raise ReplogError(f"unknown cleanup policy {policy!r}: use {' or '.join(POLICIES)}")
    named = replica_names([parse_named(spec) for spec in specs], default_name)
    check_running([name for name, _ in named], running)
    replicas = load_replicas(named, Tally.of(progress, [path for _, path in named], ".log"))
    controller, profile = None, ClusterProfile(assumed=dict(assumed or {}))
    if given or partition_state is not None:
        first = replicas[0]
        ids = {r.topic_id for r in replicas if r.topic_id is not None}
        if len(ids) > 1:
            raise ReplogError(f"the replicas' partition.metadata name different topic ids: {', '.join(sorted(ids))}")
        if given:
            applier = ProfileApplier()
            controller = read_metadata_log(given[0], first.topic, first.partition, next(iter(ids), None), [applier])
            profile = applier.result(controller.path, assumed)
        else:
            controller = read_partition_state(partition_state or "", first.topic, first.partition)
    return ReplayInputs(replicas, controller, profile)


def _split_metadata(specs: Sequence[str]) -> tuple[list[str], list[str]]:
    """The replicas, and the KRaft metadata log dirs given among them (`__cluster_metadata-0`), as given."""
    from pathlib import Path

    replicas, metadata = [], []
    for spec in specs:
        path = parse_named(spec)[1]
        if Path(path).name == METADATA_DIR:
            metadata.append(spec)
        else:
            replicas.append(spec)
    return replicas, metadata
