"""Real Kafka clusters on 127.0.0.1 for the broker lab: a KRaft controller (or ZooKeeper) and three brokers started
from the Maven jars `jars.py` resolves, driven by signals (crash, pause, clean stop) and by the admin API.

Every process is started in its own session and recorded in the cluster; `Cluster.close` (run by the context
manager on every exit path, exceptions and Ctrl-C included) kills each one by its pid, never by name. Nothing
listens anywhere but loopback: every listener, advertised listener and ZooKeeper client address is 127.0.0.1.
Timeouts are short (session 6 s, replica lag 5 s) so that an ISR shrinks and a dead broker is fenced within
seconds; the settings are the recipe's (`docs/reference/real-brokers.md` §2.2-§2.5).
"""
from __future__ import annotations

import os
import random
import re
import signal
import socket
import subprocess
import time
import uuid
from base64 import urlsafe_b64encode
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.brokers.jars import classpath

JVM = ["-Xms192m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
       "-Djava.awt.headless=true"]
TOOL_JVM = ["-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData"]
BROKER_IDS = (2, 3, 4)
CONTROLLER_ID = 1
QUORUM_IDS = (1, 5, 6)     # a three-voter controller quorum (`ClusterSpec.controllers` 3): c1, c5, c6
START_TIMEOUT = 120.0
ZK_SESSION_TIMEOUT = 4.0   # seconds; ZooKeeper's own minimum is 2 ticks (tickTime 500 ms)

LOG4J1 = """log4j.rootLogger=INFO, out
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.kafka.request.logger=WARN
"""
LOG4J2 = """appender.out.type=Console
appender.out.name=OUT
appender.out.layout.type=PatternLayout
appender.out.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=INFO
rootLogger.appenderRefs=out
rootLogger.appenderRef.out.ref=OUT
logger.zk.name=org.apache.zookeeper
logger.zk.level=WARN
"""

BASE_BROKER = {
    "num.partitions": "1", "default.replication.factor": "3", "min.insync.replicas": "1",
    "auto.create.topics.enable": "false", "auto.leader.rebalance.enable": "false",
    "replica.lag.time.max.ms": "5000", "replica.fetch.wait.max.ms": "200",
    "replica.high.watermark.checkpoint.interval.ms": "1000", "log.flush.start.offset.checkpoint.interval.ms": "1000",
    "log.segment.bytes": "1048576", "log.cleaner.dedupe.buffer.size": "8388608",
    "group.initial.rebalance.delay.ms": "0", "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1", "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1", "transaction.state.log.num.partitions": "1",
    "num.network.threads": "1", "num.io.threads": "2", "num.replica.fetchers": "1",
    "num.recovery.threads.per.data.dir": "1", "log.dir.failure.timeout.ms": "3000",
    "controlled.shutdown.enable": "true", "background.threads": "2",
}


_TAKEN: set[int] = set()


def free_port() -> int:
    """A loopback port below the kernel's ephemeral range that nothing listens on now and this process has not
    handed out yet. A port from the ephemeral range (what binding port 0 returns) can be given to a client's
    outgoing connection between this check and the broker's bind ("Address already in use"). The bind test sets
    SO_REUSEADDR, as the brokers do: ports held only by TIME_WAIT connections are free."""
    first, end = port_range()
    rnd = random.Random()
    for _ in range(1000):
        port = rnd.randrange(first, end)
        if port in _TAKEN:
            continue
        with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _TAKEN.add(port)
        return port
    raise AssertionError("no free loopback port below the ephemeral range")


def port_range(base: int = 10000) -> tuple[int, int]:
    """[first, end) of the loopback ports this process may hand out: below the ephemeral range, and under
    pytest-xdist (`PYTEST_XDIST_WORKER` gwN of `PYTEST_XDIST_WORKER_COUNT`) the worker's own slice of it, so that two
    workers' clusters never pick the same port between the check and the broker's bind."""
    low = _ephemeral_low()
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if not worker.startswith("gw") or count <= 1:
        return base, low
    span = (low - base) // count
    first = base + int(worker[2:]) * span
    return first, first + span


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def cluster_id() -> str:
    """Kafka's `Uuid.randomUuid` as text: 16 random bytes, URL-safe base64 without padding, never starting '-'."""
    while True:
        text = urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def major(version: str) -> int:
    return int(version.split(".")[0])


