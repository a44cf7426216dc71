"""Compacted topics whose replicas the log cleaner cleaned at different points (issue 26, issue 28 item 1).

Every scenario here runs a topic with `cleanup.policy=compact`, keyed records overwritten round after round and
some keys deleted (tombstones), segments rolled by time (`segment.ms`) so closed segments pile up, and the
cleaner eager (`min.cleanable.dirty.ratio` 0.01, `log.cleaner.backoff.ms` 500). Broker 4's cleaner is off
(`log.cleaner.enable=false`, a per-broker setting): its replica is never cleaned. Brokers 2 and 3 clean on
their own schedule; freezing broker 3 while broker 2 cleans on puts their cleaner points apart.

The replicas' batch lists then differ below the cleaner points (the cleaner rewrote or dropped batches) while
every broker holds the same records as far as a consumer of a compacted topic can tell (latest value per key).
What the brokers did is read with their own means: truncations from their log lines, batches and records from
the real kafka-dump-log (`--deep-iteration --print-data-log`), cleaner points from their `cleaner-offset-checkpoint`.
"""
from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.brokers import broker_view as view
from tests.brokers.dumplog import java_command
from tests.brokers.kafka_lab import BROKER_IDS, Cluster, ClusterSpec, wait_until
from tests.brokers.scenarios import (
    ASSIGNMENT,
    TOPIC,
    Outcome,
    converge_and_stop,
    copy_frozen,
    crash_and_elect,
    old_leader_returns,
    output_marks,
    wait_isr,
)

CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
SEGMENT_MS = 1000
TOPIC_CONFIG = {"cleanup.policy": "compact", "segment.ms": str(SEGMENT_MS), "min.cleanable.dirty.ratio": "0.01",
                "min.compaction.lag.ms": "0", "delete.retention.ms": "86400000"}
KEYS = [f"k{i:02d}".encode() for i in range(8)]
# The controller fences a dead broker after `broker.session.timeout.ms` (6 s in the lab, KRaft) or once its
# ZooKeeper session expires (4 s), and moves leadership then: the copy waits for that, so the controller's
# record it holds is the one the restarted brokers meet.
FENCED_AFTER = 12.0


def compaction_spec(spec: ClusterSpec) -> ClusterSpec:
    """`spec` with an eager cleaner on every broker and broker 4's cleaner off."""
    return dataclasses.replace(spec, broker_config=spec.broker_config | {"log.cleaner.backoff.ms": "500"},
                               broker_overrides=spec.broker_overrides | {4: {"log.cleaner.enable": "false"}})


def produce_round(cluster: Cluster, round_no: int, acks: int | str = "all", keys: list[bytes] = KEYS) -> None:
    """One record per key, one batch each (each send waited for): the value names the round; in round r the key
    r mod len(keys) is deleted (a tombstone, null value) instead. The first send of a round comes more than
    `segment.ms` after the last one of the previous round, so every round starts a segment on every replica."""
    time.sleep(SEGMENT_MS / 1000 + 0.3)
    producer = cluster.producer(acks)
    try:
        for i, key in enumerate(keys):
            value = None if i == round_no % len(keys) else f"r{round_no}-{key.decode()}".encode()
            producer.send(TOPIC, key=key, value=value, partition=0).get(timeout=30)
    finally:
        producer.close(timeout=10)


def cleaner_point(cluster: Cluster, broker: int) -> int:
    return view.checkpoint(cluster.brokers[broker].log_dir, CLEANER_CHECKPOINT, TOPIC) or 0


def wait_cleaned(cluster: Cluster, brokers: tuple[int, ...], at_least: int) -> None:
    """Until each broker's cleaner checkpoint for the partition reaches `at_least` (the cleaner ran there)."""
    for n in brokers:
        wait_until(lambda n=n: cleaner_point(cluster, n) >= at_least, 120,
                   f"b{n}'s cleaner never cleaned {TOPIC}-0 up to {at_least} (at {cleaner_point(cluster, n)})")


def cleaned_rounds(cluster: Cluster, rounds: range) -> None:
    """The topic created, `rounds` produced by the full ISR, then one more record so the last round's segment
    is closed; waits until b2 and b3 both cleaned every closed segment."""
    cluster.create_topic(TOPIC, ASSIGNMENT, TOPIC_CONFIG)
    for r in rounds:
        produce_round(cluster, r)
    produce_round(cluster, rounds.stop, keys=KEYS[:1])
    wait_cleaned(cluster, (2, 3), cluster.log_end(TOPIC) - 1)


