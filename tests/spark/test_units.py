"""Split partitions, RocketMQ stores and remote filesystems in spark.tasks, without Spark."""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from replog.recovery.rocketmq.doctor import diagnose_store
from replog.spark import remote, schemas
from replog.spark.inputs import discover
from replog.spark.tasks import apply_split_counts, run_unit
from replog.spark.units import Unit, log_dir_units, remote_log_dir_units, store_unit
from tests.spark.fleet_builder import build_fleet


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("units")
    build_fleet(root / "fx")
    from replog.samples.rocketmq_fleet import generate_rocketmq_samples
    generate_rocketmq_samples(root / "rmq")
    return root


def tables_of(units: list[Unit], with_batches: bool = True) -> dict[str, pa.Table]:
    out: dict[str, list[pa.RecordBatch]] = {n: [] for n in (*schemas.TABLES, "split_counts")}
    for unit in units:
        for table, batch in run_unit(Unit.from_dict(unit.to_dict()), with_batches=with_batches):
            out[table].append(batch)
    t = {k: pa.Table.from_batches(v, schemas.SPLIT_COUNTS if k == "split_counts" else schemas.TABLES[k])
         for k, v in out.items()}
    t["partitions"], t["segments"] = apply_split_counts(t["partitions"], t["segments"], t.pop("split_counts"))
    return t


def rows(t: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(repr(v) for v in r.values()) for r in t.to_pylist())


def same_tables(a: dict[str, pa.Table], b: dict[str, pa.Table]) -> None:
    for name in schemas.TABLES:
        assert rows(a[name]) == rows(b[name]), name


def test_tiny_threshold_splits_and_equals_the_unsplit_scan(fleet: Path) -> None:
    log_dir = str(fleet / "fx" / "broker-2")
    whole, split = log_dir_units("2", log_dir, None), log_dir_units("2", log_dir, 1)
    kinds = Counter(u.kind for u in split)
    assert kinds["segments"] > kinds["partition"] == Counter(u.kind for u in whole)["partition"] == 12
    assert all(u.split for u in split if u.kind == "partition")
    a, b = tables_of(whole), tables_of(split)
    same_tables(a, b)
    crc = [r for r in b["segments"].to_pylist() if r["damaged"]]
    assert [(r["topic"], r["partition"]) for r in crc] == [("fx.orders", 0)]


def test_segment_groups_cover_every_segment_once(fleet: Path) -> None:
    units = log_dir_units("1", str(fleet / "fx" / "broker-1"), 1500)
    part = fleet / "fx" / "broker-1" / "fx.orders-0"
    groups = [u.segments for u in units if u.kind == "segments" and u.path == str(part)]
    bases = sorted(int(p.stem) for p in part.glob("*.log"))
    assert len(groups) > 1 and [b for g in groups for b in g] == bases


def test_record_decoding_moves_to_the_segment_units(fleet: Path, tmp_path: Path) -> None:
    """A CRC-valid batch whose records do not decode: only a segments unit finds it; the counts add up."""
    import shutil
    import struct

    from replog.formats.kafka import batch as v2
    from replog.recovery.kafka.writer import write_partition
    from tests.formats.kafka.segments import data_batch

    log_dir = tmp_path / "b"
    shutil.copytree(fleet / "fx" / "broker-3", log_dir)
    bad = bytearray(data_batch(3, 3))
    bad[v2.HEADER_SIZE] = 0x7E                       # first record's length varint: far too long
    struct.pack_into(">I", bad, 17, v2.compute_crc(bad, 0, len(bad)))
    write_partition(log_dir / "fx.bad-0", [data_batch(0, 3), bytes(bad), data_batch(6, 3)], segment_bytes=100)
    whole, split = log_dir_units("3", str(log_dir), None), log_dir_units("3", str(log_dir), 1)
    a, b = tables_of(whole), tables_of(split)
    same_tables(a, b)
    [row] = [r for r in b["partitions"].to_pylist() if r["topic"] == "fx.bad"]
    undecodable = [r for r in b["findings"].to_pylist() if r["topic"] == "fx.bad" and r["offset"] == 3]
    assert undecodable and row["errors"] >= 1
    seg = next(r for r in b["segments"].to_pylist() if r["path"] == undecodable[0]["path"])
    assert seg["damaged"] and seg["errors"] >= 1
    light = next(u for u in split if u.path.endswith("fx.bad-0") and u.kind == "partition")
    assert not any(r["offset"] == 3 and r["severity"] == "error" for r in tables_of([light])["findings"].to_pylist()
                   if r["path"] == undecodable[0]["path"] and r["code"] == undecodable[0]["code"])


