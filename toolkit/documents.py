"""The JSON documents the commands print (docs/CLI-CONTRACT.md), declared once as types.

A result's JSON is built beside the result (`formats.shape`, the results' `to_dict`); the command prints
that document, and the terminal tables and the report pages draw from the same document. Here each document
is declared as a `TypedDict`, so what the renderers read from it is type-checked: a member renamed or
misspelled in a view is a mypy error, not a KeyError on an incident night.

A declaration names the members toolkit reads, with their JSON types; a document may hold more (the
contract extends documents additively). `NotRequired` marks a member only some documents have (RocketMQ's
replay has no `holes`, a replay without `--what-if` no `what_if`); `total=False` a member object whose
members differ between Kafka and RocketMQ. `tests/toolkit/test_documents.py` checks every declaration
against the documents the commands print on the sample fleet, so a declaration cannot drift from the JSON.

`typed` is the one place a document built as a plain dict becomes one of these types. `JsonObject` is the one
name of an object whose members replog decodes rather than declares (see there).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NotRequired, TypedDict, TypeVar, cast

T = TypeVar("T")

JsonObject = dict[str, Any]
"""A JSON object whose members follow the data, not a declaration: a decoded Kafka protocol message (a metadata,
offsets, transaction or control record of any type and version, as `formats.kafka.internal` decodes it); so a
`dump` entry of any kind (`dump_entries.Entry`), whose key and value may be one; and a replica command's document
before the outcome says which it is (`replica_commands._show`). Its members are `Any` to mypy: the terminal reads
dump entries and replica documents through the declarations below (`typed(RecordEntry, e)`, ...); the
kafka-dump-log text (`dump_log`) reads entries as they are, held to Kafka's own tool by its tests."""


def typed(kind: type[T], doc: Mapping[str, Any]) -> T:
    """`doc` read as the document `kind` declares (checked against the printed documents in the tests)."""
    return cast(T, doc)


# --- findings, doctor, recover --------------------------------------------------------------------


class Finding(TypedDict):
    """One finding as doctor, recover and replay list it (`Finding.to_dict`)."""

    code: str
    severity: str
    path: str
    position: int | None
    offset: int | None
    message: str
    details: NotRequired[dict[str, object]]


class DoctorInput(TypedDict):
    """One file doctor read; its digest is a member named for the algorithm (`sha256` by default)."""

    path: str
    size: int


class Summary(TypedDict):
    errors: int
    warnings: int
    infos: int


class DoctorReport(TypedDict):
    """`doctor --format json`."""

    findings: list[Finding]
    inputs: list[DoctorInput]
    summary: Summary


class SampleBroker(TypedDict):
    """One generated Kafka broker of `samples generate`."""

    broker: str
    partitions: int
    bytes: int
    clean_shutdown: bool
    damage: int


class SampleKafka(TypedDict):
    path: str
    seed: int
    brokers: list[SampleBroker]
    damage: int
    divergences: int
    files: int
    bytes: int
    manifest: str


class SampleRocketMQ(TypedDict):
    path: str
    damage: int


class SamplesDoc(TypedDict):
    """`samples generate --format json`: what was planted where."""

    output: str
    kafka: SampleKafka
    rocketmq: SampleRocketMQ


class Manifest(TypedDict):
    """The evidence manifest `doctor --manifest` writes."""

    tool: str
    version: str
    created_utc: str
    command_line: list[str]
    inputs: Sequence[Mapping[str, object]]
    stores: NotRequired[Sequence[Mapping[str, str]]]


class Dropped(TypedDict):
    segments: list[str]
    bytes: int
    batches: int
    first_offset: int | None
    last_offset: int | None
    holes: list[Hole]


class Hole(TypedDict):
    """Bytes recovery skipped inside a segment (`dropped.holes`)."""

    segment: str
    position: int
    end_position: int
    after_offset: int


class Salvaged(TypedDict):
    first_offset: int
    last_offset: int
    position: int


class Verification(TypedDict, total=False):
    errors: int
    warnings: int
    infos: int
    findings: list[Finding]


class RecoverDoc(TypedDict):
    """`recover --format json` of a Kafka partition."""

    output: str
    partition: str
    truncated_to: int | None
    valid_bytes: int
    truncated_segment: str | None
    salvaged: list[Salvaged]
    dropped: Dropped
    log_start_offset: int
    log_end_offset: int
    high_watermark: int | None
    recovery_point: int | None
    epochs: list[list[int]]
    findings: list[Finding]
    verification: Verification


# --- ls ---------------------------------------------------------------------------------------------


