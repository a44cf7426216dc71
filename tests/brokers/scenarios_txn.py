"""Transactions around a truncation, run on a real cluster with Kafka's own Java producer (`java/StepProducer.java`,
driven step by step so that brokers can be frozen or crashed between a transaction's records and its commit, and the
same producer, its epoch and sequences in memory, goes on afterwards).

Where the transaction coordinator lives: `__transaction_state` (one partition, replication factor 1, the lab's
settings) is created before anything else with an explicit assignment, on the broker the scenario names. In the
marker scenarios it is b2, the leader that crashes: the commit must complete while b3 and b4 are frozen (that is
how the marker reaches b2 alone), and a SIGKILL keeps the coordinator's log (the page cache survives a process
crash), so b2 loads the coordinator's state again when it restarts, as a real crashed coordinator does.

Premise of the marker scenarios (stated to replog with --running): the copy is taken with b2 down and b3, b4
frozen; b2 restarts from its own disk, b3 and b4 go on. Checkpoints are whatever the brokers had flushed.
"""
from __future__ import annotations

import queue
import re
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.brokers import broker_view as view
from tests.brokers.kafka_lab import TOOL_JVM, Cluster, wait_until
from tests.brokers.scenarios import (
    ASSIGNMENT,
    JAVA,
    TOPIC,
    Outcome,
    converge_and_stop,
    copy_frozen,
    crash_and_elect,
    output_marks,
    restart_on,
    values,
    wait_isr,
    wait_leader,
)

TXN_TOPIC = "__transaction_state"
# the transaction coordinator's own configuration of its topic (TransactionLog: compacted, uncompressed)
TXN_CONFIG = {"cleanup.policy": "compact", "compression.type": "uncompressed", "segment.bytes": "104857600"}
TXN_ID = "lab-step"
ANSWER = re.compile(r"^(ok|error) ?(.*)$")
RECORDS = 5   # per transaction


