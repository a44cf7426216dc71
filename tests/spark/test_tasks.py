"""spark.tasks and spark.schemas without Spark: per-unit tables equal `ls` and `doctor` on the same dirs."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from replog.recovery.doctor import diagnose
from replog.recovery.kafka.logdir import summarize_log_dir
from replog.spark import schemas
from replog.spark.replica_sets import assemble_replica_set
from replog.spark.tasks import run_unit
from replog.spark.units import Unit, log_dir_units
from replog.toolkit.views import ls_rows
from tests.spark.fleet_builder import BROKERS, build_fleet

LS_FIELDS = ("topic", "partition", "state", "segments", "bytes", "log_start_offset", "log_end_offset",
             "high_watermark", "recovery_point", "latest_epoch", "first_timestamp", "max_timestamp", "flags")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fleet")
    build_fleet(root)
    return root


def _tables(broker: str, log_dir: Path) -> dict[str, pa.Table]:
    out: dict[str, list[pa.RecordBatch]] = {name: [] for name in schemas.TABLES}
    for unit in log_dir_units(broker, str(log_dir)):
        unit = Unit.from_dict(unit.to_dict())          # the JSON round trip executors see
        for table, batch in run_unit(unit):
            assert batch.schema.equals(schemas.TABLES[table]), table
            out[table].append(batch)
    return {k: pa.Table.from_batches(v, schemas.TABLES[k]) for k, v in out.items()}


@pytest.mark.parametrize("broker", BROKERS)
def test_partitions_equal_ls(fleet: Path, broker: str) -> None:
    log_dir = fleet / f"broker-{broker}"
    mine = sorted(_tables(broker, log_dir)["partitions"].to_pylist(), key=lambda r: (r["topic"], r["partition"]))
    theirs = sorted(ls_rows(summarize_log_dir(log_dir).partitions), key=lambda r: (r["topic"], r["partition"]))
    assert [{k: r[k] for k in LS_FIELDS} for r in mine] == [{k: r[k] for k in LS_FIELDS} for r in theirs]
    assert {r["broker"] for r in mine} == {broker}


@pytest.mark.parametrize("broker", BROKERS)
def test_findings_equal_doctor(fleet: Path, broker: str) -> None:
    log_dir = fleet / f"broker-{broker}"
    mine = Counter((r["code"], r["path"], r["position"], r["offset"])
                   for r in _tables(broker, log_dir)["findings"].to_pylist())
    theirs = Counter((f.code, f.path, f.position, f.offset) for f in diagnose([log_dir]).findings)
    assert mine == theirs


def test_planted_damage_in_tables(fleet: Path) -> None:
    t = _tables("2", fleet / "broker-2")
    codes = {(r["topic"], r["partition"], r["code"]) for r in t["findings"].to_pylist()}
    assert ("fx.orders", 0, "KAFKA_BATCH_CRC_MISMATCH") in codes
    damaged = [r for r in t["segments"].to_pylist() if r["damaged"]]
    assert [(r["topic"], r["partition"]) for r in damaged] == [("fx.orders", 0)]
    row = next(r for r in t["partitions"].to_pylist() if (r["topic"], r["partition"]) == ("fx.orders", 0))
    assert row["errors"] >= 1 and row["epoch_history"] == [{"epoch": 0, "start_offset": 0},
                                                          {"epoch": 1, "start_offset": 30}]


def test_batches_table_marks_what_recovery_keeps(fleet: Path) -> None:
    rows = [r for r in _tables("1", fleet / "broker-1")["batches"].to_pylist()
            if (r["topic"], r["partition"]) == ("fx.orders", 1)]
    assert [r["base_offset"] for r in rows] == list(range(0, 60, 3))
    assert all(r["survives_recovery"] and r["crc_valid"] and r["crc"] >= 0 for r in rows)
    torn = [r for r in _tables("2", fleet / "broker-2")["batches"].to_pylist()
            if (r["topic"], r["partition"]) == ("fx.orders", 0) and not r["survives_recovery"]]
    assert torn and torn[0]["base_offset"] == 15 and not torn[0]["crc_valid"]


def test_unreadable_partition_becomes_a_finding(tmp_path: Path) -> None:
    unit = Unit("partition", "9", str(tmp_path), str(tmp_path / "gone-0"))
    out = list(run_unit(unit))
    assert [t for t, _ in out] == ["findings"]
    assert out[0][1].column("code").to_pylist() == ["UNREADABLE_FILE"]


def _rep(broker: str, leo: int, hw: int | None, epoch: int, d: int | None = None, records: int = 0,
         committed: int = 0) -> dict:
    return {"broker": broker, "log_end_offset": leo, "high_watermark": hw, "latest_epoch": epoch,
            "divergent_offset": d, "records_from_d": records, "committed_from_d": committed}


def test_assemble_consistent_set() -> None:
    """A set that does not diverge: every replica keeps its log (the tail scan's answer too)."""
    row = assemble_replica_set("t", 0, [_rep("2", 50, 40, 3), _rep("1", 60, 50, 3)])
    assert row["replicas"] == ["1", "2"] and row["log_end_offsets"] == [60, 50]
    assert (row["leo_spread"], row["hw_spread"], row["first_divergent_offset"]) == (10, 10, None)
    assert row["kept"] == ["1", "2"], row
    assert row["diverged"] == row["behind"] == [], row
    assert row["records_at_risk"] == 0
    assert pa.RecordBatch.from_pylist([row], schema=schemas.REPLICAS).num_rows == 1


def test_assemble_divergent_set_sides() -> None:
    reps = [_rep("1", 60, 21, 1), _rep("2", 60, 21, 1), _rep("3", 36, 33, 0, 30, 6, 3), _rep("4", 20, None, 0)]
    row = assemble_replica_set("t", 1, reps)
    assert row["first_divergent_offset"] == 30
    assert (row["kept"], row["diverged"], row["behind"]) == (["1", "2"], ["3"], ["4"])
    assert (row["records_at_risk"], row["committed_at_risk"]) == (6, 3)
    assert row["hw_spread"] == 12


def test_assemble_leader_holding_nothing_at_divergence() -> None:
    """The leader (newest epoch) ends where a longer follower's extra batches start: the follower diverged,
    the leader is kept though it holds nothing at D."""
    reps = [_rep("1", 30, 30, 5, 30), _rep("2", 40, 30, 4, 30, 10, 0)]
    row = assemble_replica_set("t", 2, reps)
    assert (row["kept"], row["diverged"], row["behind"], row["records_at_risk"]) == (["1"], ["2"], [], 10)


def test_assemble_every_diverged_follower_counts() -> None:
    """Two followers leaving the leader at different offsets are both diverged; the set's D is the lower."""
    reps = [_rep("1", 60, 60, 3), _rep("2", 50, 40, 2, 30, 20, 10), _rep("3", 55, 40, 2, 45, 10, 0)]
    row = assemble_replica_set("t", 3, reps)
    assert row["first_divergent_offset"] == 30
    assert (row["kept"], row["diverged"], row["behind"]) == (["1"], ["2", "3"], []), row
    assert (row["records_at_risk"], row["committed_at_risk"]) == (20, 10)


def test_spark_schema_derived_from_arrow() -> None:
    pytest.importorskip("pyspark")
    from pyspark.sql import types as T

    st = schemas.spark_schema(schemas.PARTITIONS)
    assert st.names == schemas.PARTITIONS.names
    assert st["epoch_history"].dataType == T.ArrayType(T.StructType([
        T.StructField("epoch", T.IntegerType()), T.StructField("start_offset", T.LongType())]))
    assert schemas.spark_schema(schemas.BATCHES)["crc"].dataType == T.LongType()
    for schema in schemas.TABLES.values():
        assert len(schemas.spark_schema(schema).fields) == len(schema)