class Problem(TypedDict):
    """An error finding of a partition, as `ls` lists it."""

    code: str
    path: str
    position: int | None
    message: str


class LsRow(TypedDict):
    """One partition of `ls --format json` (Kafka)."""

    path: str
    topic: str
    partition: int
    state: str
    segments: int
    bytes: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int | None
    recovery_point: int | None
    latest_epoch: int | None
    first_timestamp: int | None
    max_timestamp: int | None
    flags: list[str]
    problems: list[Problem]
    local_log_start_offset: int
    remote_storage: dict[str, str] | None


class QueueRow(TypedDict):
    """One topic/queue of `ls --format json` on a RocketMQ store (`queues`)."""

    topic: str
    queue_id: int
    messages: int
    min_queue_offset: int | None
    max_queue_offset: int | None
    cq_max_offset: int | None
    cq_min_offset: int | None
    first_physical_offset: int | None
    last_physical_offset: int | None
    bytes: int
    first_timestamp: int | None
    max_timestamp: int | None


class Recovery(TypedDict):
    """Which of the broker's recovery rules a RocketMQ store's numbers follow."""

    broker_version: str | None
    mode: str
    rule: str
    scan_start: int


class TimerCheckpoint(TypedDict):
    """`config/timercheck`: how far the timer service had read and flushed."""

    last_read_time_ms: int
    last_timer_log_flush_pos: int
    last_timer_queue_offset: int
    master_timer_queue_offset: int


class TimerSummary(TypedDict):
    """A store's timer files as `ls` sums them up (`recovery.rocketmq.timers.timer_summary`)."""

    timer_log_files: int
    timer_log_end: int
    units: int
    wheel: bool
    wheel_pending: int | None
    metrics_pending: int | None
    checkpoint: TimerCheckpoint | None


class DLedgerSummary(TypedDict):
    """A DLedger store's Raft log as `ls` sums it up (`DLedgerLog.to_dict`)."""

    peer: str
    directory: str
    entries: int
    first_index: int
    last_index: int
    last_term: int
    committed_index: int | None
    committed_offset: int | None
    checkpoint_end_index: int | None
    current_term: int | None
    vote_leader: str | None
    dropped_entries: int


class StoreTotals(TypedDict):
    """A RocketMQ store's totals in `ls --format json` (`store`). `timers` and `dledger` are the
    timer files' and the DLedger log's own summaries."""

    path: str
    system: str
    store_type: str
    file_size: int
    files: int
    min_offset: int
    max_offset: int
    dirty_tail_bytes: int
    messages: int
    queues: int
    topics: int
    abort_present: bool
    confirm_offset: int | None
    epochs: list[list[int]]
    checkpoint: dict[str, int] | None
    index_files: int
    recovery: Recovery
    timers: TimerSummary | None
    dledger: NotRequired[DLedgerSummary]
    unreached_messages: NotRequired[int]     # in the log, in no queue: their slots name others (offset_reuse)


class StoreLs(TypedDict):
    """`ls --format json` of a RocketMQ store."""

    store: StoreTotals
    queues: list[QueueRow]


# --- the premise and profile of a Kafka replay ------------------------------------------------------


class Follower(TypedDict):
    name: str
    running: bool
    fetcher_restarts: bool
    why: str


class Premise(TypedDict):
    """What the replay assumes of the cluster (`Premise.to_dict`)."""

    source: str
    sentence: str
    restarted: list[str]
    running: list[str]
    followers: list[Follower]
    from_checkpoints: dict[str, list[str]]
    new_leader_epoch: bool


class Setting(TypedDict):
    value: object
    source: str


class Profile(TypedDict):
    """The broker settings the rules used (`--profile`), read ones and assumed ones."""

    settings: dict[str, Setting]
    read: list[str]
    assumed: list[str]


# --- replay and repair (Kafka and RocketMQ) ---------------------------------------------------------


class QueueLoss(TypedDict):
    """What a RocketMQ store loses of one queue."""

    topic: str
    queue_id: int
    count: int
    first_queue_offset: int
    last_queue_offset: int


class Lost(TypedDict):
    """What a replica loses: Kafka's records, RocketMQ's messages, both counted as `records`; RocketMQ's
    per queue too."""

    records: int
    first_offset: int | None
    last_offset: int | None
    bytes: int
    queues: NotRequired[list[QueueLoss]]


class Fetched(TypedDict, total=False):
    """What a replica fetches: Kafka's records, batches and offsets; RocketMQ's bytes and frames."""

    records: int
    batches: int
    first_offset: int | None
    last_offset: int | None
    bytes: int
    frames: int