class StepProducer:
    """`java/StepProducer.java` in its own process, one command at a time; killed by its pid on `close`."""

    def __init__(self, cluster: Cluster, transactional_id: str | None, log: Path) -> None:
        cmd = ["java", *TOOL_JVM, *cluster.log4j, "-cp", cluster.cp, str(JAVA / "StepProducer.java"),
               cluster.bootstrap, TOPIC, transactional_id or "-"]
        self.log = log
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, start_new_session=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.answer_of("(start)", 180)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with self.log.open("a") as out:
            for line in self.proc.stdout:
                out.write(line)
                out.flush()
                if ANSWER.match(line):
                    self.lines.put(line.rstrip("\n"))
        self.lines.put("error exited")

    def answer_of(self, command: str, timeout: float) -> str:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"the producer did not answer {command!r} within {timeout:.0f} s "
                                 f"(its output: {self.log})") from None

    def do(self, command: str, timeout: float = 240) -> str:
        """Send one command; its answer line ("ok ..." or "error ...")."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.answer_of(command, timeout)

    def must(self, command: str, timeout: float = 240) -> str:
        answer = self.do(command, timeout)
        assert answer.startswith("ok"), f"the producer's {command!r} failed: {answer} (its output: {self.log})"
        return answer

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)


def transaction(producer: StepProducer, prefix: str) -> tuple[int, int]:
    """begin, RECORDS records, commit: the offsets the leader gave the first and last record."""
    producer.must("begin")
    first, last = (int(x) for x in producer.must(f"send {RECORDS} {prefix}").split()[2:4])
    producer.must("commit")
    return first, last


def place_coordinator(cluster: Cluster, broker: int) -> None:
    """`__transaction_state` on `broker` alone, before any transactional id exists."""
    from kafka.admin import NewTopic
    new = NewTopic(TXN_TOPIC, replica_assignments={0: [broker]}, topic_configs=TXN_CONFIG)
    cluster.admin.create_topics([new], timeout_ms=30000)
    wait_until(lambda: cluster.partition(TXN_TOPIC).get("leader") == broker, 60,
               f"{TXN_TOPIC}-0 never led by b{broker}")


def read_committed(cluster: Cluster, timeout: float = 60, settled: bool = False) -> tuple[int, list[tuple[int, bytes]]]:
    """What a read_committed consumer reads of partition 0 from the start: (its end, the last stable offset as the
    leader answers ListOffsets for that isolation level; (offset, value) of every record it read). `settled`: every
    transaction is known to be ended, so first wait until the last stable offset reaches the log end — a commit
    returns to the producer before the coordinator's markers are written (`TransactionCoordinator` completes
    PrepareCommit, then sends the markers), so an early ListOffsets can answer an LSO short of the last commit."""
    from kafka import KafkaConsumer
    from kafka.structs import TopicPartition
    tp = TopicPartition(TOPIC, 0)
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, enable_auto_commit=False, group_id=None,
                             auto_offset_reset="earliest", request_timeout_ms=15000, isolation_level="read_committed")
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        deadline = time.monotonic() + timeout
        end = int(consumer.end_offsets([tp])[tp])
        while settled and end < cluster.log_end(TOPIC) and time.monotonic() < deadline:
            time.sleep(0.5)
            end = int(consumer.end_offsets([tp])[tp])
        got: list[tuple[int, bytes]] = []
        while consumer.position(tp) < end and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=1000).values():
                got.extend((r.offset, r.value) for r in records)
        return end, got
    finally:
        consumer.close()


def transaction_version(cluster: Cluster) -> int | None:
    """The cluster's `transaction.version` feature level, read from the controller's metadata log with the real
    kafka-dump-log's metadata decoder (the last FeatureLevelRecord for it; None in ZooKeeper mode or never set)."""
    logs = sorted((cluster.control.log_dir / "__cluster_metadata-0").glob("*.log"))
    if not logs:
        return None
    level = None
    for lines in view.dump_lines(cluster.spec.version, logs, ["--cluster-metadata-decoder"]).values():
        for line in lines:
            found = re.search(r'"name":"transaction\.version","featureLevel":(\d+)', line)
            if found:
                level = int(found.group(1))
    return level


@dataclass
class TxnOutcome:
    """A transaction scenario's copy and end, with what the clients met."""
    outcome: Outcome
    transaction_version: int | None
    transactions: dict[str, tuple[int, int]] = field(default_factory=dict)   # prefix -> (first, last) offsets
    next_answer: str | None = None          # the producer's answer to its next transaction's records
    last_stable_offset: int = -1            # read_committed end at the end (ListOffsets)
    committed_read: list[tuple[int, bytes]] = field(default_factory=list)


def marker_on_b2_alone(cluster: Cluster, producer: StepProducer, complete: bool) -> dict[str, tuple[int, int]]:
    """T0 committed everywhere; T1's records replicated everywhere; b3 and b4 frozen; T1 committed, so its COMMIT
    marker lands on b2 alone. A frozen follower still receives into its socket the answer to a fetch it had parked
    on the leader (and appends it when it resumes), so the commit waits until those fetches expired
    (replica.fetch.wait.max.ms, 200 ms here). `complete`: it waits until the ISR shrank to b2, which then
    acknowledges the marker at once and the coordinator records the transaction CompleteCommit; else b2 is killed
    within the replica lag time (5 s), its coordinator record still PrepareCommit (the marker unacknowledged)."""
    done = {"T0": transaction(producer, "T0")}
    producer.must("begin")
    first, last = (int(x) for x in producer.must(f"send {RECORDS} T1").split()[2:4])
    done["T1"] = (first, last)
    cluster.pause(3, 4)
    if complete:
        wait_isr(cluster, [2])
    else:
        time.sleep(1)
    producer.must("commit")
    if complete:
        wait_until(lambda: cluster.log_end(TOPIC) == last + 2, 60, "the marker never reached b2's high watermark")
        time.sleep(2)   # the coordinator writes CompleteCommit once every marker is acknowledged
    else:
        time.sleep(1)   # the coordinator's marker reaches b2's log within milliseconds; the ISR shrinks after 5 s
    return done


