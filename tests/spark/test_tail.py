"""A tail scan without Spark: each replica from its checkpoints and segment tails, each set compared by the
brokers' truncation protocol; the answers those of `ls` and of the full scan where a tail can know them."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from replog.formats.fileio import mapped
from replog.formats.kafka.partition_files import list_partition_files
from replog.recovery.kafka.logdir import summarize_log_dir
from replog.spark import schemas
from replog.spark.inputs import discover
from replog.spark.tail import compare_batches, tail_start
from replog.spark.tasks import run_unit
from tests.spark.fleet_builder import build_fleet

# A grouped replica set as `tail_replicas_frame` hands it to its Python task.
_TAIL = pa.list_(pa.struct([f for f in schemas.TAIL_BATCHES if f.name in ("base_offset", "last_offset", "crc",
                                                                         "partition_leader_epoch")]))
GROUPED = pa.schema([("replicas", pa.list_(pa.struct(
    [*(schemas.PARTITIONS.field(n) for n in ("cluster", "broker", "log_dir", "path", "topic", "partition")),
     pa.field("set_topic_id", pa.string()),
     *(schemas.PARTITIONS.field(n) for n in ("epoch_history", "log_start_offset", "log_end_offset",
                                             "high_watermark", "latest_epoch")),
     pa.field("tail", _TAIL)])))])


def _tail_rows(log_dir: Path) -> tuple[dict[tuple[str, int], dict[str, Any]], dict[tuple[str, int], list[dict]]]:
    [d], _ = discover([log_dir])
    parts, tails = {}, {}
    for unit in d.tail_units():
        for table, batch in run_unit(unit):
            for row in batch.to_pylist():
                if table == "partitions":
                    parts[(row["topic"], row["partition"])] = {**row, "set_topic_id": row["topic_id"] or ""}
                elif table == "tail_batches":
                    tails.setdefault((row["topic"], row["partition"]), []).append(row)
    return parts, tails


def test_log_ends_from_the_tails_are_those_of_ls(tmp_path: Path) -> None:
    from replog.samples.kafka_fleet import generate_kafka_fleet

    generate_kafka_fleet(tmp_path / "kafka", seed=7)
    log_dir = tmp_path / "kafka" / "broker-1"
    parts, _ = _tail_rows(log_dir)
    for p in summarize_log_dir(log_dir).partitions:
        mine = parts[(p.topic, p.partition)]
        assert (mine["log_end_offset"], mine["high_watermark"], mine["latest_epoch"]) == \
            (p.log_end_offset, p.high_watermark, p.latest_epoch), p.path
    files = list_partition_files(log_dir / "orders-0")
    starts = []
    for base, path in files.logs.items():
        with mapped(path) as buf:
            starts.append((tail_start(buf, path, base, files.indexes.get((base, "index"))), len(buf)))
    assert all(0 < start and size - start < 8192 for start, size in starts[:-1])   # a tail, not the segment


@pytest.fixture(scope="module")
def fx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tail")
    build_fleet(root)
    return root


def test_epoch_divergence_and_lag_from_the_tails(fx: Path) -> None:
    rows = {b: _tail_rows(fx / f"broker-{b}") for b in ("1", "2", "3")}

    def compare(tp: tuple[str, int]) -> dict[str, Any]:
        """The set's row as the Spark task makes it: its replicas grouped as Arrow, compared (`compare_batches`)."""
        reps = [{**parts[tp], "tail": tails.get(tp, [])} for parts, tails in rows.values()]
        [rb] = compare_batches(iter([pa.RecordBatch.from_pylist([{"replicas": reps}], schema=GROUPED)]))
        [row] = rb.to_pylist()
        return row

    diverged = compare(("fx.orders", 1))
    assert (diverged["first_divergent_offset"], diverged["diverged"]) == (30, ["broker-3"])
    assert diverged["kept"] == ["broker-1", "broker-2"] and diverged["records_at_risk"] == 6
    lagging = compare(("fx.events", 2))
    assert lagging["first_divergent_offset"] is None and lagging["leo_spread"] == 39
    clean = compare(("fx.audit", 0))
    assert clean["first_divergent_offset"] is None and clean["kept"] == ["broker-1", "broker-2", "broker-3"]
