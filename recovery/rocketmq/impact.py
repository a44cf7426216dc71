"""What a RocketMQ replay means for consumers: committed offsets against the queues after it, and the
metadata a slave's sync would change.

Consumer offsets are `config/consumerOffset.json` (`offsetTable`: "topic@group" -> {queueId:
next offset to consume}), read with its `.bak` fallback as `ConfigManager` reads it. A queue's max
offset after the replay is the next queue offset of the messages the store keeps or fetches from the
master (the broker rebuilds its consume queues from the commit log at startup, docs/reference/rocketmq.md §7.5).
A group whose offset lies past that max has consumed messages that are gone: its next pull gets
OFFSET_OVERFLOW_BADLY and the broker moves it back to the max (`DefaultMessageStore.getMessage`,
`nextOffsetCorrection`; on a slave only with offsetCheckInSlave), so the messages the new history holds
from where the lost ones began to that max are never consumed. A group between the first lost queue
offset and the max consumed lost messages too, and nothing moves it: it goes on from its offset.

With `storeType=defaultRocksDB` (5.x) consumer offsets, topics and subscription groups live in RocksDB
(`config/consumerOffsets|topics|subscriptionGroups/`, docs/reference/rocketmq.md §14) and the JSON files are
stale copies at best. The broker loads the database, then reads the JSON only when its dataVersion counter is
greater than the database's `kvDataVersion` counter (`RocksDBConsumerOffsetManager#merge`,
`RocksDBTopicConfigManager#merge`, tag rocketmq-all-5.3.3): consumer offsets are then replaced by the JSON's
(`ConsumerOffsetManager#decode` sets the table), topics and groups overlaid (`decode` puts all). replog reads
what the broker would: a database it cannot open makes the offsets unverifiable (`UnreadableInput`).

LMQ queues (`lmq`) count as queues: a multi-dispatched message fills its LMQ queues too, and LMQ groups' offsets
come from `config/lmqConsumerOffset.json`. `transactions` lists each transaction a store leaves open (op message
lost, or never ended) or whose state the replay changes (`transactions`); `pop` each POP checkpoint whose acks or
itself the replay loses (`pop`).

The slave's metadata sync (`SlaveSynchronize.syncAll`) copies topics, consumer offsets, delay offsets
and subscription groups from the master: topics and subscription groups only on the slave are deleted,
consumer offsets only on the slave are kept (`putAll`), the delay offset file is replaced whole.

Timer messages (5.x) a store loses before the timer wheel delivered them are scheduled deliveries lost
(`timers.lost_deliveries`): listed per store under `lost_scheduled_deliveries`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.rocketmq.config_json import load_config
from replog.formats.rocketmq.rocksdb_store import CONFIG_DBS, offset_table, read_config_db
from replog.formats.shape import Field, Shape
from replog.recovery.rocketmq.ha_result import HAReplayResult, ReplicaOutcome
from replog.recovery.rocketmq.lmq import LMQ_QUEUE_ID
from replog.recovery.rocketmq.pop import POP_IMPACT, REVIVE_GROUP, PopImpact, checkpoints, pop_impact
from replog.recovery.rocketmq.store_model import MessageRef, StoreModel
from replog.recovery.rocketmq.timers import lost_deliveries, lost_summary
from replog.recovery.rocketmq.transactions import OPEN, TRANSACTION_IMPACT, TransactionImpact, transaction_impact

UNAFFECTED, CONSUMED_LOST, AHEAD = "unaffected", "consumed_lost", "ahead_of_queue"
LMQ_OFFSETS = "lmqConsumerOffset.json"
Queue = tuple[str, int]
# file -> (its table's member, what the sync does to an entry only the slave holds)
SYNCED = {"topics.json": ("topicConfigTable", "deletes it"),
          "subscriptionGroup.json": ("subscriptionGroupTable", "deletes it"),
          "consumerOffset.json": ("offsetTable", "keeps it"),
          "delayOffset.json": ("offsetTable", "deletes it (the file is replaced)")}


@dataclass
class QueueImpact:
    store: str
    group: str
    topic: str
    queue_id: int
    committed_offset: int
    max_offset_before: int
    max_offset_after: int
    first_lost_queue_offset: int | None
    classification: str = UNAFFECTED
    messages_consumed_lost: int = 0
    messages_skipped: int = 0
    explanation: str = ""


QUEUE_IMPACT = Shape("store", "group", "topic", "queue_id", "committed_offset", "max_offset_before",
                     "max_offset_after", "first_lost_queue_offset", "classification", "messages_consumed_lost",
                     "messages_skipped", "explanation")


@dataclass(frozen=True)
class MetadataDifference:
    file: str
    key: str
    master: Any
    slave: Any
    difference: str


METADATA_DIFFERENCE = Shape("file", "key", "master", "slave", "difference")


@dataclass
class RocketImpact:
    master: str
    groups: list[QueueImpact] = field(default_factory=list)
    metadata: list[MetadataDifference] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    transactions: list[TransactionImpact] = field(default_factory=list)
    pop: list[PopImpact] = field(default_factory=list)
    scheduled: list[dict[str, Any]] = field(default_factory=list)   # per store: lost timer deliveries

    @property
    def summary(self) -> dict[str, int]:
        return {"groups": len(self.groups),
                "groups_affected": sum(1 for g in self.groups if g.classification != UNAFFECTED),
                "messages_consumed_lost": sum(g.messages_consumed_lost for g in self.groups),
                "metadata_differences": len(self.metadata),
                "transactions_open": sum(1 for t in self.transactions if t.state_after in OPEN),
                "pop_checkpoints_affected": len(self.pop),
                "scheduled_deliveries_lost": sum(s["count"] for s in self.scheduled)}

    def to_dict(self) -> dict[str, Any]:
        return ROCKET_IMPACT.dump(self)


ROCKET_IMPACT = Shape(Field("system", lambda _: "rocketmq"), Field("leader", "master"),
                      Field("consumer_groups", "groups", shape=QUEUE_IMPACT),
                      Field("metadata_differences", "metadata", shape=METADATA_DIFFERENCE),
                      "summary", "sources", "skipped",
                      Field("transactions", shape=TRANSACTION_IMPACT), Field("pop", shape=POP_IMPACT),
                      Field("lost_scheduled_deliveries", "scheduled"))


def queue_units(m: MessageRef) -> list[tuple[Queue, int]]:
    """Every (queue, queue offset) a dispatched message fills: its own, then its LMQ queues (`lmq`)."""
    if not m.dispatched:
        return []
    return [((m.topic, m.queue_id), m.queue_offset), *(((name, LMQ_QUEUE_ID), o) for name, o in m.lmq)]


def queue_ends(messages: list[MessageRef]) -> dict[Queue, int]:
    """The next queue offset of every queue the dispatched messages fill (LMQ queues included)."""
    out: dict[Queue, int] = {}
    for m in messages:
        for q, offset in queue_units(m):
            out[q] = max(out.get(q, 0), offset + 1)
    return out


def kept_messages(r: ReplicaOutcome, master: StoreModel) -> list[MessageRef]:
    """The messages a store holds after the replay: its own below the plan's keep point, then the master's
    it fetches (all of its own when the replay leaves it unchanged)."""
    plan = r.plan
    own = r.model.messages
    if plan is None:
        return own
    kept = [m for m in own if m.end <= plan.keep_to]
    if plan.fetch_to > plan.fetch_from:
        kept += [m for m in master.messages if plan.fetch_from <= m.physical_offset and m.end <= plan.fetch_to]
    return kept


def read_offsets(store: StoreModel, skipped: list[str]) -> tuple[dict[tuple[str, str], dict[int, int]], list[str]]:
    """(topic, group) -> {queue id: committed offset} from the store's consumerOffset.json, then
    lmqConsumerOffset.json (each with its .bak): its `offsetTable` (a broker with enableLmq keeps every group's
    offsets there) and its `lmqOffsetTable` (LMQ groups, queue 0; `lmq` module docstring). The LMQ file is read
    last: with enableLmq it is the one the broker writes."""
    out: dict[tuple[str, str], dict[int, int]] = {}
    sources = []
    for name, member in (("consumerOffset.json", "offsetTable"), (LMQ_OFFSETS, "offsetTable"),
                         (LMQ_OFFSETS, "lmqOffsetTable")):
        table, source = _table(store, name, skipped, member)
        if source is not None and source not in sources:
            sources.append(source)
        for key, queues in (table or {}).items():
            topic, at, group = str(key).partition("@")
            if not at:
                continue
            if isinstance(queues, dict):
                out[(topic, group)] = {int(q): int(o) for q, o in queues.items() if isinstance(o, int)}
            elif isinstance(queues, int) and not isinstance(queues, bool):
                out[(topic, group)] = {LMQ_QUEUE_ID: queues}
    return out, sources


_DB_OF = {json_name: db for db, json_name in CONFIG_DBS.items()}


def _table(store: StoreModel, name: str, skipped: list[str], member: str | None = None
           ) -> tuple[dict[Any, Any] | None, str | None]:
    db = store.layout.config_dbs.get(_DB_OF.get(name, ""))
    if db is not None:
        return _kv_table(store, name, db, skipped)
    doc, used = _json_doc(store, name, skipped, member)
    if doc is None:
        return None, None
    table = doc.get(member or SYNCED[name][0])
    return (table if isinstance(table, dict) else {}), used


def _json_doc(store: StoreModel, name: str, skipped: list[str], member: str | None = None
              ) -> tuple[dict[str, Any] | None, str | None]:
    path = store.layout.root / "config" / name
    if not path.exists() and not path.with_name(name + ".bak").exists():
        return None, None
    try:
        doc, used = load_config(path)
    except (FormatError, UnreadableInput) as e:
        if member != "lmqOffsetTable":   # the same file's second member: its failure is already noted
            skipped.append(f"{path}: {e}")
        return None, None
    return (doc if isinstance(doc, dict) else {}), str(used)


def _counter(doc: dict[str, Any]) -> int:
    version = doc.get("dataVersion")
    counter = version.get("counter") if isinstance(version, dict) else None
    return counter if isinstance(counter, int) else 0


def _kv_table(store: StoreModel, name: str, db: Any, skipped: list[str]) -> tuple[dict[Any, Any], str]:
    """The table the broker loads from a RocksDB config store, with the JSON merged in only when the JSON's
    dataVersion counter is greater (module docstring); the JSON otherwise is stale and ignored."""
    try:
        cfg = read_config_db(db)
    except UnreadableInput as e:
        raise UnreadableInput(f"{db}: {name} kept in RocksDB cannot be verified: {e}") from None
    skipped += [f"{db}: {p}" for p in cfg.problems]
    table: dict[Any, Any] = ({k: {str(q): o for q, o in v.items()} for k, v in offset_table(cfg).items()}
                             if name == "consumerOffset.json" else dict(cfg.table))
    doc, used = _json_doc(store, name, skipped)
    if doc is None or _counter(doc) <= cfg.counter:
        if doc is not None:
            skipped.append(f"{used}: stale (dataVersion counter {_counter(doc)} <= the RocksDB store's "
                           f"{cfg.counter}); the broker reads {db}")
        return table, str(db)
    json_table = doc.get(SYNCED[name][0])
    json_table = json_table if isinstance(json_table, dict) else {}
    merged = json_table if name == "consumerOffset.json" else table | json_table
    return merged, f"{used} (its dataVersion counter {_counter(doc)} > {cfg.counter} of {db}: the broker loads it)"


def classify(q: QueueImpact, lost_in_queue: list[int]) -> None:
    """The rule of the module docstring for one group's offset on one queue."""
    c, top, first = q.committed_offset, q.max_offset_after, q.first_lost_queue_offset
    q.messages_consumed_lost = sum(1 for o in lost_in_queue if o < c)
    if c > top:
        q.classification = AHEAD
        q.messages_consumed_lost = max(q.messages_consumed_lost, c - max(top, first if first is not None else top))
        q.messages_skipped = top - first if first is not None and first < top else 0
        q.explanation = (f"its offset {c} is past the queue's max {top}: the next pull gets OFFSET_OVERFLOW_BADLY and "
                         f"the broker moves it back to {top}"
                         + (f"; the {q.messages_skipped} messages now at {first}..{top - 1} are never consumed"
                            if q.messages_skipped else ""))
    elif first is not None and first < c:
        q.classification = CONSUMED_LOST
        q.messages_skipped = c - first
        q.explanation = (f"it consumed {q.messages_consumed_lost} messages from queue offset {first} on that are gone; "
                         f"it goes on from {c} and never consumes the {q.messages_skipped} messages now at "
                         f"{first}..{c - 1}")
    else:
        q.messages_consumed_lost = 0
        q.explanation = "nothing it consumed is lost"