def marker_lost(cluster: Cluster, work: Path, complete: bool) -> TxnOutcome:
    """A transaction's COMMIT marker written on the leader b2 alone; b2 crashes. `complete` (the coordinator has
    completed the transaction): b3 is elected uncleanly and holds T1's records without their marker; b2 returns,
    truncates the marker away, and no marker comes again: the transaction hangs. Else (PrepareCommit): b3 and b4
    return to an ISR still holding them and one is elected cleanly; b2 returns, truncates its marker and, as
    coordinator again, sends the marker once more to the new leader."""
    place_coordinator(cluster, 2)
    cluster.create_topic(TOPIC, ASSIGNMENT)
    tv = transaction_version(cluster)
    producer = StepProducer(cluster, TXN_ID, work / "producer.log")
    try:
        done = marker_on_b2_alone(cluster, producer, complete)
        if complete:
            crash_and_elect(cluster, 2, (3, 4))
        else:
            cluster.kill(2)
            cluster.resume(3, 4)
            wait_until(lambda: cluster.partition(TOPIC).get("leader") in (3, 4), 90, "no clean leader elected")
        copy, state = copy_frozen(cluster, work)
        producer.must("quit")
    finally:
        producer.close()
    marks = output_marks(cluster)
    cluster.restart(2)
    return finish(cluster, work, TxnOutcome(Outcome(copy, copy, -1, -1, partition_state=state), tv, done), marks)


def finish(cluster: Cluster, work: Path, got: TxnOutcome, marks: dict[str, int]) -> TxnOutcome:
    """Wait for the full ISR and the coordinator's markers, read as a read_committed consumer, stop cleanly."""
    wait_isr(cluster, ASSIGNMENT, timeout=120)
    time.sleep(5)    # a coordinator that owes a marker sends it within its retry backoff
    got.last_stable_offset, got.committed_read = read_committed(cluster)
    outcome = converge_and_stop(cluster, work, marks)
    outcome.copy, outcome.partition_state = got.outcome.copy, got.outcome.partition_state
    outcome.running = ["b3", "b4"]
    got.outcome = outcome
    return got


def transaction_lost(cluster: Cluster, work: Path) -> TxnOutcome:
    """T0 committed everywhere; b3 and b4 frozen out of the ISR; T1 (records and COMMIT marker) committed on b2
    alone; b2 crashes, b3 is elected uncleanly; the copy is taken; b2 returns (coordinator again, T1 complete) and
    truncates T1 away; then the same producer runs its next transaction T2, and its first records meet the new
    leader's producer state for it: the answer is recorded."""
    place_coordinator(cluster, 2)
    cluster.create_topic(TOPIC, ASSIGNMENT)
    tv = transaction_version(cluster)
    producer = StepProducer(cluster, TXN_ID, work / "producer.log")
    try:
        done = {"T0": transaction(producer, "T0")}
        cluster.pause(3, 4)
        wait_isr(cluster, [2])
        done["T1"] = transaction(producer, "T1")
        # the coordinator sends the marker after answering the commit: wait until b2 holds (and, alone in the ISR,
        # acknowledged) it, and the coordinator recorded CompleteCommit
        wait_until(lambda: cluster.log_end(TOPIC) == done["T1"][1] + 2, 60, "T1's marker never reached b2")
        time.sleep(2)
        crash_and_elect(cluster, 2, (3, 4))
        copy, state = copy_frozen(cluster, work)
        marks = output_marks(cluster)
        cluster.restart(2)
        wait_isr(cluster, ASSIGNMENT, timeout=120)
        producer.must("begin")
        answer = producer.do(f"send {RECORDS} T2")
        producer.do("commit" if answer.startswith("ok") else "abort")
        producer.do("quit")
    finally:
        producer.close()
    got = TxnOutcome(Outcome(copy, copy, -1, -1, partition_state=state), tv, done, next_answer=answer)
    return finish(cluster, work, got, marks)