@dataclass
class Node:
    """One JVM of the cluster: its config, log dir, output file and (while it runs) its process."""
    name: str
    node_id: int
    port: int
    home: Path
    command: list[str]
    proc: subprocess.Popen[bytes] | None = None
    paused: bool = False
    killed_at: float = 0.0       # time.monotonic() of the last crash (a ZooKeeper session outlives it)

    @property
    def log_dir(self) -> Path:
        return self.home / "data"

    @property
    def out(self) -> Path:
        return self.home / "out.log"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        """Start the JVM in its own session, its output appended to `out.log` (a restart keeps the old lines)."""
        assert self.proc is None or self.proc.poll() is not None, f"{self.name} is already running"
        with self.out.open("ab") as out:
            out.write(f"\n===== replog lab: start {time.time():.3f}\n".encode())
            out.flush()
            self.proc = subprocess.Popen(self.command, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.home)
        self.paused = False

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        if self.running:
            assert self.proc is not None
            os.kill(self.proc.pid, sig)

    def kill(self) -> None:
        """A crash: SIGKILL, then wait for the pid. Page-cached writes survive, as after a process crash."""
        if self.proc is None:
            return
        if self.paused:
            self.signal(signal.SIGCONT)
        if self.running:
            self.killed_at = time.monotonic()
        self.signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.paused = False

    def stop(self, timeout: float = 60.0) -> None:
        """A clean stop (SIGTERM: controlled shutdown, checkpoints and `.kafka_cleanshutdown` written)."""
        if not self.running:
            return
        assert self.proc is not None
        self.resume()
        self.signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.name} did not stop within {timeout:.0f} s of SIGTERM") from None

    def pause(self) -> None:
        """A frozen broker (long GC, stalled disk): SIGSTOP; it misses heartbeats and falls out of the ISR."""
        self.signal(signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        if self.paused:
            self.signal(signal.SIGCONT)
            self.paused = False

    def output(self) -> str:
        return self.out.read_text(errors="replace") if self.out.exists() else ""

    def output_since_start(self) -> str:
        """What the current (last started) JVM printed."""
        return self.output().rsplit("===== replog lab: start", 1)[-1]

    def wait_for_line(self, pattern: str, timeout: float = START_TIMEOUT, since_start: bool = True) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        while True:
            text = self.output_since_start() if since_start else self.output()
            found = regex.search(text)
            if found:
                return found
            if not self.running:
                raise AssertionError(f"{self.name} exited before logging {pattern!r}:\n{text[-3000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name} did not log {pattern!r} within {timeout:.0f} s:\n{text[-3000:]}")
            time.sleep(0.2)


@dataclass
class ClusterSpec:
    """What cluster to run: a Kafka version and mode, and the settings that change the protocol."""
    version: str
    mode: str = "kraft"                       # kraft | zk
    ibp: str | None = None                    # ZooKeeper mode: inter.broker.protocol.version (and message format)
    elr: bool | None = None                   # KRaft 4.x: eligible.leader.replicas.version at format time
    broker_config: dict[str, str] = field(default_factory=dict)
    # per broker id, settings on top of `broker_config` (one broker's cleaner off, say)
    broker_overrides: dict[int, dict[str, str]] = field(default_factory=dict)
    controllers: int = 1                      # KRaft: 1 (c1) or 3 voters (c1, c5, c6; static controller.quorum.voters)
    brokers: tuple[int, ...] = BROKER_IDS     # the broker ids the cluster has
    controller_config: dict[str, str] = field(default_factory=dict)   # on top of every controller's settings
    extra_jars: tuple[str, ...] = ()          # jars after the version's class path (a RemoteStorageManager, say)

    @property
    def protocol(self) -> str:
        """The follower truncation protocol replay must be told (it cannot be read from disk): below IBP
        0.11.0-IV2 followers truncate to their high watermark (`ReplicaFetcherThread.isOffsetForLeaderEpochSupported`
        in apache/kafka core/src/main/scala/kafka/server/ReplicaFetcherThread.scala, branch 3.9)."""
        old = self.ibp is not None and (self.ibp.startswith("0.10") or self.ibp in ("0.11.0-IV0", "0.11.0-IV1"))
        return "hw" if old else "epoch"


class Cluster:
    """A controller (KRaft; or three voters) or ZooKeeper and brokers 2, 3, 4 (or those the spec names) on
    loopback, under `root`."""

    def __init__(self, spec: ClusterSpec, root: Path) -> None:
        self.spec = spec
        self.root = root
        self.cp = ":".join([classpath(spec.version), *spec.extra_jars])
        self.cluster_id = cluster_id()
        self.log4j = self._write_logging()
        self.control = self._control_node()
        self.controllers = self._quorum_nodes()
        self.brokers = {n: self._broker_node(n) for n in spec.brokers}
        self._admin: Any = None

    # ----- configuration

    def _write_logging(self) -> list[str]:
        if major(self.spec.version) >= 4:
            path = self.root / "log4j2.properties"   # Log4j2 picks its parser by the extension
            path.write_text(LOG4J2)
            return [f"-Dlog4j2.configurationFile={path}"]
        path = self.root / "log4j.properties"
        path.write_text(LOG4J1)
        return [f"-Dlog4j.configuration=file:{path}"]

    def _java(self, main: str, *args: str) -> list[str]:
        return ["java", *JVM, *self.log4j, "-cp", self.cp, main, *args]

    def _node(self, name: str, node_id: int, port: int, props: dict[str, str], main: str) -> Node:
        home = self.root / name
        home.mkdir(parents=True, exist_ok=True)
        path = home / ("zk.properties" if main.endswith("QuorumPeerMain") else "server.properties")
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return Node(name, node_id, port, home, self._java(main, str(path)))

    def _control_node(self) -> Node:
        port = free_port()
        if self.spec.mode == "zk":
            props = {"dataDir": str(self.root / "zk" / "data"), "clientPort": str(port),
                     "clientPortAddress": "127.0.0.1", "tickTime": "500", "maxClientCnxns": "0",
                     "admin.enableServer": "false"}
            return self._node("zk", 0, port, props, "org.apache.zookeeper.server.quorum.QuorumPeerMain")
        ids = QUORUM_IDS[:self.spec.controllers]
        self.ports = {CONTROLLER_ID: port} | {n: free_port() for n in ids[1:]}
        self.voters = ",".join(f"{n}@127.0.0.1:{self.ports[n]}" for n in ids)
        return self._controller_node(CONTROLLER_ID)

    def _controller_node(self, n: int) -> Node:
        port = self.ports[n]
        props = {"process.roles": "controller", "node.id": str(n), "controller.quorum.voters": self.voters,
                 "listeners": f"CONTROLLER://127.0.0.1:{port}", "controller.listener.names": "CONTROLLER",
                 "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                 "log.dirs": str(self.root / f"c{n}" / "data"), "broker.session.timeout.ms": "6000",
                 "unclean.leader.election.interval.ms": "1000"} | self.spec.controller_config
        return self._node(f"c{n}", n, port, props, "kafka.Kafka")

    def _quorum_nodes(self) -> dict[int, Node]:
        """Every controller by node id: c1 (`control`) and, with three voters, c5 and c6."""
        if self.spec.mode == "zk":
            return {}
        return {CONTROLLER_ID: self.control} | {n: self._controller_node(n)
                                                for n in QUORUM_IDS[1:self.spec.controllers]}

    def _broker_node(self, n: int) -> Node:
        port = free_port()
        name = f"b{n}"
        props = dict(BASE_BROKER)
        props |= {"listeners": f"PLAINTEXT://127.0.0.1:{port}", "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
                  "inter.broker.listener.name": "PLAINTEXT", "log.dirs": str(self.root / name / "data")}
        if self.spec.mode == "zk":
            props |= {"broker.id": str(n), "zookeeper.connect": self.control.address,
                      "zookeeper.session.timeout.ms": str(int(ZK_SESSION_TIMEOUT * 1000)),
                      "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT"}
            if self.spec.ibp:
                props |= {"inter.broker.protocol.version": self.spec.ibp, "log.message.format.version": self.spec.ibp}
        else:
            props |= {"process.roles": "broker", "node.id": str(n), "controller.quorum.voters": self.voters,
                      "controller.listener.names": "CONTROLLER", "broker.heartbeat.interval.ms": "500",
                      "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"}
            if major(self.spec.version) >= 4:
                props |= {"share.coordinator.state.topic.replication.factor": "1",
                          "share.coordinator.state.topic.min.isr": "1"}
        props |= self.spec.broker_config | self.spec.broker_overrides.get(n, {})
        return self._node(name, n, port, props, "kafka.Kafka")

    # ----- life cycle

    @property
    def nodes(self) -> list[Node]:
        others = [n for i, n in self.controllers.items() if i != CONTROLLER_ID]
        return [self.control, *others, *self.brokers.values()]

    @property
    def bootstrap(self) -> str:
        """The brokers that answer now: a frozen broker accepts connections (the kernel does) and never replies,
        so a client bootstrapping from it waits for its whole timeout."""
        return ",".join(b.address for b in self.brokers.values() if b.running and not b.paused)

    def pause(self, *ids: int) -> None:
        for n in ids:
            self.brokers[n].pause()
        self.reset_admin()

    def resume(self, *ids: int) -> None:
        for n in ids:
            self.brokers[n].resume()
        self.reset_admin()

    def kill(self, *ids: int) -> None:
        for n in ids:
            self.brokers[n].kill()
        self.reset_admin()

    def format_storage(self) -> None:
        """`kafka-storage format` of every KRaft node with one cluster id (ELR pinned when the spec says)."""
        if self.spec.mode != "kraft":
            return
        for node in self.nodes:
            args = ["format", "-t", self.cluster_id, "-c", str(node.home / "server.properties"), "--ignore-formatted"]
            if self.spec.elr is not None:
                args += ["--feature", f"eligible.leader.replicas.version={int(self.spec.elr)}"]
            cmd = ["java", *TOOL_JVM, *self.log4j, "-cp", self.cp, "kafka.tools.StorageTool", *args]
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, f"format of {node.name} failed:\n{done.stdout}{done.stderr}"

    def start(self, brokers: tuple[int, ...] | None = None) -> None:
        """Start (or start again, on the same dirs) the controllers or ZooKeeper, then the brokers named (all)."""
        self.format_storage()
        controllers = list(self.controllers.values()) or [self.control]
        for node in controllers:
            node.start()
        if self.spec.mode == "zk":
            wait_port(self.control)
        else:
            for node in controllers:
                node.wait_for_line(r"Kafka Server started|KafkaRaftServer.*started|Transition from .* to Leader")
        self.restart(*(self.spec.brokers if brokers is None else brokers))

    def wait_broker_started(self, broker: Node) -> None:
        broker.wait_for_line(r"\[KafkaServer id=\d+\] started|Kafka Server started|\[KafkaBroker id=\d+\].*started")
        wait_port(broker)

    def restart(self, *ids: int) -> None:
        """Start brokers again on their own disks. In ZooKeeper mode a crashed broker's ephemeral registration
        lives until its session expires; restarting sooner fails with NODEEXISTS (`KafkaZkClient`), so wait."""
        if self.spec.mode == "zk":
            expiry = max(self.brokers[n].killed_at for n in ids) + ZK_SESSION_TIMEOUT + 2.0
            time.sleep(max(0.0, expiry - time.monotonic()))
        for n in ids:
            self.brokers[n].start()
        for n in ids:
            self.wait_broker_started(self.brokers[n])
        self.reset_admin()

    def close(self) -> None:
        """Kill every process this cluster started (by pid), whatever state it is in."""
        if self._admin is not None:
            try:
                self._admin.close()
            except Exception:   # noqa: BLE001 - closing an admin client to a dead cluster may raise anything
                pass
            self._admin = None
        for node in self.nodes:
            node.kill()

    def stop_all(self) -> None:
        """Clean stop: brokers first (controlled shutdown needs the controller), then the controller."""
        if self._admin is not None:
            self._admin.close()
            self._admin = None
        for broker in self.brokers.values():
            broker.stop()
        for node in self.nodes:
            if node not in self.brokers.values():
                node.stop()

    # ----- the admin API

    @property
    def admin(self) -> Any:
        from kafka.admin import KafkaAdminClient
        if self._admin is None:
            self._admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=10000,
                                           client_id="replog-lab")
        return self._admin

    def reset_admin(self) -> None:
        if self._admin is not None:
            try:
                self._admin.close()
            except Exception:  # noqa: BLE001
                pass
            self._admin = None

    def create_topic(self, topic: str, assignment: list[int], configs: dict[str, str] | None = None,
                     wait_isr: bool = True) -> None:
        from kafka.admin import NewTopic
        new = NewTopic(topic, replica_assignments={0: assignment}, topic_configs=configs or {})
        self.admin.create_topics([new], timeout_ms=30000)
        wait_until(lambda: self.partition(topic).get("leader", -1) >= 0, 60, f"{topic}-0 has no leader")
        if wait_isr:
            wait_until(lambda: sorted(self.partition(topic).get("isr", [])) == sorted(assignment), 60,
                       f"{topic}-0 ISR never filled")

    def partition(self, topic: str) -> dict[str, Any]:
        """Leader and ISR of partition 0 as the brokers' metadata says ({} while the topic is unknown)."""
        try:
            described = self.admin.describe_topics([topic])
        except Exception:  # noqa: BLE001 - a broker mid-failover answers with transient errors
            self.reset_admin()
            return {}
        for t in described:
            for p in t.get("partitions", []):
                if p.get("partition_index") == 0:   # a leaderless partition answers LEADER_NOT_AVAILABLE, leader -1
                    return {"leader": p["leader_id"], "leader_epoch": p["leader_epoch"], "isr": list(p["isr_nodes"]),
                            "replicas": list(p["replica_nodes"])}
        return {}

    def elect_unclean(self, topic: str) -> None:
        """The operator's unclean election with Kafka's own leader-election tool (every lab version has the
        Java `LeaderElectionCommand`; it acts on a leaderless partition only)."""
        self.tool("org.apache.kafka.tools.LeaderElectionCommand", "--bootstrap-server", self.bootstrap,
                  "--election-type", "unclean", "--topic", topic, "--partition", "0")

    def tool(self, main: str, *args: str) -> str:
        """Run one of Kafka's command-line tools; its standard output."""
        cmd = ["java", *TOOL_JVM, *self.log4j, "-cp", self.cp, main, *args]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{main} {' '.join(args)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        return done.stdout

    def retrying(self, call: Callable[[], Any], timeout: float = 60) -> Any:
        """An admin call retried with a fresh client: after a crash the client's cached metadata may still send
        it to the dead broker (KRaft brokers name a random live broker as the 'controller')."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return call()
            except Exception:  # noqa: BLE001 - connection errors and retriable Kafka errors alike
                self.reset_admin()
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)

    def log_end(self, topic: str) -> int:
        """The leader's log end offset (ListOffsets latest)."""
        from kafka.admin import OffsetSpec
        from kafka.structs import TopicPartition
        tp = TopicPartition(topic, 0)
        got = self.retrying(lambda: self.admin.list_partition_offsets({tp: OffsetSpec.LATEST}))
        return int(got[tp].offset)

    def producer(self, acks: int | str = 1, **config: Any) -> Any:
        from kafka import KafkaProducer
        settings: dict[str, Any] = {"enable_idempotence": False, "linger_ms": 0, "retries": 0,
                                    "max_in_flight_requests_per_connection": 1, "request_timeout_ms": 15000}
        return KafkaProducer(bootstrap_servers=self.bootstrap, acks=acks, **(settings | config))

    def produce_batch(self, topic: str, values: list[bytes], acks: int | str = "all") -> None:
        """`values` sent together and flushed once: one batch holding them all (linger keeps them together)."""
        producer = self.producer(acks, linger_ms=500, batch_size=1 << 20)
        try:
            futures = [producer.send(topic, value=v, key=v[:8], partition=0) for v in values]
            producer.flush(timeout=30)
            for future in futures:
                future.get(timeout=30)
        finally:
            producer.close(timeout=10)

    def delete_records(self, topic: str, before: int) -> None:
        """DeleteRecords: the partition's log start offset raised to `before` on the leader and the ISR."""
        from kafka.structs import TopicPartition
        self.retrying(lambda: self.admin.delete_records({TopicPartition(topic, 0): before}, timeout_ms=30000))

    def produce(self, topic: str, values: list[bytes], acks: int | str = 1, **config: Any) -> list[int]:
        """One record per batch (each send waited for), keys `k<n>`; the offsets the leader gave them."""
        producer = self.producer(acks, **config)
        try:
            offsets = []
            for value in values:
                meta = producer.send(topic, value=value, key=value[:8], partition=0).get(timeout=30)
                offsets.append(int(meta.offset))
            return offsets
        finally:
            producer.close(timeout=10)

    def consume(self, topic: str, timeout: float = 60) -> list[tuple[int, bytes]]:
        """Every record of partition 0 from the start to the leader's log end, as (offset, value)."""
        from kafka import KafkaConsumer
        from kafka.structs import TopicPartition
        end = self.log_end(topic)
        tp = TopicPartition(topic, 0)
        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False, group_id=None,
                                 auto_offset_reset="earliest", request_timeout_ms=15000)
        try:
            consumer.assign([tp])
            consumer.seek_to_beginning(tp)
            got: list[tuple[int, bytes]] = []
            deadline = time.monotonic() + timeout
            while consumer.position(tp) < end and time.monotonic() < deadline:
                for records in consumer.poll(timeout_ms=1000).values():
                    got.extend((r.offset, r.value) for r in records)
            return got
        finally:
            consumer.close()

    # ----- copies

    def copy(self, dest: Path) -> Path:
        """Every node's data dir as it is on disk now (sparse-aware), taken with the brokers frozen or stopped."""
        dest.mkdir(parents=True)
        for node in self.nodes:
            if node.log_dir.exists():
                subprocess.run(["cp", "-a", "--sparse=always", str(node.log_dir), str(dest / node.name)], check=True)
        return dest

    @contextmanager
    def frozen(self) -> Iterator[None]:
        """Every running node SIGSTOPped for the duration (a consistent copy of a live cluster)."""
        stopped = [n for n in self.nodes if n.running and not n.paused]
        for node in stopped:
            node.pause()
        try:
            yield
        finally:
            for node in stopped:
                node.resume()


def wait_port(node: Node, timeout: float = START_TIMEOUT) -> None:
    def up() -> bool:
        with closing(socket.socket()) as s:
            s.settimeout(0.5)
            return s.connect_ex(("127.0.0.1", node.port)) == 0
    wait_until(up, timeout, f"{node.name} does not listen on {node.address}")


def wait_until(check: Callable[[], bool], timeout: float, what: str, every: float = 0.25) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s: {what}")
        time.sleep(every)


@contextmanager
def running_cluster(spec: ClusterSpec, root: Path) -> Iterator[Cluster]:
    """A started cluster, killed by pid on every way out."""
    cluster = Cluster(spec, root)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()