def analyze_rocketmq_impact(result: HAReplayResult) -> RocketImpact:
    """Every store's consumer offsets against its queues after the replay; the master's and each slave's
    metadata compared."""
    master = next(r.model for r in result.replicas if r.model.name == result.master)
    out = RocketImpact(master.name)
    for r in result.replicas:
        before, after = queue_ends(r.model.messages), queue_ends(kept_messages(r, master))  # LMQ queues too
        for (topic, qid), state in r.model.queues.items():   # queues whose messages are no longer in the log
            before.setdefault((topic, qid), state.max_offset)
            after.setdefault((topic, qid), min(state.max_offset, before[(topic, qid)]))
        lost: dict[Queue, list[int]] = {}
        for m in r.lost:
            for q, offset in queue_units(m):
                lost.setdefault(q, []).append(offset)
        timers = lost_deliveries(r.model, r.lost)
        if timers:
            out.scheduled.append({"store": r.model.name, **lost_summary(timers)})
        offsets, sources = read_offsets(r.model, out.skipped)
        out.sources += sources
        kept = kept_messages(r, master)
        out.transactions += transaction_impact(r.model.name, r.model.messages, kept)
        revived = {(topic, q): o for (topic, group), queues in offsets.items() if group == REVIVE_GROUP
                   for q, o in queues.items()}
        out.pop += pop_impact(r.model.name, checkpoints(r.model.messages, revived), checkpoints(kept, revived))
        for (topic, group), queues in sorted(offsets.items()):
            for qid, committed in sorted(queues.items()):
                q = (topic, qid)
                q_lost = sorted(lost.get(q, []))
                impact = QueueImpact(r.model.name, group, topic, qid, committed, before.get(q, 0), after.get(q, 0),
                                     q_lost[0] if q_lost else None)
                classify(impact, q_lost)
                out.groups.append(impact)
    for r in result.replicas:
        if r.model is not master:
            out.metadata += compare_metadata(master, r.model, out.skipped)
    return out


def compare_metadata(master: StoreModel, slave: StoreModel, skipped: list[str]) -> list[MetadataDifference]:
    """Entries of the synced config files that differ between a master and a slave, and what the sync does."""
    out = []
    for name, (_, slave_only) in SYNCED.items():
        m, _ = _table(master, name, skipped)
        s, _ = _table(slave, name, skipped)
        if m is None and s is None:
            continue
        m, s = m or {}, s or {}
        for key in sorted(set(m) | set(s), key=str):
            if key not in s:
                out.append(MetadataDifference(name, str(key), m[key], None,
                                              f"only on {master.name} (the master): the sync adds it to {slave.name}"))
            elif key not in m:
                out.append(MetadataDifference(name, str(key), None, s[key],
                                              f"only on {slave.name} (the slave): the sync {slave_only}"))
            elif m[key] != s[key]:
                out.append(MetadataDifference(name, str(key), m[key], s[key],
                                              "differs: the sync replaces the slave's with the master's"))
    return out