def test_store_unit_row_and_findings(fleet: Path) -> None:
    store = fleet / "rmq" / "damaged"
    t = tables_of([store_unit("d", str(store))])
    [row] = t["stores"].to_pylist()
    found, _ = diagnose_store(store)
    assert Counter(r["code"] for r in t["findings"].to_pylist()) == Counter(f.code for f in found)
    assert row["store"] == "damaged" and row["messages"] > 0 and row["errors"] == sum(
        f.severity.value == "error" for f in found) > 0
    assert row["commitlog_min_offset"] == 0 and row["commitlog_max_offset"] > 0
    assert {r["broker"] for r in t["findings"].to_pylist()} == {"d"}


def test_discover_finds_stores_and_log_dirs(fleet: Path) -> None:
    dirs, skipped = discover([fleet])
    kinds = Counter(d.kind for d in dirs)
    assert kinds == {"kafka": 3, "rocketmq": 3} and not skipped
    assert {d.broker for d in dirs if d.kind == "rocketmq"} == {"master", "slave", "damaged"}


class _Guarded(pafs.FileSystemHandler):
    """A 'remote' filesystem: serves files under `root` by relative path, counts reads, allows no writes."""

    def __init__(self, root: str) -> None:
        self.root, self.fs = root, pafs.SubTreeFileSystem(root, pafs.LocalFileSystem())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Guarded) and other.root == self.root

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __reduce__(self) -> tuple:
        return _Guarded, (self.root,)

    def get_type_name(self) -> str:
        return "guarded"

    def normalize_path(self, path: str) -> str:
        return path

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        return self.fs.get_file_info(paths)

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        return self.fs.get_file_info(selector)

    def open_input_file(self, path: str) -> Any:
        return self.fs.open_input_file(path)

    def open_input_stream(self, path: str) -> Any:
        return self.fs.open_input_stream(path)

    def _refuse(self, *a: Any, **k: Any) -> Any:
        raise OSError("read-only test filesystem")

    create_dir = delete_dir = delete_dir_contents = delete_root_dir_contents = delete_file = _refuse
    move = copy_file = open_output_stream = open_append_stream = _refuse


