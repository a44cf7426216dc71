"""Leader logs of the sample topics, as lists of batch bytes in offset order.

Each builder draws from the `random.Random` it is given and from a fixed
clock, so a seed always gives the same bytes. The logs look like what real
clients leave: mixed codecs and headers (`orders`), interleaved transactions
(`payments`), a compacted topic after one cleaner pass (`users`), pre-0.11
messages (`legacy-events`) and group offset commits (`__consumer_offsets`).
"""
from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass, field
from typing import Any

from replog.formats.kafka import batch as v2
from replog.formats.kafka import codecs, legacy
from replog.formats.kafka.control import build_marker_batch
from replog.formats.kafka.internal.consumer_offsets import encode_offset_commit_key, encode_offset_commit_value

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


@dataclass
class DivergentOrders:
    """`orders-2`: a common history, then two histories at the same offsets."""

    common: list[bytes]
    lost: list[bytes]            # written by the old leader in `old_epoch`, never replicated
    new: list[bytes]             # written by the new leader in `old_epoch + 1`
    old_epoch: int
    divergent_offset: int
    lost_records: int
    lost_last_offset: int


def divergent_orders_log(rng: random.Random, partition: int, batches: int, epoch_every: int,
                         lost_batches: int = 3, new_batches: int = 6) -> DivergentOrders:
    stream = OrderStream(rng, partition, producer_id=1000 + partition)
    common = [stream.batch(i // epoch_every) for i in range(batches)]
    old_epoch = (batches - 1) // epoch_every
    fork_at, sequence = stream.next_offset, stream.sequence
    lost_stream = stream.fork(random.Random(rng.getrandbits(64)), "old-leader")
    lost = [lost_stream.batch(old_epoch) for _ in range(lost_batches)]
    stream.sequence = sequence
    new = [stream.batch(old_epoch + 1) for _ in range(new_batches)]
    return DivergentOrders(common, lost, new, old_epoch, fork_at, lost_stream.next_offset - fork_at,
                           lost_stream.next_offset - 1)


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


def consumer_offsets_log(rng: random.Random, batches: int, targets: dict[str, int]) -> list[bytes]:
    """Offset commits of two consumer groups for the sample topics (uncompressed, epoch 0)."""
    groups = {"billing": [t for t in targets if t.startswith("orders")],
              "fraud-check": [t for t in targets if not t.startswith("orders")]}
    committed = {(g, tp): 0 for g, tps in groups.items() for tp in tps}
    out: list[bytes] = []
    offset, clock = 0, TS0
    for _ in range(batches):
        group = rng.choice(sorted(groups))
        records = []
        for j, tp in enumerate(rng.sample(groups[group], k=min(len(groups[group]), rng.randint(1, 3)))):
            topic, _, part = tp.rpartition("-")
            clock += rng.randint(1_000, 5_000)
            step = max(1, targets[tp] // batches)
            committed[(group, tp)] = min(targets[tp], committed[(group, tp)] + rng.randint(1, 2 * step))
            records.append(v2.Record(offset + j, clock, encode_offset_commit_key(group, topic, int(part)),
                                     encode_offset_commit_value(committed[(group, tp)], "", clock)))
        out.append(v2.build_batch(records, base_offset=offset, partition_leader_epoch=0))
        offset += len(records)
    return out
