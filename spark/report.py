"""`fleet report`: a fleet scan's health from its Parquet tables, with pyarrow alone (no Spark, instant).

Totals, findings per broker of each cluster, the worst partitions, divergent replica sets with
their divergence points and what their truncation does to consumer groups,
producers and transactions, lagging replica sets, damaged segments, where a
broker's checkpoints disagree with its logs, the RocketMQ stores, and the log
dirs flagged at discovery (no cluster id: grouped by their inventory line or folder).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TypedDict, cast

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from replog.formats.errors import UnreadableInput
from replog.spark import schemas
from replog.spark.schemas import ImpactRow, LogDirRow, ReplicaSetRow, StoreRow, rows_of

MARKER = "_replog_fleet_scan.json"
CHECKPOINT_CODES = frozenset({
    "KAFKA_HW_ABOVE_LEO", "KAFKA_LSO_ABOVE_HW", "KAFKA_RECOVERY_POINT_ABOVE_LEO",
    "KAFKA_PARTITION_NOT_IN_CHECKPOINT", "KAFKA_CHECKPOINT_WITHOUT_PARTITION", "KAFKA_CHECKPOINT_INVALID",
    "KAFKA_EPOCH_BEYOND_LOG_END", "KAFKA_EPOCH_CHECKPOINT_MISMATCH", "KAFKA_CHECKPOINT_TMP_LEFTOVER",
})


class BrokerSummary(TypedDict):
    cluster: str
    broker: str
    log_dirs: int
    partitions: int
    bytes: int
    errors: int
    warnings: int
    infos: int


class TopicSummary(TypedDict):
    topic: str
    partitions: int
    bytes: int
    max_leo_spread: int
    max_hw_spread: int
    divergent: int
    records_at_risk: int


class WorstPartition(TypedDict):
    """A `partitions` row's columns the report lists."""
    cluster: str
    broker: str
    topic: str | None
    partition: int | None
    log_end_offset: int
    high_watermark: int | None
    errors: int
    warnings: int
    flags: list[str]


class DamagedSegment(TypedDict):
    """A `segments` row's columns the report lists."""
    cluster: str
    broker: str
    topic: str | None
    partition: int | None
    path: str
    size: int
    valid_bytes: int
    errors: int
    warnings: int


class CheckpointDisagreement(TypedDict):
    """A `findings` row's columns the report lists."""
    cluster: str
    broker: str
    topic: str | None
    partition: int | None
    code: str
    severity: str
    path: str
    offset: int | None
    message: str


class StoreGroup(TypedDict):
    """A RocketMQ broker's stores (`store_groups`)."""
    cluster: str
    broker_name: str
    stores: list[str]
    roles: list[str | None]
    commitlog_max_offsets: list[int]
    max_offset_spread: int
    errors: int


class BrokerTopic(TypedDict):
    """A cell of the heat map: one broker's partitions of one topic."""
    broker: str
    topic: str | None
    partitions: int
    errors: int
    warnings: int
    divergent: int
    lagging: int


class FleetReportDoc(TypedDict):
    """`fleet report --format json` (`FleetReport.to_dict`): the document the terminal and the page draw."""
    out_dir: str
    totals: dict[str, int]
    brokers: list[BrokerSummary]
    topics: list[TopicSummary]
    worst_partitions: list[WorstPartition]
    divergent: list[ReplicaSetRow]
    lagging: list[ReplicaSetRow]
    damaged_segments: list[DamagedSegment]
    checkpoint_disagreements: list[CheckpointDisagreement]
    stores: list[StoreRow]
    impact: list[ImpactRow]
    finding_codes: dict[str, int]
    mode: str
    store_groups: list[StoreGroup]
    flagged_log_dirs: list[LogDirRow]
    broker_topics: list[BrokerTopic]


Section = Literal["divergent", "impact", "lagging", "worst_partitions", "damaged_segments", "stores", "store_groups",
                  "checkpoint_disagreements", "flagged_log_dirs"]
"""A list of the report that the terminal and the page show as a table (`fleet_view.SECTIONS`)."""