def test_remote_units_equal_local_ones(fleet: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through a PyFileSystem over a sub-tree: same rows (paths named in the remote tree), and the
    scan code never sees the original local paths."""
    fs = pafs.PyFileSystem(_Guarded(str(fleet)))
    local_units = log_dir_units("2", str(fleet / "fx" / "broker-2"), 1)
    remote_units = remote_log_dir_units("2", fs, "fx/broker-2", 1)
    assert [(u.kind, u.segments) for u in remote_units] == [(u.kind, u.segments) for u in local_units]
    assert all(u.fs and not u.path.startswith(str(fleet)) for u in remote_units)
    seen: list[str] = []
    real = remote.fetch
    monkeypatch.setattr(remote, "fetch", lambda f, p, d, chunk=remote.CHUNK: (seen.append(p), real(f, p, d, 64))[1])
    a, b = tables_of(local_units), tables_of(remote_units)
    assert seen and not any(str(fleet) in p for p in seen)
    prefix = str(fleet) + "/"
    for name in schemas.TABLES:
        mine = [{k: (v.replace(prefix, "") if isinstance(v, str) else v) for k, v in r.items()}
                for r in a[name].to_pylist()]
        assert rows(pa.Table.from_pylist(mine, schemas.TABLES[name])) == rows(b[name]), name
    assert {r["log_dir"] for r in b["findings"].to_pylist()} == {"fx/broker-2"}


def test_remote_store_and_discovery(fleet: Path) -> None:
    fs = pafs.PyFileSystem(_Guarded(str(fleet)))
    dirs, _ = discover(["rmq", "fx"], filesystem=fs)
    assert sorted((d.kind, d.path) for d in dirs)[:2] == [("kafka", "fx/broker-1"), ("kafka", "fx/broker-2")]
    assert {d.broker for d in dirs} == {"broker-1", "broker-2", "broker-3", "master", "slave", "damaged"}
    remote_t = tables_of([d.units(None)[0] for d in dirs if d.broker == "damaged"])
    local_t = tables_of([store_unit("damaged", str(fleet / "rmq" / "damaged"), cluster="folder rmq")])
    [r], [loc] = remote_t["stores"].to_pylist(), local_t["stores"].to_pylist()
    assert r["path"] == "rmq/damaged" and {**r, "path": None} == {**loc, "path": None}


def test_file_uri_discovery(fleet: Path) -> None:
    dirs, _ = discover([f"file://{fleet / 'fx'}", f"file:{fleet / 'rmq' / 'slave'}"])
    assert [(d.kind, d.path) for d in dirs] == [("kafka", str(fleet / "fx" / f"broker-{i}")) for i in (1, 2, 3)] \
        + [("rocketmq", str(fleet / "rmq" / "slave"))]
    assert all(d.fs is not None for d in dirs)


def test_fetch_streams_in_bounded_reads(tmp_path: Path) -> None:
    src = tmp_path / "a.bin"
    src.write_bytes(bytes(range(256)) * 1000)
    sizes: list[int] = []

    class Spy:
        def __init__(self, f: Any) -> None:
            self.f = f

        def __enter__(self) -> Spy:
            return self

        def __exit__(self, *a: Any) -> None:
            self.f.close()

        def size(self) -> int:
            return self.f.size()

        def read_at(self, n: int, pos: int) -> bytes:
            sizes.append(n)
            return self.f.read_at(n, pos)

    class FS:
        def open_input_file(self, path: str) -> Spy:
            return Spy(pafs.LocalFileSystem().open_input_file(path))

    remote.fetch(FS(), str(src), tmp_path / "b.bin", chunk=4096)
    assert (tmp_path / "b.bin").read_bytes() == src.read_bytes() and max(sizes) == 4096 and len(sizes) == 63


def test_restore_uri() -> None:
    assert remote.restore_uri(str(Path("s3://bucket/kafka"))) == "s3://bucket/kafka"
    assert remote.restore_uri(str(Path("file:///tmp/x"))) == "file:///tmp/x"
    assert remote.restore_uri("/tmp/x") == "/tmp/x" and not remote.is_uri("/tmp/x")


def test_units_and_log_dirs_as_json_have_their_declared_members(fleet: Path) -> None:
    """A unit's JSON (what executors receive: `UnitDoc`) and a log dir's row (`LogDirRow`) against their
    declarations; `UnitDoc` names every field of `Unit` (mypy holds `from_dict` to the fields it names)."""
    import json
    from dataclasses import fields

    from replog.spark.schemas import LogDirRow
    from replog.spark.units import UnitDoc
    from tests.toolkit.test_documents import mismatches

    declared, written = set(UnitDoc.__annotations__), {f.name for f in fields(Unit)}
    assert declared == written, f"declared, no field: {declared - written}; a field not declared: {written - declared}"
    log_dirs, _ = discover([str(fleet)], None)
    units = [u for d in log_dirs for u in d.units(1)]     # split as small as can be: segments units too
    assert {u.kind for u in units} >= {"log_dir", "partition", "segments", "store"}, "every kind of unit"
    found = [m for u in units for m in mismatches(UnitDoc, json.loads(json.dumps(u.to_dict())), u.path)]
    assert found == [], f"units differ from UnitDoc: {found[:10]}"
    found = [m for d in log_dirs for m in mismatches(LogDirRow, d.to_dict(), d.path)]
    assert found == [], f"log dirs differ from LogDirRow: {found[:10]}"