class Range(TypedDict):
    first_offset: int
    last_offset: int


class Failed(TypedDict):
    error: str
    reason: str


class Stall(TypedDict):
    cause: str
    explanation: str


class CompactionDifference(TypedDict):
    first_offset: int
    up_to: int


class ReplicaRow(TypedDict):
    """One replica of a replay: before, what the protocol does to it, after."""

    name: str
    diverged_at: int | None
    truncated_to: int | None
    log_end_offset_before: int
    log_end_offset_after: int
    high_watermark_before: int | None
    high_watermark_after: int | None
    lost: Lost
    fetched: Fetched
    holes: NotRequired[list[Range]]
    failed: NotRequired[Failed | None]
    stall: NotRequired[Stall | None]
    compaction_difference: NotRequired[CompactionDifference | None]


class StoreReplica(ReplicaRow):
    """A RocketMQ store of a replay: a replica's row, and its role, status, recovery and hazards."""

    path: str
    role: str
    status: str
    log_start_offset_before: int
    log_start_offset_after: int
    findings: list[Finding]
    epochs_before: list[list[int]]
    epochs_after: list[list[int]]
    abort_present: bool
    recovery: Recovery


class Event(TypedDict):
    """One step of the transcript. Its other members depend on its kind (`describe` shows them all)."""

    step: int
    kind: str
    replica: str
    to: NotRequired[str | None]
    api: NotRequired[str]
    error: NotRequired[object]


class Election(TypedDict):
    """One change in the controller's record of the partition."""

    offset: int | None
    leader: int
    leader_replica: str | None
    leader_epoch: int
    isr: list[int]
    elr: list[int]
    unclean: bool


class ElectionRow(Election):
    """An election as the terminal lists it: where each replica's epoch cache starts its epoch."""

    starts: str


class LostMetadata(TypedDict):
    types: dict[str, int]
    topics_created: list[str]


class VoterState(TypedDict):
    name: str
    lost_records: LostMetadata | None


class Quorum(TypedDict):
    """A KRaft metadata partition's quorum: its commit points before and after."""

    voters: int
    epoch_start_offset: int
    start_of_epoch_pending: bool
    high_watermark_before: int
    high_watermark_after: int
    voter_states: list[VoterState]


class ReplayDoc(TypedDict):
    """`replay --format json` (and `repair`'s, which adds `repaired`), Kafka and RocketMQ."""

    system: str
    protocol: str
    leader: str
    replicas: list[ReplicaRow]
    events: list[Event]
    topic: NotRequired[str]
    partition: NotRequired[int]
    premise: NotRequired[Premise | None]
    profile: NotRequired[Profile | None]
    quorum: NotRequired[Quorum | None]
    elections: NotRequired[list[Election]]
    impact: NotRequired[ImpactDoc | None]
    what_if: NotRequired[WhatIfDoc | None]
    repaired: NotRequired[object]


class StoreReplay(TypedDict):
    """What the terminal reads of a RocketMQ replay (`replay --format json` of stores: a `ReplayDoc` whose
    replicas are `StoreReplica`s)."""

    protocol: str
    leader: str
    replicas: list[StoreReplica]
    events: list[Event]


# --- impact --------------------------------------------------------------------------------------------


class GroupImpact(TypedDict):
    """A Kafka consumer group against the replayed partition."""

    group: str
    classification: str
    explanation: str
    committed_offset: int
    committed_leader_epoch: int | None
    records_consumed_lost: int
    first_lost_offset: int | None
    last_lost_offset: int | None
    first_lost_timestamp: int | None
    last_lost_timestamp: int | None
    records_skipped: int
    resumes_at: int | None


class LostWrites(TypedDict):
    """A producer whose writes the replay removes."""

    producer_id: int
    producer_epoch: int
    replica: str
    records_lost: int
    first_sequence: int
    last_sequence: int
    acknowledged: bool
    leader_last_sequence: int
    next_append: str
    retry: str
    explanation: str


class TxnImpact(TypedDict):
    producer_id: int
    producer_epoch: int
    first_offset: int
    state: str
    cause: str


class ImpactSummary(TypedDict):
    groups: int
    groups_affected: int
    records_consumed_lost: int
    producers_with_lost_writes: int
    hanging_transactions: int


class KafkaImpact(TypedDict):
    """`impact --format json` of a Kafka partition (and the `impact` member of its replay and repair)."""

    topic: str
    partition: int
    leader: str
    log_start_offset_after: int
    log_end_offset_after: int
    last_stable_offset_after: int
    premise: NotRequired[Premise | None]
    summary: ImpactSummary
    offsets_sources: list[str]
    consumer_groups: list[GroupImpact]
    producers: list[LostWrites]
    transactions: list[TxnImpact]


