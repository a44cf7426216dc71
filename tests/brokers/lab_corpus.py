"""A real corpus: files a real Kafka broker wrote in the lab, cached outside the repository for the format tests.

`python -m tests.brokers.lab_corpus [LABEL ...]` (or the first test that asks, through `ensure`) runs a lab cluster
per label and keeps every node's data dir, stopped cleanly, under `~/.cache/replog/corpus/<label>/`; a label
already there (its `.complete` marker written last) costs nothing. Nothing of it is committed.

- `4.4.0-kraft`: topics compressed by the broker with every codec (`compression.type` none, gzip, snappy, lz4,
  zstd; records with keys and headers from kafka-python), an idempotent producer, Kafka's own transactional
  producer (committed and aborted transactions, transactions v2 on a cluster formatted at 4.4), a compacted topic
  the cleaner rewrote, and a metadata log holding real elections (a leader crashed and another elected).
- `3.9.1-zk-0.10.2`: ZooKeeper mode with `inter.broker.protocol.version` 0.10.2, so message format v1 (magic 1):
  every codec magic 1 has (no zstd), with wrapper messages.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.brokers.jars import cache_root
from tests.brokers.kafka_lab import TOOL_JVM, Cluster, ClusterSpec, running_cluster, wait_until

JAVA = Path(__file__).with_name("java")
COMPLETE = ".complete"
CODECS_V2 = ("none", "gzip", "snappy", "lz4", "zstd")
CODECS_V1 = ("none", "gzip", "snappy", "lz4")
COMPACTED = "compacted"


def corpus_root() -> Path:
    return cache_root() / "corpus"


def _values(topic: str, count: int) -> list[tuple[bytes, bytes, list[tuple[str, bytes]]]]:
    return [(f"k{i % 7}".encode(), f"{topic}-{i:04d}-".encode() * (1 + i % 5), [("h", str(i).encode())])
            for i in range(count)]


def _produce(cluster: Cluster, topic: str, count: int, headers: bool = True, **config: object) -> None:
    """`count` keyed records, several to a batch (linger), headers where the format has them."""
    producer = cluster.producer("all", linger_ms=20, batch_size=4096, **config)
    try:
        futures = [producer.send(topic, key=k, value=v, headers=h if headers else None, partition=0)
                   for k, v, h in _values(topic, count)]
        producer.flush(timeout=60)
        for future in futures:
            future.get(timeout=60)
    finally:
        producer.close(timeout=10)


def _codec_topics(cluster: Cluster, codecs: tuple[str, ...], headers: bool) -> None:
    for codec in codecs:
        topic = f"codec-{codec}"
        cluster.create_topic(topic, [2, 3, 4], {"compression.type": "uncompressed" if codec == "none" else codec})
        _produce(cluster, topic, 300, headers=headers)


def _transactions(cluster: Cluster) -> None:
    cluster.create_topic("txn", [2, 3, 4])
    done = subprocess.run(["java", *TOOL_JVM, *cluster.log4j, "-cp", cluster.cp, str(JAVA / "TxnProducer.java"),
                           cluster.bootstrap, "txn", "corpus-txn", "4", "10", "1"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"the transactional producer failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"


def _compacted(cluster: Cluster) -> None:
    """Keys overwritten many times across small segments; waits until the cleaner has rewritten b2's replica."""
    cluster.create_topic(COMPACTED, [2, 3, 4], {"cleanup.policy": "compact", "segment.ms": "1000",
                                                 "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "0"})
    for _ in range(3):
        _produce(cluster, COMPACTED, 200)
        time.sleep(1.5)   # a record after segment.ms rolls the segment, so the older ones become cleanable
    checkpoint = cluster.brokers[2].log_dir / "cleaner-offset-checkpoint"
    wait_until(lambda: checkpoint.exists() and f"{COMPACTED} 0 " in checkpoint.read_text(), 120,
               "the log cleaner never cleaned the compacted topic on b2")


def _election(cluster: Cluster) -> None:
    """A real election in the metadata log: the leader of `elected` crashes and another replica takes over."""
    cluster.create_topic("elected", [2, 3, 4])
    _produce(cluster, "elected", 50)
    cluster.kill(2)
    wait_until(lambda: cluster.partition("elected").get("leader") in (3, 4), 90, "no new leader after the crash")
    _produce(cluster, "elected", 50)
    cluster.restart(2)
    wait_until(lambda: sorted(cluster.partition("elected").get("isr", [])) == [2, 3, 4], 90, "b2 never rejoined")


def _kraft_44(cluster: Cluster) -> None:
    _codec_topics(cluster, CODECS_V2, headers=True)
    cluster.create_topic("idempotent", [2, 3, 4])
    _produce(cluster, "idempotent", 300, enable_idempotence=True, max_in_flight_requests_per_connection=5,
             retries=5)
    _transactions(cluster)
    _compacted(cluster)
    _election(cluster)


def _zk_v1(cluster: Cluster) -> None:
    _codec_topics(cluster, CODECS_V1, headers=False)


LABELS: dict[str, tuple[ClusterSpec, Callable[[Cluster], None]]] = {
    "4.4.0-kraft": (ClusterSpec("4.4.0", "kraft"), _kraft_44),
    "3.9.1-zk-0.10.2": (ClusterSpec("3.9.1", "zk", ibp="0.10.2"), _zk_v1),
}


def ensure(label: str) -> Path:
    """The label's corpus (every node's data dir), written by a real cluster the first time it is asked for."""
    dest = corpus_root() / label
    if (dest / COMPLETE).is_file():
        return dest
    spec, script = LABELS[label]
    work = corpus_root() / f".{label}.building"
    shutil.rmtree(work, ignore_errors=True)
    (work / "cluster").mkdir(parents=True)
    try:
        with running_cluster(spec, work / "cluster") as cluster:
            script(cluster)
            cluster.stop_all()
            cluster.copy(work / "data")
        shutil.rmtree(dest, ignore_errors=True)
        (work / "data").rename(dest)
        (dest / COMPLETE).write_text(f"{spec}\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return dest


def partition_dirs(root: Path) -> list[Path]:
    """Every partition dir of a corpus (`<node>/<topic>-<n>`), internal topics and the metadata log included."""
    return sorted(p for p in root.glob("*/*-[0-9]*") if p.is_dir())


if __name__ == "__main__":
    for name in sys.argv[1:] or list(LABELS):
        print(ensure(name))
