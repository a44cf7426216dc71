"""The fleet scan's `impact` table: what each divergent replica set's truncation means for consumers.

For every replica set the `replicas` table calls divergent, one executor task replays
its partition dirs and reads the impact with `recovery.kafka.impact.read_impact`, the
very function `replog impact` calls, looking for `__consumer_offsets` and
`__transaction_state` in every local Kafka log dir of the scan. One row per set: groups
affected, records consumed then lost, producers with lost writes, hanging transactions
(and which). A set that cannot be replayed (a replica on a remote filesystem, an
unreadable dir) is a row with its `error`.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict, cast

import pyarrow as pa

from replog.formats.errors import ReplogError
from replog.spark import schemas
from replog.spark.schemas import ImpactRow, ReplicaSetRow, rows_of


class ImpactTask(TypedDict):
    """One divergent replica set to replay on an executor (shipped as JSON)."""
    cluster: str
    topic: str
    partition: int
    replicas: list[list[str]]   # [replica name, partition dir], by name
    offsets: list[str]          # the cluster's local Kafka log dirs, searched for the internal topics
    remote: list[str]           # replicas on remote filesystems: the set cannot be replayed


def impact_tasks(replicas: pa.Table, partitions: pa.Table, offsets: dict[str, list[str]],
                 remote_log_dirs: Sequence[str] = ()) -> list[ImpactTask]:
    """One task per divergent replica set: its (replica name, partition dir) pairs and the log dirs of
    its cluster (`offsets`: cluster -> local Kafka log dirs) to search for the internal topics. A replica
    is named by its broker, or by broker and log dir where one broker holds two of the set."""
    paths: dict[tuple[str, str, int, str], str] = {}
    for p in partitions.select(["cluster", "log_dir", "topic", "partition", "path", "state"]).to_pylist():
        if p["state"] == "live" and p["topic"] is not None:
            paths[(p["cluster"], p["topic"], p["partition"], p["log_dir"])] = p["path"]
    tasks: list[ImpactTask] = []
    for r in rows_of(replicas, ReplicaSetRow):
        if r["first_divergent_offset"] is None:
            continue
        brokers, dirs = r["replicas"], r["log_dirs"]
        names = [f"{b}:{d}" if brokers.count(b) > 1 else b for b, d in zip(brokers, dirs, strict=True)]
        where = [(r["cluster"], r["topic"], r["partition"], d) for d in dirs]
        members = sorted([n, paths[w]] for n, w in zip(names, where, strict=True) if w in paths)
        remote = sorted(n for n, d in zip(names, dirs, strict=True) if d in set(remote_log_dirs))
        tasks.append({"cluster": r["cluster"], "topic": r["topic"], "partition": r["partition"], "replicas": members,
                      "offsets": offsets.get(r["cluster"], []), "remote": remote})
    return tasks


def impact_row(task: ImpactTask) -> ImpactRow:
    """Executor side: replay one set and read its impact; failures become the row's `error`."""
    from replog.recovery.kafka.impact import read_impact
    from replog.recovery.kafka.impact_groups import UNAFFECTED
    from replog.recovery.kafka.replay import run_replay
    from replog.recovery.kafka.replica import load_replicas

    row: ImpactRow = {"cluster": task["cluster"], "topic": task["topic"], "partition": task["partition"],
                      "replicas": [b for b, _ in task["replicas"]], "leader": None, "groups": 0,
                      "groups_affected": 0, "records_consumed_lost": 0, "producers_with_lost_writes": 0,
                      "hanging_transactions": 0, "open_transactions": 0, "affected_groups": [],
                      "hanging": [], "error": None}
    if task["remote"]:
        row["error"] = f"replicas on remote filesystems ({', '.join(task['remote'])}): impact needs local dirs"
        return row
    try:
        result = run_replay(load_replicas([(b, p) for b, p in task["replicas"]]))
        impact = read_impact(result, task["offsets"])
    except (ReplogError, OSError) as e:
        row["error"] = str(e)
        return row
    counts = impact.summary
    row["groups"], row["groups_affected"] = counts["groups"], counts["groups_affected"]
    row["records_consumed_lost"] = counts["records_consumed_lost"]
    row["producers_with_lost_writes"] = counts["producers_with_lost_writes"]
    row["hanging_transactions"], row["open_transactions"] = counts["hanging_transactions"], counts["open_transactions"]
    row["leader"] = impact.leader.name
    row["affected_groups"] = [{"group": g.group, "classification": g.classification,
                               "records_consumed_lost": g.lost.records}
                              for g in impact.groups if g.classification != UNAFFECTED]
    row["hanging"] = [{"producer_id": t.producer_id, "first_offset": t.first_offset, "cause": t.cause}
                      for t in impact.transactions if t.state == "hanging"]
    return row


def _rows(lines: Any) -> Any:
    """mapPartitions body: task JSON lines -> rows as tuples in the table's column order."""
    names = schemas.IMPACT.names
    for line in lines:
        row = impact_row(cast(ImpactTask, json.loads(line)))
        yield tuple(row.get(n) for n in names)   # every key is there: the schema was derived from the row


def write_impact(spark: Any, out: Path, local: Sequence[Any], remote_log_dirs: Sequence[str]) -> int:
    """Run the tasks on the executors and write OUT/impact; the number of rows. `local`: the scan's
    local Kafka log dirs (`inputs.LogDir`), whose internal topics each set of their cluster reads."""
    from replog.spark.report import load_table

    offsets: dict[str, list[str]] = {}
    for d in local:
        offsets.setdefault(d.cluster, []).append(d.path)
    tasks = impact_tasks(load_table(out, "replicas"), load_table(out, "partitions"), offsets, remote_log_dirs)
    sc = spark.sparkContext
    rdd = sc.parallelize([json.dumps(t) for t in tasks], max(1, min(len(tasks), sc.defaultParallelism * 2)))
    frame = spark.createDataFrame(rdd.mapPartitions(_rows), schemas.spark_schema(schemas.IMPACT))
    frame.write.mode("overwrite").parquet(str(out / "impact"))
    return len(tasks)
