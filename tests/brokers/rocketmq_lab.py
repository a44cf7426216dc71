"""Real RocketMQ brokers on 127.0.0.1 for the broker lab: a name server (with the controller embedded on 5.x
controller mode) and one or two brokers of one broker group, started from the Maven jars `jars.py` resolves.

Every JVM runs with its own `ROCKETMQ_HOME`, `-Duser.home` and store under the lab root, small mapped files
(docs/reference/real-brokers.md §3.2) and every address it advertises pinned to 127.0.0.1 (`brokerIP1`, `brokerIP2`,
on 5.x `bindAddress`). RocketMQ 4.9's remoting and HA servers have no bind-address setting: they listen on every
interface (`NettyRemotingServer#start` binds `new InetSocketAddress(listenPort)`, tag rocketmq-all-4.9.7), on ports
this harness picks free. A broker uses three ports, listenPort-2 (fast remoting), listenPort and listenPort+1 (HA,
forced to it by 4.9's `BrokerStartup`), so each broker gets a block of free ports.

Processes are started in their own sessions and recorded; `RmqCluster.close` (run by `running_rocketmq` on every
exit path) kills each one by its pid, never by name. What a broker did is read through its own admin API
(`RmqInspect.java`: the calls behind `mqadmin brokerStatus` and `mqadmin queryCq`), `mqadmin` commands and its log.
"""
from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.brokers.jars import rocketmq_classpath
from tests.brokers.java_build import rmq_program
from tests.brokers.kafka_lab import _TAKEN, Node, port_range, wait_until

JAVA_DIR = Path(__file__).with_name("java")
OPENS = ["--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
         "--add-opens", "java.base/java.util=ALL-UNNAMED", "--add-opens", "java.base/java.lang=ALL-UNNAMED",
         "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED"]
JVM = ["-Xms128m", "-Xmx256m", "-XX:MaxDirectMemorySize=256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
       "-XX:-UsePerfData", "-Djava.awt.headless=true", *OPENS]
TOOL_JVM = ["-Xmx160m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData", *OPENS]
START_TIMEOUT = 180.0
CLUSTER, GROUP = "LabCluster", "broker-a"
_ROLE_CHANGE = re.compile(r"Finish handling broker role change succ=true term=(\d+) role=(\w+)")

LOGBACK = """<configuration>
  <appender name="OUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5p [%t] %c{0} - %m%n</pattern></encoder>
  </appender>
  <logger name="RocketmqRemoting" level="WARN"/>
  <logger name="RocketmqClient" level="WARN"/>
  <logger name="RocketmqStats" level="WARN"/>
  <logger name="RocketmqCommercial" level="WARN"/>
  <root level="INFO"><appender-ref ref="OUT"/></root>
</configuration>
"""

# docs/reference/real-brokers.md §3.2: small files so that a few hundred messages span several commit-log and
# consume-queue files.
STORE = {
    "mappedFileSizeCommitLog": "131072", "maxMessageSize": "65536", "mappedFileSizeConsumeQueue": "2000",
    "maxHashSlotNum": "1000", "maxIndexNum": "4000", "flushDiskType": "ASYNC_FLUSH", "deleteWhen": "04",
    "fileReservedTime": "720", "diskMaxUsedSpaceRatio": "95", "autoCreateTopicEnable": "false",
    "autoCreateSubscriptionGroup": "true", "sendMessageThreadPoolNums": "1", "useReentrantLockWhenPutMessage": "true",
    "duplicationEnable": "false",
}
STORE_5X = {"timerWheelEnable": "false", "enableRocksDBStore": "false"}


def major(version: str) -> int:
    return int(version.split(".")[0])


def free_block(below: int = 2, above: int = 1) -> int:
    """A loopback port P such that P-below .. P+above are all free and not handed out by this process (RocketMQ's
    fast remoting port is listenPort-2, its HA port listenPort+1). Ports held only by TIME_WAIT are free: the
    brokers set SO_REUSEADDR, and so does the check (docs/reference/real-brokers.md §5)."""
    first, end = port_range(10050)
    for _ in range(2000):
        port = int.from_bytes(os.urandom(2), "big") % (end - first - 50) + first + 2
        block = range(port - below, port + above + 1)
        if any(p in _TAKEN for p in block) or not all(_bindable(p) for p in block):
            continue
        _TAKEN.update(block)
        return port
    raise AssertionError("no free block of loopback ports below the ephemeral range")


def _bindable(port: int) -> bool:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@dataclass
class RmqSpec:
    """What to run: a RocketMQ version, classic master/slave or controller mode (5.x), and extra broker keys."""
    version: str
    mode: str = "classic"                      # classic | controller
    brokers: int = 1                           # 1: a lone master; 2: master + slave (classic) or two peers
    broker_config: dict[str, str] = field(default_factory=dict)
    dledger: bool = False                      # 4.5-4.9 DLedger commit log: `brokers` peers of one Raft group