@dataclass
class FleetReport:
    out_dir: str
    totals: dict[str, int] = field(default_factory=dict)
    brokers: list[BrokerSummary] = field(default_factory=list)
    topics: list[TopicSummary] = field(default_factory=list)
    worst_partitions: list[WorstPartition] = field(default_factory=list)
    divergent: list[ReplicaSetRow] = field(default_factory=list)
    lagging: list[ReplicaSetRow] = field(default_factory=list)
    damaged_segments: list[DamagedSegment] = field(default_factory=list)
    checkpoint_disagreements: list[CheckpointDisagreement] = field(default_factory=list)
    stores: list[StoreRow] = field(default_factory=list)            # RocketMQ stores, worst first
    impact: list[ImpactRow] = field(default_factory=list)           # divergent sets' impact, worst first
    finding_codes: dict[str, int] = field(default_factory=dict)
    mode: str = "full"                                              # full | tail (`fleet scan --tail`)
    store_groups: list[StoreGroup] = field(default_factory=list)    # RocketMQ master and slaves of a broker
    flagged_log_dirs: list[LogDirRow] = field(default_factory=list)  # e.g. no cluster id: grouped by folder
    broker_topics: list[BrokerTopic] = field(default_factory=list)  # one per (broker, topic): the heat map

    @property
    def has_errors(self) -> bool:
        """Exit 1 or not: `fails` on the scan's totals, the rule `fleet scan` applies to the same tables."""
        return fails(self.totals.get("errors", 0), self.totals.get("divergent_replica_sets", 0))

    def to_dict(self) -> FleetReportDoc:
        """Its members are this dataclass's fields (`asdict`), declared again as `FleetReportDoc` for the readers
        of the JSON (tests/spark/test_report.py checks the two against each other)."""
        return cast(FleetReportDoc, asdict(self))

    def head(self, limit: int) -> FleetReport:
        """The same report with each list of rows cut to `limit` (the page lists more than a terminal), and
        of the heat map's cells only those with something to show, worst first."""
        cut = {name: getattr(self, name)[:limit * factor] for name, factor in LISTED.items()}
        cells = sorted((c for c in self.broker_topics if c["errors"] or c["warnings"] or c["divergent"]
                        or c["lagging"]), key=lambda c: (-c["errors"], -c["divergent"], -c["warnings"], -c["lagging"],
                                                         c["broker"], c["topic"]))
        return replace(self, broker_topics=cells[:limit * 5], **cut)


# the lists `limit` bounds, worst first, and how many times `limit` each may hold
LISTED = {"worst_partitions": 1, "divergent": 1, "lagging": 1, "damaged_segments": 1, "checkpoint_disagreements": 5}


def fails(errors: int, divergent_replica_sets: int) -> bool:
    """Whether a fleet scan's results call for exit 1, for `fleet scan` and `fleet report` alike.

    As the contract has it for every command: error-severity findings, or a replica that loses
    records; a divergent replica set is one whose replicas would truncate away records on replay.
    """
    return errors > 0 or divergent_replica_sets > 0


def replicas_diverging(replicas: pa.Table) -> int:
    """How many replica sets of a scan's `replicas` table diverge (have a first divergent offset)."""
    if not replicas.num_rows:
        return 0
    return int(pc.sum(pc.is_valid(replicas.column("first_divergent_offset"))).as_py() or 0)


def load_table(out_dir: str | Path, name: str) -> pa.Table:
    """One table of a scan, with its declared schema (empty when the scan wrote no rows). A column an
    older scan did not write (`cluster`, `log_dir` lists, ...) reads as nulls."""
    path = Path(out_dir) / name
    schema = schemas.TABLES[name]
    if not path.is_dir():
        return schema.empty_table()
    files = [str(p) for p in sorted(path.glob("*.parquet"))]
    if not files:
        return schema.empty_table()
    table = ds.dataset(files, format="parquet").to_table()
    for f in schema:
        if f.name not in table.column_names:
            table = table.append_column(f.name, pa.nulls(table.num_rows, f.type))
    return table.select(schema.names).cast(schema)