# ----- the producer's next write on a cluster restarted on replog's repair

REFUSALS = re.compile(r"OutOfOrderSequence|Out of order sequence|InvalidProducerEpoch|ProducerFenced|InvalidTxnState|"
                      r"UnknownProducerId|Invalid sequence number")


@dataclass
class RepairProof:
    """What the same producer met on the cluster restarted from the repaired copy."""
    copy: Path
    answers: list[str]                       # its next write's answers (send, commit)
    leader: int                              # the leader it wrote to (the replica repair truncated)
    committed_read: list[tuple[int, bytes]]  # a read_committed consumer from the start, after it
    refusals: dict[str, list[str]]           # per broker, its log lines refusing a producer since the restart
    plain: list[bytes]                       # the plain records the new leader b3 took after the election
    outcome: Outcome | None = None


def write(producer: StepProducer, transactional: bool, prefix: str) -> list[str]:
    """One transaction of RECORDS records, or RECORDS idempotent records: the producer's answers."""
    if not transactional:
        return [producer.do(f"send {RECORDS} {prefix}")]
    answers = [producer.do("begin"), producer.do(f"send {RECORDS} {prefix}")]
    answers.append(producer.do("commit" if answers[-1].startswith("ok") else "abort"))
    return answers


def repaired_then_next_write(cluster: Cluster, work: Path, transactional: bool,
                             repair: Callable[[Path], Path]) -> RepairProof:
    """The same producer before and after a repair. It writes twice (two transactions, or two idempotent sends)
    while every replica follows b2; then b3 and b4 freeze, b2 alone takes plain acks=1 records, crashes, b3 is
    elected uncleanly and takes more; the copy is taken (b2 down, b3 and b4 frozen). Premise: every node restarts
    from the copy after `repair` (replog repair --in-place of a copy of it) fixed it. Once the ISR is full, b2
    (the replica the repair truncated and refilled) is made leader again by a preferred election, and the producer,
    still the same process with its epoch and sequences in memory, writes once more."""
    place_coordinator(cluster, 4)
    cluster.create_topic(TOPIC, ASSIGNMENT)
    producer = StepProducer(cluster, TXN_ID if transactional else None, work / "producer.log")
    try:
        for prefix in ("P0", "P1"):
            answers = write(producer, transactional, prefix)
            assert all(a.startswith("ok") for a in answers), f"the producer's {prefix} failed: {answers}"
        end = cluster.log_end(TOPIC)
        cluster.pause(3, 4)
        wait_isr(cluster, [2])
        cluster.produce(TOPIC, values("A", end, 5), acks=1)
        crash_and_elect(cluster, 2, (3, 4))
        plain = values("B", end, 2)
        cluster.produce(TOPIC, plain, acks="all")
        copy, _ = copy_frozen(cluster, work)
        marks = restart_on(cluster, repair(copy))
        wait_isr(cluster, ASSIGNMENT, timeout=120)
        cluster.tool(ELECTION_TOOL, "--bootstrap-server", cluster.bootstrap, "--election-type", "preferred",
                     "--topic", TOPIC, "--partition", "0")
        wait_leader(cluster, 2)
        answers = write(producer, transactional, "P2")
        producer.do("quit")
    finally:
        producer.close()
    _, read = read_committed(cluster, settled=True)
    refusals = {f"b{n}": REFUSALS_LINE.findall(node.output()[marks.get(f"b{n}", 0):])
                for n, node in cluster.brokers.items()}
    outcome = converge_and_stop(cluster, work, marks)
    return RepairProof(copy, answers, 2, read, refusals, plain, outcome)


ELECTION_TOOL = "org.apache.kafka.tools.LeaderElectionCommand"
REFUSALS_LINE = re.compile(rf"^.*(?:{REFUSALS.pattern}).*$", re.MULTILINE)