@dataclass
class Inspection:
    """What a running broker reported through its admin API: runtime figures and every consume-queue unit."""
    stats: dict[str, str]
    queues: dict[tuple[str, int], tuple[int, int]]                 # (topic, queue) -> (min, max) queue index
    units: dict[tuple[str, int], list[tuple[int, int, int, int]]]  # -> [(index, physicOffset, size, tagsCode)]
    raw: str

    @property
    def max_offset(self) -> int:
        return int(self.stats["commitLogMaxOffset"])


class RmqCluster:
    """A name server and brokers n0 (and n1) of one broker group under `root`."""

    def __init__(self, spec: RmqSpec, root: Path) -> None:
        self.spec = spec
        self.root = root
        self.cp = rocketmq_classpath(spec.version)
        self.home = root / "rocketmq-home"
        self._write_home()
        self.ns_port = free_block(0, 0)
        self.controller_port = free_block(0, 0) if spec.mode == "controller" else 0
        self.dledger_ports = [free_block(0, 0) for _ in range(spec.brokers)] if spec.dledger else []
        self.namesrv = self._namesrv_node()
        self.brokers = {f"n{i}": self._broker_node(i) for i in range(spec.brokers)}

    # ----- configuration

    def _write_home(self) -> None:
        """`ROCKETMQ_HOME/conf/logback_*.xml` (4.9 exits without them) and one file for 5.x's shaded logback."""
        conf = self.home / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        for name in ("logback_namesrv.xml", "logback_broker.xml", "logback_tools.xml", "logback.xml"):
            (conf / name).write_text(LOGBACK)

    def _java(self, main: str, home: Path, *args: str, jvm: list[str] = JVM) -> list[str]:
        return ["java", *jvm, f"-Duser.home={home}", f"-Drocketmq.home.dir={self.home}",
                *self._logging(), "-cp", self.cp, main, *args]

    def _logging(self) -> list[str]:
        """5.x reads its shaded logback's file from `rmq.logback.configurationFile`; 4.9's clients and tools log
        through plain logback (`logback.configurationFile`) once told to use SLF4J."""
        xml = self.home / "conf" / "logback.xml"
        return [f"-Drmq.logback.configurationFile={xml}", f"-Dlogback.configurationFile={xml}",
                "-Drocketmq.client.logUseSlf4j=true"]

    def _node(self, name: str, port: int, props: dict[str, str], main: str) -> Node:
        home = self.root / name
        home.mkdir(parents=True, exist_ok=True)
        conf = home / f"{name}.conf"
        conf.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return Node(name, 0, port, home, self._java(main, home, "-c", str(conf)))

    def _namesrv_node(self) -> Node:
        props = {"listenPort": str(self.ns_port)}
        if major(self.spec.version) >= 5:
            props["bindAddress"] = "127.0.0.1"
        if self.spec.mode == "controller":
            props.update({
                "enableControllerInNamesrv": "true", "controllerDLegerGroup": "group1",
                "controllerDLegerPeers": f"c0-127.0.0.1:{self.controller_port}", "controllerDLegerSelfId": "c0",
                "controllerStorePath": str(self.root / "namesrv" / "controller"),
                "mappedFileSize": "4194304", "enableElectUncleanMaster": "true", "scanNotActiveBrokerInterval": "1000",
                "notifyBrokerRoleChanged": "true",
            })
        return self._node("namesrv", self.ns_port, props, "org.apache.rocketmq.namesrv.NamesrvStartup")

    def _broker_node(self, i: int) -> Node:
        port = free_block()
        home = self.root / f"n{i}"
        store = home / "store"
        props = {
            "brokerClusterName": CLUSTER, "brokerName": GROUP, "listenPort": str(port), "haListenPort": str(port + 1),
            "brokerIP1": "127.0.0.1", "brokerIP2": "127.0.0.1", "namesrvAddr": f"127.0.0.1:{self.ns_port}",
            "storePathRootDir": str(store), "storePathCommitLog": str(store / "commitlog"), **STORE,
        }
        if major(self.spec.version) >= 5:
            props.update({"bindAddress": "127.0.0.1", **STORE_5X})
        if self.spec.mode == "controller":
            props.update({
                "brokerId": "-1", "brokerRole": "SLAVE", "enableControllerMode": "true",
                "controllerAddr": f"127.0.0.1:{self.controller_port}", "allAckInSyncStateSet": "true",
                "controllerHeartBeatTimeoutMills": "4000", "haMaxTimeSlaveNotCatchup": "5000",
                "syncBrokerMetadataPeriod": "1000", "checkSyncStateSetPeriod": "1000",
                "sendHeartbeatTimeoutMillis": "1000",
            })
        elif self.spec.dledger:
            props.update(self._dledger_props(i))
        else:
            props.update({"brokerId": str(i), "brokerRole": "ASYNC_MASTER" if i == 0 else "SLAVE"})
        props.update(self.spec.broker_config)
        return self._node(f"n{i}", port, props, "org.apache.rocketmq.broker.BrokerStartup")

    def _dledger_props(self, i: int) -> dict[str, str]:
        """A DLedger group of every broker (`DLedgerCommitLog`: group, peers `n0-host:port;...`, self id); the
        store's Raft files go to `<storePathRootDir>/dledger-n<i>` (`DLedgerConfig#getDefaultPath`)."""
        peers = ";".join(f"n{k}-127.0.0.1:{port}" for k, port in enumerate(self.dledger_ports))
        return {"enableDLegerCommitLog": "true", "dLegerGroup": GROUP, "dLegerPeers": peers, "dLegerSelfId": f"n{i}"}

    # ----- processes

    @property
    def nodes(self) -> list[Node]:
        return [self.namesrv, *self.brokers.values()]

    @property
    def namesrv_addr(self) -> str:
        return f"127.0.0.1:{self.ns_port}"

    def store(self, name: str) -> Path:
        return self.brokers[name].home / "store"

    def start_namesrv(self) -> None:
        self.namesrv.start()
        self.namesrv.wait_for_line(r"The Name Server boot success", START_TIMEOUT)

    def start_broker(self, name: str) -> None:
        node = self.brokers[name]
        node.start()
        node.wait_for_line(r"The broker\[.*\] boot success", START_TIMEOUT)

    def dledger_leader(self, timeout: float = START_TIMEOUT) -> tuple[str, int]:
        """(broker, term) of the DLedger group's leader, read from the brokers' logs: the running broker whose last
        finished role change (`DLedgerRoleChangeHandler`) made it LEADER in the newest term any running broker saw."""
        found: list[tuple[str, int]] = []

        def elected() -> bool:
            last = {}
            for name, node in self.brokers.items():
                changes = _ROLE_CHANGE.findall(node.output_since_start()) if node.running and not node.paused else []
                if changes:
                    last[name] = (int(changes[-1][0]), changes[-1][1])
            leaders = [(term, name) for name, (term, role) in last.items() if role == "LEADER"]
            if not leaders or max(leaders)[0] < max(term for term, _ in last.values()):
                return False
            found[:] = [(max(leaders)[1], max(leaders)[0])]
            return True
        wait_until(elected, timeout, "no DLedger leader among the running brokers", every=0.5)
        return found[0]

    def start(self) -> None:
        self.start_namesrv()
        for name in self.brokers:
            self.start_broker(name)

    def close(self) -> None:
        """Every process this cluster started, killed by pid (SIGCONT first for a paused one)."""
        for node in reversed(self.nodes):
            try:
                node.kill()
            except (OSError, subprocess.TimeoutExpired):
                pass

    def stop(self, name: str) -> None:
        """A clean stop (SIGTERM: the shutdown hook flushes, writes the checkpoint and deletes `abort`)."""
        self.brokers[name].stop(timeout=120)

    # ----- tools

    def java_program(self, source: str, *args: str) -> list[str]:
        """The command that runs a lab Java program (tests/brokers/java, compiled by `java_build`) on this
        version's class path."""
        return ["java", *TOOL_JVM, f"-Duser.home={self.root / 'tools'}", *self._logging(),
                *rmq_program(source, self.cp), *args]

    def java_source(self, source: str, *args: str, timeout: float = 300) -> str:
        """A lab Java program's output (`java_program`); a failed run is an AssertionError with its output."""
        cmd = self.java_program(source, *args)
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                              env={**os.environ, "ROCKETMQ_HOME": str(self.home)})
        if done.returncode != 0:
            raise AssertionError(f"{source} {' '.join(args)} failed ({done.returncode}):\n"
                                 f"{done.stdout[-3000:]}{done.stderr[-3000:]}")
        return done.stdout

    def mqadmin(self, command: str, *args: str, timeout: float = 120) -> str:
        """`mqadmin <command> -n <namesrv> ...` (MQAdminStartup, the tool behind the distribution's script)."""
        cmd = self._java("org.apache.rocketmq.tools.command.MQAdminStartup", self.root / "tools", command,
                         "-n", self.namesrv_addr, *args, jvm=TOOL_JVM)
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                              env={**os.environ, "ROCKETMQ_HOME": str(self.home)})
        return done.stdout + done.stderr

    def broker_addr(self, name: str) -> str:
        return self.brokers[name].address

    def create_topic(self, topic: str, queues: int, broker: str = "n0") -> None:
        out = self.mqadmin("updateTopic", "-b", self.broker_addr(broker), "-t", topic, "-r", str(queues),
                           "-w", str(queues))
        assert "success" in out, f"updateTopic {topic} failed:\n{out[-2000:]}"

    def send(self, topic: str, queues: tuple[int, ...], first: int, count: int,
             body: int = 200) -> list[tuple[int, str, int, int]]:
        """`count` messages with sequence numbers first.. round-robin over `queues`:
        [(seq, send status, queue offset, queue)]."""
        out = self.java_source("RmqSend.java", self.namesrv_addr, topic, GROUP, ",".join(map(str, queues)),
                               str(first), str(count), str(body))
        sent = [(int(m[1]), m[2], int(m[3]), int(m[4]))
                for m in re.finditer(r"^SENT (\d+) (\S+) (-?\d+) (\d+)", out, re.M)]
        assert len(sent) == count, f"sent {len(sent)} of {count} messages:\n{out[-2000:]}"
        return sent

    def inspect(self, broker: str, queues: dict[str, int]) -> Inspection:
        """What `broker` serves now, through its admin API (one JVM): runtime stats and every CQ unit of `queues`."""
        spec = ",".join(f"{t}:{n}" for t, n in queues.items())
        out = self.java_source("RmqInspect.java", self.namesrv_addr, self.broker_addr(broker), spec)
        stats = dict(re.findall(r"^STAT (\S+) (\S*)$", out, re.M))
        ranges = {(t, int(q)): (int(lo), int(hi)) for t, q, lo, hi in
                  re.findall(r"^QUEUE (\S+) (\d+) (-?\d+) (-?\d+)$", out, re.M)}
        units: dict[tuple[str, int], list[tuple[int, int, int, int]]] = {key: [] for key in ranges}
        for t, q, i, off, size, tags in re.findall(r"^CQ (\S+) (\d+) (\d+) (-?\d+) (-?\d+) (-?\d+)$", out, re.M):
            units[(t, int(q))].append((int(i), int(off), int(size), int(tags)))
        assert "commitLogMaxOffset" in stats, f"no broker runtime stats from {broker}:\n{out[-2000:]}"
        return Inspection(stats, ranges, units, out)

    def inspect_when_ready(self, broker: str, queues: dict[str, int]) -> Inspection | None:
        """`inspect`, or None while the broker just started cannot report yet: its store stats have no sample, so
        its runtime info fails (`StoreStatsService#getPutTps` on an empty list: NoSuchElementException)."""
        try:
            return self.inspect(broker, queues)
        except AssertionError as err:
            if "NoSuchElementException" in str(err):
                return None
            raise

    def wait_dispatched(self, broker: str, timeout: float = 60) -> Inspection:
        """The broker's stats once its reput service has dispatched everything (`dispatchBehindBytes` 0)."""
        last: list[Inspection] = []

        def done() -> bool:
            seen = self.inspect_when_ready(broker, {})
            last[:] = [] if seen is None else [seen]
            return seen is not None and seen.stats.get("dispatchBehindBytes") == "0"
        wait_until(done, timeout, f"{broker} still has commit-log bytes to dispatch", every=1.0)
        return last[0]

    def copy_store(self, name: str, dest: Path) -> Path:
        """The broker's store as it is on disk now (sparse-aware), taken with the broker stopped or killed."""
        assert not self.brokers[name].running or self.brokers[name].paused, f"{name} still runs: stop it first"
        dest.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cp", "-a", "--sparse=always", str(self.store(name)), str(dest)], check=True)
        return dest

    def use_store(self, name: str, source: Path) -> None:
        """Replace the (stopped) broker's store by a copy of `source`: the broker then starts on that copy."""
        assert not self.brokers[name].running, f"{name} still runs"
        target = self.store(name)
        subprocess.run(["rm", "-rf", str(target)], check=True)
        subprocess.run(["cp", "-a", "--sparse=always", str(source), str(target)], check=True)

    def listening(self) -> list[str]:
        """`ss -ltnp` lines of this cluster's JVMs (to check what they bind)."""
        pids = {str(n.proc.pid) for n in self.nodes if n.proc is not None and n.running}
        out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
        return [line for line in out.splitlines() if any(f"pid={p}," in line for p in pids)]


@contextmanager
def running_rocketmq(spec: RmqSpec, root: Path, start: bool = True) -> Iterator[RmqCluster]:
    """A cluster (started unless `start` is False), killed by pid on every way out."""
    cluster = RmqCluster(spec, root)
    try:
        if start:
            cluster.start()
        yield cluster
    finally:
        cluster.close()


def wait_gone(node: Node, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while node.running and time.monotonic() < deadline:
        time.sleep(0.2)