class QueueImpact(TypedDict):
    """A RocketMQ consumer group's queue against the replayed stores."""

    store: str
    group: str
    topic: str
    queue_id: int
    committed_offset: int
    max_offset_after: int
    classification: str
    messages_consumed_lost: int
    messages_skipped: int


class MetadataDifference(TypedDict):
    file: str
    key: str
    difference: str


class RocketTxn(TypedDict):
    store: str
    transaction_id: str
    real_topic: str
    real_queue_id: int
    half_queue_offsets: list[int]
    state_before: str
    state_after: str
    explanation: str


class PopImpact(TypedDict):
    store: str
    group: str
    topic: str
    queue_id: int
    start_offset: int
    classification: str
    offsets: list[int]


class LostDeliveries(TypedDict):
    store: str
    count: int
    topics: list[str]


class RocketSummary(TypedDict):
    groups: int
    groups_affected: int
    messages_consumed_lost: int


class RocketImpact(TypedDict):
    """`impact --format json` of RocketMQ stores (and the `impact` member of their replay)."""

    system: str
    summary: RocketSummary
    consumer_groups: list[QueueImpact]
    metadata_differences: list[MetadataDifference]
    transactions: NotRequired[list[RocketTxn]]
    pop: NotRequired[list[PopImpact]]
    lost_scheduled_deliveries: NotRequired[list[LostDeliveries] | None]


ImpactDoc = KafkaImpact | RocketImpact
"""RocketMQ's impact says its `system`; Kafka's, the older document, does not."""


# --- replay --what-if ----------------------------------------------------------------------------------


class ChoiceLoss(TypedDict):
    records: int
    acknowledged: int | None


class ChoiceGroups(TypedDict):
    affected: int
    records_consumed_lost: int
    will_reset: NotRequired[int]


class Choice(TypedDict):
    """One leader (master) the what-if weighs."""

    rank: int
    leader: str
    broker: int | str | None
    how: str
    lost: ChoiceLoss
    consumer_groups: ChoiceGroups
    failed: list[str]
    producers_with_lost_writes: NotRequired[int]
    hanging_transactions: NotRequired[int]


class Recommended(TypedDict):
    leader: str
    how: str
    command: str
    steps: list[str]
    why: str


class WhatIfDoc(TypedDict):
    """`replay --what-if --format json`, Kafka (`topic`, `partition`) and RocketMQ (`broker_name`)."""

    system: str
    mode: str
    choices: list[Choice]
    recommended: Recommended
    topic: NotRequired[str]
    partition: NotRequired[int]
    broker_name: NotRequired[str | None]
    premise: NotRequired[str | None]
    notes: NotRequired[list[str]]


# --- dump ----------------------------------------------------------------------------------------------
# `dump` streams entries, one JSON object a line; the kinds the terminal prints member by member are declared.


class DumpEntry(TypedDict):
    """Every entry says its kind: `file`, `batch`, `record`, `finding`, and the index, snapshot, checkpoint and
    RocketMQ kinds (printed as they are)."""

    kind: str


class FileEntry(DumpEntry):
    """The entry opening each file dumped."""

    path: str
    file_kind: str
    size: int


class BatchEntry(DumpEntry):
    """A Kafka record batch (`dump_entries.batch_entry`)."""

    path: str
    position: int
    base_offset: int
    last_offset: int
    count: int
    partition_leader_epoch: int
    magic: int
    codec: str
    crc: int
    crc_valid: bool
    size: int
    first_timestamp: int
    max_timestamp: int
    timestamp_type: str
    producer_id: int
    producer_epoch: int
    base_sequence: int
    last_sequence: int
    is_transactional: bool
    is_control: bool


class Header(TypedDict):
    key: str
    value: object


class RecordEntry(DumpEntry):
    """A Kafka record (`dump_entries.record_entry`): its key and value as the decoder shows them (null, a string,
    an `undecodable` marker, or a decoded internal-topic object)."""

    path: str
    offset: int
    position: int
    timestamp: int
    timestamp_type: str
    key_size: int
    value_size: int
    sequence: int
    is_control: bool
    headers: list[Header]
    key: object
    value: object
    control_type: NotRequired[str]
    coordinator_epoch: NotRequired[int]


class FindingEntry(Finding, DumpEntry):
    """A finding met on the way (`dump_entries.finding_entry`)."""
