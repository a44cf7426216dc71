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
from replog.formats.shape import Field, Shape
from replog.recovery.rocketmq.ha_result import HAReplayResult, ReplicaOutcome
from replog.recovery.rocketmq.store_model import MessageRef, StoreModel
from replog.recovery.rocketmq.timers import lost_deliveries, lost_summary

UNAFFECTED, CONSUMED_LOST, AHEAD = "unaffected", "consumed_lost", "ahead_of_queue"
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
    scheduled: list[dict[str, Any]] = field(default_factory=list)   # per store: lost timer deliveries

    @property
    def summary(self) -> dict[str, int]:
        return {"groups": len(self.groups),
                "groups_affected": sum(1 for g in self.groups if g.classification != UNAFFECTED),
                "messages_consumed_lost": sum(g.messages_consumed_lost for g in self.groups),
                "metadata_differences": len(self.metadata),
                "scheduled_deliveries_lost": sum(s["count"] for s in self.scheduled)}

    def to_dict(self) -> dict[str, Any]:
        return ROCKET_IMPACT.dump(self)


ROCKET_IMPACT = Shape(Field("system", lambda _: "rocketmq"), Field("leader", "master"),
                      Field("consumer_groups", "groups", shape=QUEUE_IMPACT),
                      Field("metadata_differences", "metadata", shape=METADATA_DIFFERENCE),
                      "summary", "sources", "skipped",
                      Field("lost_scheduled_deliveries", "scheduled"))


def queue_ends(messages: list[MessageRef]) -> dict[Queue, int]:
    """The next queue offset of every queue the dispatched messages fill."""
    out: dict[Queue, int] = {}
    for m in messages:
        if m.dispatched:
            q = (m.topic, m.queue_id)
            out[q] = max(out.get(q, 0), m.queue_offset + 1)
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


def read_offsets(store: StoreModel, skipped: list[str]) -> tuple[dict[tuple[str, str], dict[int, int]], str | None]:
    """(topic, group) -> {queue id: committed offset} from the store's consumerOffset.json (or its .bak)."""
    table, source = _table(store, "consumerOffset.json", skipped)
    out: dict[tuple[str, str], dict[int, int]] = {}
    for key, queues in (table or {}).items():
        topic, at, group = str(key).partition("@")
        if at and isinstance(queues, dict):
            out[(topic, group)] = {int(q): int(o) for q, o in queues.items() if isinstance(o, int)}
    return out, source


def _table(store: StoreModel, name: str, skipped: list[str]) -> tuple[dict[Any, Any] | None, str | None]:
    path = store.layout.root / "config" / name
    if not path.exists() and not path.with_name(name + ".bak").exists():
        return None, None
    try:
        doc, used = load_config(path)
    except (FormatError, UnreadableInput) as e:
        skipped.append(f"{path}: {e}")
        return None, None
    table = doc.get(SYNCED[name][0]) if isinstance(doc, dict) else None
    return (table if isinstance(table, dict) else {}), str(used)


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
        before, after = queue_ends(r.model.messages), queue_ends(kept_messages(r, master))
        for (topic, qid), state in r.model.queues.items():   # queues whose messages are no longer in the log
            before.setdefault((topic, qid), state.max_offset)
            after.setdefault((topic, qid), min(state.max_offset, before[(topic, qid)]))
        lost: dict[Queue, list[int]] = {}
        for m in r.lost:
            lost.setdefault((m.topic, m.queue_id), []).append(m.queue_offset)
        timers = lost_deliveries(r.model, r.lost)
        if timers:
            out.scheduled.append({"store": r.model.name, **lost_summary(timers)})
        offsets, source = read_offsets(r.model, out.skipped)
        if source is not None:
            out.sources.append(source)
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