def fleet_report(out_dir: str | Path, limit: int = 20) -> FleetReport:
    """Read OUT/<table>/ and summarise; `limit` bounds each list."""
    out = Path(out_dir)
    if not (out / MARKER).is_file() or not (out / "partitions").is_dir():
        raise UnreadableInput(f"{out}: not the output of `replog fleet scan` ({MARKER} or partitions/ missing)")
    parts, segs = load_table(out, "partitions"), load_table(out, "segments")
    finds, reps = load_table(out, "findings"), load_table(out, "replicas")
    stores, dirs = load_table(out, "stores"), load_table(out, "log_dirs")
    rep = FleetReport(str(out), mode=_mode(out))
    sev = finds.column("severity")
    rep.totals = {
        "clusters": len(set(parts.column("cluster").to_pylist()) | set(stores.column("cluster").to_pylist())),
        "brokers": len(set(zip(parts.column("cluster").to_pylist(), parts.column("broker").to_pylist(), strict=True))
                       | set(zip(stores.column("cluster").to_pylist(), stores.column("broker").to_pylist(),
                                 strict=True))),
        "log_dirs": dirs.num_rows or (len(pc.unique(parts.column("log_dir"))) if parts.num_rows else 0),
        "partitions": parts.num_rows, "segments": segs.num_rows,
        "bytes": int(pc.sum(parts.column("bytes")).as_py() or 0),
        "replica_sets": reps.num_rows,
        "divergent_replica_sets": replicas_diverging(reps),
        "damaged_segments": int(pc.sum(segs.column("damaged")).as_py() or 0),
        "stores": stores.num_rows,
        "errors": _count(sev, "error"), "warnings": _count(sev, "warning"), "infos": _count(sev, "info")}
    rep.stores = sorted(rows_of(stores, StoreRow), key=lambda r: (-r["errors"], -r["warnings"], r["cluster"] or "",
                                                           r["broker_name"] or "", r["broker"], r["path"]))
    rep.flagged_log_dirs = [r for r in rows_of(dirs, LogDirRow) if r["flags"]][:limit * 5]
    rep.store_groups = store_groups(rep.stores)[:limit]
    impact = rows_of(load_table(out, "impact"), ImpactRow)
    rep.totals.update(groups_affected=sum(r["groups_affected"] for r in impact),
                      records_consumed_lost=sum(r["records_consumed_lost"] for r in impact),
                      hanging_transactions=sum(r["hanging_transactions"] for r in impact))
    rep.impact = sorted(impact, key=lambda r: (-r["groups_affected"], -r["records_consumed_lost"],
                                               -r["hanging_transactions"], r["cluster"] or "", r["topic"],
                                               r["partition"]))[:limit]
    rep.brokers = _brokers(parts, finds)
    rep.topics = _topics(parts, reps)
    rep.finding_codes = dict(sorted(_group_count(finds, "code").items(), key=lambda kv: (-kv[1], kv[0])))
    rep.worst_partitions = _worst(parts, limit)
    rows = rows_of(reps, ReplicaSetRow)
    rep.divergent = sorted((r for r in rows if r["first_divergent_offset"] is not None),
                           key=lambda r: (-r["records_at_risk"], *_where(r)))[:limit]
    lagging = [r for r in rows if r["first_divergent_offset"] is None and r["leo_spread"]]
    rep.totals["lagging_replica_sets"] = len(lagging)
    rep.lagging = sorted(lagging, key=lambda r: (-r["leo_spread"], *_where(r)))[:limit]
    rep.broker_topics = _broker_topics(parts, rows)
    damaged = segs.filter(segs.column("damaged"))
    rep.damaged_segments = sorted(rows_of(damaged.select(list(DamagedSegment.__annotations__)), DamagedSegment),
                                  key=lambda r: (-r["errors"], r["broker"], r["path"]))[:limit]
    cp = finds.filter(pc.is_in(finds.column("code"), pa.array(sorted(CHECKPOINT_CODES))))
    rep.checkpoint_disagreements = rows_of(cp.select(list(CheckpointDisagreement.__annotations__)),
                                           CheckpointDisagreement)[:limit * 5]
    return rep


def store_groups(stores: list[StoreRow]) -> list[StoreGroup]:
    """The stores of each RocketMQ broker (one broker name in one cluster): the master and its slaves,
    how far their commit logs end apart. Stores whose config names no broker stand alone."""
    groups: dict[tuple[str, str], list[StoreRow]] = {}
    for r in stores:
        groups.setdefault((r["cluster"], r["broker_name"] or r["path"]), []).append(r)
    out: list[StoreGroup] = []
    for (cluster, name), members in groups.items():
        members = sorted(members, key=lambda r: (r["role"] != "master", r["broker_id"] or 0, r["path"]))
        ends = [r["commitlog_max_offset"] for r in members]
        out.append({"cluster": cluster, "broker_name": name, "stores": [r["broker"] for r in members],
                    "roles": [r["role"] for r in members], "commitlog_max_offsets": ends,
                    "max_offset_spread": max(ends) - min(ends) if ends else 0,
                    "errors": sum(r["errors"] for r in members)})
    return sorted(out, key=lambda g: (-g["max_offset_spread"], -g["errors"], g["cluster"] or "", g["broker_name"]))


def _mode(out: Path) -> str:
    """The scan's mode as its marker records it (`full` for a scan that predates tail scans)."""
    import json

    try:
        return str(json.loads((out / MARKER).read_text()).get("mode") or "full")
    except (OSError, ValueError, AttributeError):
        return "full"


def _count(col: pa.ChunkedArray, value: str) -> int:
    return int(pc.sum(pc.equal(col, value)).as_py() or 0) if len(col) else 0


def _group_count(t: pa.Table, key: str) -> dict[Any, int]:
    if not t.num_rows:
        return {}
    g = t.group_by(key).aggregate([([], "count_all")])
    return dict(zip(g.column(key).to_pylist(), g.column("count_all").to_pylist(), strict=True))