def cleaned_apart_then_all_crash(cluster: Cluster, work: Path) -> Outcome:
    """Premise: every replica restarts from the copy (all three crash; the copy is their disks then).

    Rounds 0-3 are cleaned by b2 and b3; b3 is frozen, rounds 5-7 go to b2 and b4 (acks=all) and b2 cleans
    them too (a round's closing record is a tombstone of k00), so b3's cleaner point stays behind b2's and b3's
    log ends early; b4 never cleans. All three crash; once the controller has fenced them the copy is taken;
    all restart (ZooKeeper: the recorded leader first), the controller elects from its record, b3 catches
    up. No replica holds a record the leader lacks: nobody truncates, nothing is lost."""
    cleaned_rounds(cluster, range(4))
    cluster.pause(3)
    wait_isr(cluster, [2, 4])
    for r in range(5, 8):
        produce_round(cluster, r)
    produce_round(cluster, 8, keys=KEYS[:1])
    wait_cleaned(cluster, (2,), cluster.log_end(TOPIC) - 1)
    cluster.kill(*BROKER_IDS)
    time.sleep(FENCED_AFTER)
    copy, state = copy_frozen(cluster, work)
    marks = output_marks(cluster)
    if state is not None:
        # ZooKeeper: the controller died with the brokers, so the state znode still names the leader it
        # last elected; that broker restarts first and, the first live ISR member, is elected again
        first = int(json.loads(state.read_text())["leader"])
        cluster.restart(first)
        cluster.restart(*(n for n in BROKER_IDS if n != first))
    else:
        cluster.restart(*BROKER_IDS)
    outcome = converge_and_stop(cluster, work, marks)
    outcome.copy, outcome.partition_state = copy, state
    return outcome


def cleaned_then_unclean_election(cluster: Cluster, work: Path) -> Outcome:
    """Premise: b2 restarts from the copy; b3 and b4 keep running (the copy is taken with them frozen).

    Rounds 0-3 are cleaned by b2 and b3 (not b4). b3 and b4 are frozen; b2 alone takes round 5 with acks=1
    (above every cleaner point: it sits in b2's active segment) and crashes; b3 is elected uncleanly and
    takes round 6; the copy is taken; b2 returns and must truncate round 5 away: records really lost."""
    unclean_above_the_cleaned(cluster)
    produce_round(cluster, 6)
    return copy_then_old_leader_returns(cluster, work)


def unclean_above_the_cleaned(cluster: Cluster) -> None:
    """Rounds 0-3 cleaned by b2 and b3; b2 alone takes round 5 (acks=1) and crashes; b3 is elected uncleanly."""
    cleaned_rounds(cluster, range(4))
    cluster.pause(3, 4)
    wait_isr(cluster, [2])
    produce_round(cluster, 5, acks=1)
    crash_and_elect(cluster, 2, (3, 4))


def copy_then_old_leader_returns(cluster: Cluster, work: Path) -> Outcome:
    """The copy with b3 and b4 frozen; then b2 restarts from its disk and the brokers converge."""
    copy, state = copy_frozen(cluster, work)
    return old_leader_returns(cluster, work, copy, state)


def new_leader_cleans_past_the_divergence(cluster: Cluster, work: Path) -> Outcome:
    """Premise: b2 restarts from the copy; b3 and b4 keep running (the copy is taken with them frozen).

    As `cleaned_then_unclean_election` up to the unclean election of b3; then b3 takes rounds 6 and 7 and
    the closing record, and its cleaner cleans all of them: b3 dropped its own records at the offsets of
    b2's round 5 for later ones of the same keys. b2 returns and truncates round 5 away; only the epochs
    tell its records from the ones b3 cleaned (b3 never held b2's)."""
    unclean_above_the_cleaned(cluster)
    for r in (6, 7):
        produce_round(cluster, r)
    produce_round(cluster, 8, keys=KEYS[:1])
    wait_cleaned(cluster, (3,), cluster.log_end(TOPIC) - 1)
    return copy_then_old_leader_returns(cluster, work)


# ----- what the brokers hold, read with kafka-dump-log

RECORD = re.compile(r"\|?\s*offset: (\d+) .*?keySize: (-?\d+) valueSize: (-?\d+)"
                    r".*?(?: key: (.*?))?(?: payload: (.*))?$")


@dataclass(frozen=True)
class DumpedRecord:
    """One record line of `kafka-dump-log --deep-iteration --print-data-log`."""
    offset: int
    key: str | None
    value: str | None     # None: a tombstone


def dumped_records(version: str, partition_dirs: dict[str, Path]) -> dict[str, list[DumpedRecord]]:
    """Each named replica's records in offset order, as the real kafka-dump-log prints them (one JVM)."""
    files = {name: view.segments(d) for name, d in partition_dirs.items()}
    every = [f for fs in files.values() for f in fs]
    out: dict[Path, list[DumpedRecord]] = {}
    if every:
        with tempfile.TemporaryDirectory(prefix="compaction-view-") as scratch:
            cmd = java_command(version, every, ["--deep-iteration", "--print-data-log"], Path(scratch))
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"kafka-dump-log failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        current: list[DumpedRecord] = []
        for line in done.stdout.splitlines():
            if line.startswith("Dumping "):
                current = out.setdefault(Path(line[len("Dumping "):].strip()), [])
            elif (m := RECORD.match(line.strip())) is not None and "endTxnMarker" not in line:
                key = m.group(4) if int(m.group(2)) >= 0 else None
                value = m.group(5) if int(m.group(3)) >= 0 else None
                current.append(DumpedRecord(int(m.group(1)), key, value))
    return {name: [r for f in fs for r in out.get(f, [])] for name, fs in files.items()}


def latest_values(records: list[DumpedRecord]) -> dict[str, str]:
    """What a consumer of the compacted topic ends with: each key's latest value, deleted keys left out."""
    latest: dict[str, str | None] = {}
    for r in records:
        if r.key is not None:
            latest[r.key] = r.value
    return {k: v for k, v in latest.items() if v is not None}
