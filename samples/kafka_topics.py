"""Leader logs of the sample topics, as lists of batch bytes in offset order.

Each builder draws from the `random.Random` it is given and from a fixed
clock, so a seed always gives the same bytes. The logs look like what real
clients leave: mixed codecs and headers (`orders`), interleaved transactions
(`payments`), a compacted topic after one cleaner pass (`users`), pre-0.11
messages (`legacy-events`) and group offset commits (`__consumer_offsets`).
"""
from __future__ import annotations

import bisect
import copy
import json
import random
from dataclasses import dataclass, field
from typing import Any

from replog.formats.kafka import batch as v2
from replog.formats.kafka import codecs, legacy
from replog.formats.kafka.control import build_marker_batch
from replog.formats.kafka.internal.consumer_offsets import encode_offset_commit_key, encode_offset_commit_value
from replog.formats.kafka.internal.transaction_state import encode_transaction_log_key, encode_transaction_log_value

TS0 = 1_700_000_000_000          # 2023-11-14T22:13:20Z: every timestamp derives from it
V2_CODECS = (codecs.NONE, codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD)
LEGACY_CODECS = (codecs.GZIP, codecs.SNAPPY, codecs.LZ4)
_SOURCES = (b"web", b"mobile", b"pos", b"partner-api")
_CURRENCIES = ("EUR", "USD", "GBP", "JPY")


@dataclass
class OrderStream:
    """An idempotent producer writing order events to one partition."""

    rng: random.Random
    partition: int
    next_offset: int = 0
    sequence: int = 0
    clock: int = TS0
    producer_id: int = 1000
    tag: str = ""

    def batch(self, epoch: int) -> bytes:
        n = self.rng.randint(1, 18)
        records = [self._record(self.next_offset + i) for i in range(n)]
        out = v2.build_batch(records, base_offset=self.next_offset, partition_leader_epoch=epoch,
                             codec=self.rng.choice(V2_CODECS), producer_id=self.producer_id,
                             producer_epoch=0, base_sequence=self.sequence)
        self.next_offset += n
        self.sequence = v2.increment_sequence(self.sequence, n)
        return out

    def fork(self, rng: random.Random, tag: str) -> OrderStream:
        """The same producer state continuing on another replica's history."""
        other = copy.copy(self)
        other.rng, other.tag = rng, tag
        return other

    def _record(self, offset: int) -> v2.Record:
        rng = self.rng
        self.clock += rng.randint(3, 900)
        order_id = 10_000_000 + self.partition * 1_000_000 + offset
        value = {"order_id": order_id, "customer": f"cust-{rng.randint(1, 5000):05d}",
                 "amount_cents": rng.randint(199, 250_000), "currency": rng.choice(_CURRENCIES),
                 "items": [{"sku": f"SKU-{rng.randint(1, 999):03d}", "qty": rng.randint(1, 4)}
                           for _ in range(rng.randint(1, 4))],
                 "status": rng.choice(("created", "paid", "shipped", "cancelled"))}
        if self.tag:
            value["written_by"] = self.tag
        headers = [("trace-id", rng.getrandbits(64).to_bytes(8, "big").hex().encode()),
                   ("source", rng.choice(_SOURCES))]
        if rng.random() < 0.3:
            headers.append(("schema-version", b"3"))
        return v2.Record(offset, self.clock, f"order-{order_id}".encode(),
                         json.dumps(value, separators=(",", ":")).encode(), tuple(headers))