def _brokers(parts: pa.Table, finds: pa.Table) -> list[BrokerSummary]:
    """Per broker of each cluster (one broker id in two clusters is two brokers)."""
    out: dict[tuple[str, str], BrokerSummary] = {}

    def row(cluster: str | None, broker: str) -> BrokerSummary:
        cluster = cluster or ""   # an older scan's rows have none
        return out.setdefault((cluster, broker), {"cluster": cluster, "broker": broker, "log_dirs": 0,
                                                  "partitions": 0, "bytes": 0, "errors": 0, "warnings": 0,
                                                  "infos": 0})

    if parts.num_rows:
        g = parts.group_by(["cluster", "broker"]).aggregate([("partition", "count"), ("bytes", "sum"),
                                                             ("log_dir", "count_distinct")])
        for r in g.to_pylist():
            b = row(r["cluster"], r["broker"])
            b["log_dirs"], b["partitions"] = r["log_dir_count_distinct"], r["partition_count"]
            b["bytes"] = r["bytes_sum"]
    if finds.num_rows:
        g = finds.group_by(["cluster", "broker", "severity"]).aggregate([([], "count_all")])
        for r in g.to_pylist():
            b, n = row(r["cluster"], r["broker"]), r["count_all"]
            if r["severity"] == "error":
                b["errors"] = n
            elif r["severity"] == "warning":
                b["warnings"] = n
            elif r["severity"] == "info":
                b["infos"] = n
    return [out[k] for k in sorted(out)]


def _topics(parts: pa.Table, reps: pa.Table) -> list[TopicSummary]:
    out: dict[str, TopicSummary] = {}
    if parts.num_rows:
        g = parts.group_by("topic").aggregate([("partition", "count_distinct"), ("bytes", "sum")])
        for r in g.to_pylist():
            out[r["topic"]] = {"topic": r["topic"], "partitions": r["partition_count_distinct"],
                               "bytes": r["bytes_sum"], "max_leo_spread": 0, "max_hw_spread": 0,
                               "divergent": 0, "records_at_risk": 0}
    for r in rows_of(reps, ReplicaSetRow):
        t = out.setdefault(r["topic"], {"topic": r["topic"], "partitions": 0, "bytes": 0, "max_leo_spread": 0,
                                        "max_hw_spread": 0, "divergent": 0, "records_at_risk": 0})
        t["max_leo_spread"] = max(t["max_leo_spread"], r["leo_spread"] or 0)
        t["max_hw_spread"] = max(t["max_hw_spread"], r["hw_spread"] or 0)
        t["divergent"] += r["first_divergent_offset"] is not None
        t["records_at_risk"] += r["records_at_risk"] or 0
    return [out[k] for k in sorted(out)]


def _where(row: ReplicaSetRow) -> tuple[str, str, int]:
    """A replica set's place in a sorted list: cluster (none in an older scan's rows), topic, partition."""
    return row["cluster"] or "", row["topic"], row["partition"]


def _broker_topics(parts: pa.Table, replica_sets: list[ReplicaSetRow]) -> list[BrokerTopic]:
    """Per broker and topic: partitions, their findings, and in how many replica sets of the topic the
    broker's replica diverges (holds other batches, or nothing, where the set parts) or lags (ends below
    the longest replica). A broker is named `cluster/broker` when the scan holds several clusters."""
    out: dict[tuple[str, str | None], BrokerTopic] = {}
    several = parts.num_rows > 0 and len(pc.unique(parts.column("cluster"))) > 1

    def cell(cluster: str | None, broker: str, topic: str | None) -> BrokerTopic:
        name = f"{cluster}/{broker}" if several else broker
        return out.setdefault((name, topic), {"broker": name, "topic": topic, "partitions": 0, "errors": 0,
                                              "warnings": 0, "divergent": 0, "lagging": 0})
    if parts.num_rows:
        g = parts.group_by(["cluster", "broker", "topic"]).aggregate([("partition", "count"), ("errors", "sum"),
                                                                      ("warnings", "sum")])
        for r in g.to_pylist():
            c = cell(r["cluster"], r["broker"], r["topic"])
            c["partitions"] = r["partition_count"]
            c["errors"], c["warnings"] = r["errors_sum"] or 0, r["warnings_sum"] or 0
    for rs in replica_sets:
        top = max(rs["log_end_offsets"] or [0])
        parted = set(rs["diverged"] or []) | set(rs["behind"] or [])
        for broker, leo in zip(rs["replicas"] or [], rs["log_end_offsets"] or [], strict=False):
            c = cell(rs["cluster"], broker, rs["topic"])
            c["divergent"] += broker in parted
            c["lagging"] += broker not in parted and leo < top
    return [out[k] for k in sorted(out)]


def _worst(parts: pa.Table, limit: int) -> list[WorstPartition]:
    bad = parts.filter(pc.greater(pc.add(parts.column("errors"), parts.column("warnings")), 0))
    rows = rows_of(bad.select(list(WorstPartition.__annotations__)), WorstPartition)
    return sorted(rows, key=lambda r: (-r["errors"], -r["warnings"], r["topic"], r["partition"],
                                       r["broker"]))[:limit]