def orders_log(rng: random.Random, partition: int, batches: int, epoch_every: int) -> list[bytes]:
    """A leader log whose leader epoch grows every `epoch_every` batches."""
    stream = OrderStream(rng, partition, producer_id=1000 + partition)
    return [stream.batch(i // epoch_every) for i in range(batches)]


TXN_PRODUCER_ID = 7002          # the transactional producer enriching orders-2
TXN_ID = "orders-enricher"
RESTARTED_PRODUCER_ID = 1102    # the orders producer after the failover: a new session, a new producer id
FAILOVER_GAP_MS = 45_000        # between the old leader's crash and the new leader's first write


@dataclass
class TxnWrite:
    """One step of the transactional producer in `orders-2`: a data batch or a COMMIT marker."""

    first_offset: int
    timestamp: int
    marker: bool


@dataclass
class DivergentOrders:
    """`orders-2`: a common history, then two histories at the same offsets.

    A transactional producer wrote one transaction that committed, then a second whose data batch the
    followers fetched but whose COMMIT marker only the old leader holds: once the old leader truncates,
    the new leader keeps that transaction open for good (the coordinator had the marker written)."""

    common: list[bytes]
    lost: list[bytes]            # written by the old leader in `old_epoch`, never replicated
    new: list[bytes]             # written by the new leader in `old_epoch + 1`
    old_epoch: int
    divergent_offset: int
    lost_records: int
    lost_last_offset: int
    txn: list[TxnWrite] = field(default_factory=list)
    lost_times: list[tuple[int, int]] = field(default_factory=list)   # (offset, timestamp) of lost records
    new_start: int = 0           # timestamp of the new leader's first record


def _txn_batch(stream: OrderStream, epoch: int, sequence: int, n: int) -> bytes:
    """A transactional batch of the enricher at the stream's next offset (offsets shared with the orders)."""
    records = []
    for i in range(n):
        stream.clock += stream.rng.randint(3, 200)
        value = {"order_id": 10_000_000 + stream.partition * 1_000_000 + stream.next_offset + i, "enriched": True,
                 "risk": stream.rng.choice(("low", "medium", "high"))}
        records.append(v2.Record(stream.next_offset + i, stream.clock, b"enrich-%d" % (stream.next_offset + i),
                                 json.dumps(value, separators=(",", ":")).encode()))
    out = v2.build_batch(records, base_offset=stream.next_offset, partition_leader_epoch=epoch,
                         producer_id=TXN_PRODUCER_ID, producer_epoch=0, base_sequence=sequence, transactional=True)
    stream.next_offset += n
    return out


def _commit(stream: OrderStream, epoch: int) -> bytes:
    stream.clock += stream.rng.randint(5, 50)
    out = build_marker_batch(offset=stream.next_offset, commit=True, producer_id=TXN_PRODUCER_ID, producer_epoch=0,
                             coordinator_epoch=1, timestamp=stream.clock, partition_leader_epoch=epoch)
    stream.next_offset += 1
    return out


def divergent_orders_log(rng: random.Random, partition: int, batches: int, epoch_every: int,
                         lost_batches: int = 3, new_batches: int = 6) -> DivergentOrders:
    stream = OrderStream(rng, partition, producer_id=1000 + partition)
    common: list[bytes] = []
    txn: list[TxnWrite] = []

    def write_txn(marker: bool, epoch: int, sequence: int = 0, n: int = 0) -> bytes:
        at = stream.next_offset
        out = _commit(stream, epoch) if marker else _txn_batch(stream, epoch, sequence, n)
        txn.append(TxnWrite(at, stream.clock, marker))
        return out

    for i in range(batches):
        epoch = i // epoch_every
        common.append(stream.batch(epoch))
        if i == batches // 2:
            common.append(write_txn(False, epoch, 0, 4))
        elif i == batches // 2 + 2:
            common.append(write_txn(True, epoch))
    old_epoch = (batches - 1) // epoch_every
    common.append(write_txn(False, old_epoch, 4, 3))
    fork_at = stream.next_offset
    lost_stream = stream.fork(random.Random(rng.getrandbits(64)), "old-leader")
    lost = [_commit(lost_stream, old_epoch)]
    txn.append(TxnWrite(fork_at, lost_stream.clock, True))
    lost_times = []
    for _ in range(lost_batches):
        first = lost_stream.next_offset
        lost.append(lost_stream.batch(old_epoch))
        lost_times += _record_times(lost[-1], first)
    restarted = OrderStream(rng, partition, next_offset=fork_at, clock=stream.clock + FAILOVER_GAP_MS,
                            producer_id=RESTARTED_PRODUCER_ID)
    new_start = restarted.clock
    new = [restarted.batch(old_epoch + 1) for _ in range(new_batches)]
    return DivergentOrders(common, lost, new, old_epoch, fork_at, lost_stream.next_offset - fork_at,
                           lost_stream.next_offset - 1, txn, lost_times, new_start)


def _record_times(batch: bytes, first: int) -> list[tuple[int, int]]:
    """(offset, timestamp) of each record of a v2 batch written here."""
    from replog.formats.kafka.segment import SegmentWalk, batch_records
    info = next(SegmentWalk(batch, "<batch>", first).batches())
    return [(r.offset, r.timestamp) for r in batch_records(batch, info)]


def payments_log(rng: random.Random, steps: int, epoch_every: int) -> list[bytes]:
    """Three transactional producers interleaving; every third finished transaction aborts."""
    producers = {5000 + i: {"seq": 0, "open": False} for i in range(3)}
    out: list[bytes] = []
    offset, clock, finished = 0, TS0, 0

    def end(pid: int, commit: bool, epoch: int) -> None:
        nonlocal offset, clock
        clock += rng.randint(5, 50)
        out.append(build_marker_batch(offset=offset, commit=commit, producer_id=pid, producer_epoch=0,
                                      coordinator_epoch=epoch + 1, timestamp=clock,
                                      partition_leader_epoch=epoch))
        producers[pid]["open"] = False
        offset += 1

    for step in range(steps):
        epoch = step // epoch_every
        pid = rng.choice(sorted(producers))
        state = producers[pid]
        if state["open"] and rng.random() < 0.4:
            finished += 1
            end(pid, finished % 3 != 0 and rng.random() < 0.9, epoch)
            continue
        n = rng.randint(1, 6)
        records = []
        for i in range(n):
            clock += rng.randint(2, 400)
            value = {"payment_id": f"pay-{offset + i:08d}", "order_id": 10_000_000 + rng.randint(0, 99_999),
                     "amount_cents": rng.randint(100, 90_000), "method": rng.choice(("card", "sepa", "wallet"))}
            records.append(v2.Record(offset + i, clock, f"pay-{offset + i:08d}".encode(),
                                     json.dumps(value, separators=(",", ":")).encode(),
                                     (("txn-producer", str(pid).encode()),)))
        out.append(v2.build_batch(records, base_offset=offset, partition_leader_epoch=epoch,
                                  codec=rng.choice((codecs.NONE, codecs.LZ4, codecs.ZSTD)), producer_id=pid,
                                  producer_epoch=0, base_sequence=state["seq"], transactional=True))
        state["seq"] += n
        state["open"] = True
        offset += n
    epoch = (steps - 1) // epoch_every
    for pid in sorted(producers):
        if producers[pid]["open"]:
            finished += 1
            end(pid, finished % 3 != 0, epoch)
    return out


@dataclass
class CompactedLog:
    batches: list[bytes]
    first_dirty_offset: int       # what cleaner-offset-checkpoint records
    cleaned_batches: list[bytes] = field(default_factory=list)  # the cleaned part, for a .swap


def users_log(rng: random.Random, batches: int, clean_fraction: float = 0.6) -> CompactedLog:
    """A compacted topic after one cleaner pass over its first `clean_fraction` of batches.

    Cleaned batches keep their base offset and last offset delta, so they hold
    offset gaps; batches of an idempotent producer left without records stay
    as empty batches; batches keeping a tombstone get the delete horizon.
    """
    raw: list[tuple[int, int, int, int, list[v2.Record]]] = []  # base, last, pid, seq, records
    offset, clock, seq = 0, TS0, 0
    for i in range(batches):
        n = rng.randint(1, 6)
        pid = 3000 if rng.random() < 0.5 else -1
        records = []
        for j in range(n):
            clock += rng.randint(50, 5_000)
            key = f"user-{rng.randint(1, 40):04d}"
            value = None if rng.random() < 0.12 else json.dumps(
                {"name": key.replace("-", " ").title(), "email": f"{key}@example.com",
                 "tier": rng.choice(("free", "pro", "enterprise")), "version": i},
                separators=(",", ":")).encode()
            records.append(v2.Record(offset + j, clock, key.encode(), value))
        if i % 20 in (0, 2):  # an account created, then deleted for good: its tombstone survives cleaning
            clock += rng.randint(50, 5_000)
            gone = f"user-{9000 + i - i % 20}".encode()
            records.append(v2.Record(offset + n, clock, gone, None if i % 20 else b'{"name":"Closed Account"}'))
            n += 1
        raw.append((offset, offset + n - 1, pid, seq if pid >= 0 else -1, records))
        if pid >= 0:
            seq += n
        offset += n
    latest = {r.key: r.offset for *_, recs in raw for r in recs}
    cut = max(1, int(len(raw) * clean_fraction))
    horizon = clock + 86_400_000
    out: list[bytes] = []
    for i, (base, last, pid, seq0, records) in enumerate(raw):
        epoch = 0 if i < len(raw) // 2 else 1
        common: dict[str, Any] = dict(base_offset=base, partition_leader_epoch=epoch, producer_id=pid,
                                      producer_epoch=0 if pid >= 0 else -1, base_sequence=seq0)
        if i >= cut:
            out.append(v2.build_batch(records, **common))
            continue
        kept = [r for r in records if latest[r.key] == r.offset]
        if not kept and pid < 0:
            continue
        tomb = any(r.value is None for r in kept)
        out.append(v2.build_batch(kept, last_offset_delta=last - base, delete_horizon=horizon if tomb else None,
                                  **common))
    first_dirty = raw[cut][0] if cut < len(raw) else offset
    return CompactedLog(out, first_dirty, [b for b in out if _base(b) < first_dirty])


def _base(batch: bytes) -> int:
    return int.from_bytes(batch[:8], "big", signed=True)


def legacy_log(rng: random.Random, entries: int) -> list[bytes]:
    """Magic 0 messages, then magic 1 (CreateTime); about one entry in four is a compressed wrapper."""
    out: list[bytes] = []
    offset, clock = 0, TS0 - 400 * 86_400_000
    for i in range(entries):
        magic = 0 if i < entries // 3 else 1
        n = rng.randint(2, 5) if rng.random() < 0.25 else 1
        msgs = []
        for j in range(n):
            clock += rng.randint(100, 60_000)
            key = None if rng.random() < 0.3 else f"device-{rng.randint(1, 200):03d}".encode()
            value = json.dumps({"event": rng.choice(("login", "logout", "click", "view")),
                                "seq": offset + j, "legacy": True}, separators=(",", ":")).encode()
            msgs.append((offset + j, clock, key, value))
        if n == 1:
            off, ts, key, value = msgs[0]
            out.append(legacy.build_message(off, key, value, magic=magic, timestamp=ts))
        else:
            out.append(legacy.build_compressed(msgs, magic=magic, codec=rng.choice(LEGACY_CODECS)))
        offset += n
    return out


@dataclass(frozen=True)
class Commit:
    """One offset commit of a consumer group (the offset of the next record it will read)."""

    group: str
    partition_dir: str
    offset: int
    timestamp: int
    leader_epoch: int = -1


def _batch_ends(log: list[bytes]) -> tuple[list[int], list[int]]:
    """(next offset, max timestamp) of each batch of a leader log."""
    from replog.formats.kafka.segment import SegmentWalk
    infos = [next(SegmentWalk(b, "<batch>").batches()) for b in log]
    return [i.next_offset for i in infos], [i.max_timestamp for i in infos]


def group_commits(rng: random.Random, rounds: int, logs: dict[str, list[bytes]]) -> list[Commit]:
    """Groups billing (the orders partitions) and fraud-check (the others) reading the leader logs: each
    commit comes after the record before its offset was written."""
    groups = {"billing": sorted(t for t in logs if t.startswith("orders")),
              "fraud-check": sorted(t for t in logs if not t.startswith("orders"))}
    ends = {tp: _batch_ends(log) for tp, log in logs.items()}
    committed = {(g, tp): 0 for g, tps in groups.items() for tp in tps}
    out: list[Commit] = []
    clock = TS0
    for _ in range(rounds):
        group = rng.choice(sorted(groups))
        for tp in rng.sample(groups[group], k=min(len(groups[group]), rng.randint(1, 3))):
            offsets, stamps = ends[tp]
            target = offsets[-1] if offsets else 0
            step = max(1, target // rounds)
            c = committed[(group, tp)] = min(target, committed[(group, tp)] + rng.randint(1, 2 * step))
            read = stamps[bisect.bisect_left(offsets, c)] if c and offsets else TS0
            clock = max(clock, read) + rng.randint(1_000, 5_000)
            out.append(Commit(group, tp, c, clock))
    return out


def consumer_offsets_log(rng: random.Random, commits: list[Commit]) -> list[bytes]:
    """The commits in time order as `__consumer_offsets` batches of 1-3 records (uncompressed, epoch 0);
    a commit with a leader epoch is written as a KIP-320 client's (OffsetCommitValue v3 carries it)."""
    ordered = sorted(commits, key=lambda c: c.timestamp)
    out: list[bytes] = []
    offset = 0
    while ordered:
        n = rng.randint(1, 3)
        take, ordered = ordered[:n], ordered[n:]
        records = []
        for j, c in enumerate(take):
            topic, _, part = c.partition_dir.rpartition("-")
            records.append(v2.Record(offset + j, c.timestamp, encode_offset_commit_key(c.group, topic, int(part)),
                                     encode_offset_commit_value(c.offset, "", c.timestamp,
                                                                leader_epoch=c.leader_epoch)))
        out.append(v2.build_batch(records, base_offset=offset, partition_leader_epoch=0))
        offset += len(records)
    return out


def orders2_commits(div: DivergentOrders) -> list[Commit]:
    """Groups that read `orders-2` from the old leader before it crashed (its high watermark, in memory,
    had passed what it checkpointed): shipping (a KIP-320 client: its commit carries the leader epoch)
    and audit (an older client) inside the records the old leader loses; reporting behind them."""
    times = dict(div.lost_times)
    ship = div.divergent_offset + div.lost_records // 2
    audit = div.divergent_offset + div.lost_records - 3
    behind = max(1, div.divergent_offset - 40)
    return [Commit("shipping", "orders-2", ship, times[ship - 1] + 500, div.old_epoch),
            Commit("audit", "orders-2", audit, times[audit - 1] + 700),
            Commit("reporting", "orders-2", behind, times[div.divergent_offset + 1] + 900)]


TXN_STATUS = {name: i for i, name in enumerate(("Empty", "Ongoing", "PrepareCommit", "PrepareAbort",
                                                "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"))}


def last_markers(log: list[bytes]) -> dict[int, int]:
    """The time of each producer's last transaction marker in a leader log."""
    from replog.formats.kafka.segment import SegmentWalk
    out: dict[int, int] = {}
    for b in log:
        info = next(SegmentWalk(b, "<batch>").batches())
        if info.is_control:
            out[info.producer_id] = info.max_timestamp
    return out


def transaction_state_log(txn: list[TxnWrite], others: dict[int, tuple[str, int]], topic_partition: tuple[str, int],
                          ) -> list[bytes]:
    """The coordinator's `__transaction_state` records: every transition of the enricher's two transactions
    on `topic_partition` (Ongoing with it, PrepareCommit, CompleteCommit with no partitions), and the last
    state of every other producer id: (transactional id, when its last transaction completed)."""
    topic, partition = topic_partition
    entries: list[tuple[str, int, int, str, list[dict[str, Any]], int, int]] = []
    data = [w for w in txn if not w.marker]
    markers = [w for w in txn if w.marker]
    for begin, end in zip(data, markers, strict=True):
        parts = [{"topic": topic, "partitionIds": [partition]}]
        entries += [(TXN_ID, TXN_PRODUCER_ID, 0, "Ongoing", parts, begin.timestamp - 3, begin.timestamp - 3),
                    (TXN_ID, TXN_PRODUCER_ID, 0, "PrepareCommit", parts, end.timestamp - 2, begin.timestamp - 3),
                    (TXN_ID, TXN_PRODUCER_ID, 0, "CompleteCommit", [], end.timestamp + 4, begin.timestamp - 3)]
    entries += [(tid, pid, 0, "CompleteCommit", [], done + 4, done - 1_000)
                for pid, (tid, done) in sorted(others.items())]
    records = []
    for i, (tid, pid, epoch, state, parts, updated, started) in enumerate(sorted(entries, key=lambda e: e[5])):
        value = encode_transaction_log_value({
            "producerId": pid, "producerEpoch": epoch, "transactionTimeoutMs": 60_000,
            "transactionStatus": TXN_STATUS[state], "transactionPartitions": parts,
            "transactionLastUpdateTimestampMs": updated, "transactionStartTimestampMs": started})
        records.append(v2.Record(i, updated, encode_transaction_log_key(tid), value))
    return [v2.build_batch([r], base_offset=r.offset, partition_leader_epoch=0) for r in records]
