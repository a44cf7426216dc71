"""The fleet-scan goals (`--spark`), each a ratio or a figure measured in one run on generated fleets.

- throughput: `fleet scan` in local[2] (one warm session, its start-up excluded; the scan stage alone, from
  its tasks' own seconds, reported beside it) MB/s per core over
  single-process doctor's MB/s on the same fleet (`diagnose` timed in a warmed child, every segment on
  the compiled walk, as the scan walks them; doctor as shipped, which takes the reference walk below
  8 MiB, is reported too) >= 0.6. The fleet: 3 brokers of one cluster holding 18 partitions each
  (replication factor 3; the replicas are hard links of one partition dir), ~40 MiB per partition in
  2 MiB segments, 12 partitions of 100-record batches and 6 of 1-record ones: 54 partition replicas,
  ~2.1 GB.
- fixed cost: `replog fleet scan` of the sample fleet in a fresh process, after a first run that paid
  for the caches (numba's compiled kernels): its wall seconds < 20.
- rescan: the fleet scanned `--since` the first scan, unchanged: log bytes read / log bytes < 0.05; then
  with 100 MB appended to active segments: < 0.10, and its tables equal a full scan's of the same state.
- scale: 3 clusters x 20 brokers x 300 partitions (small segments, hard links of one partition per
  cluster; the clusters use the same topic names and broker ids with other data) scanned by the
  `replog fleet scan` command in local[2] under the RSS cap: it finishes, every replica set holds the
  three replicas of one cluster, none diverges. The same fleet with `--tail`: seconds per thousand
  partition replicas (reported).
The work tree is hard links of the kept inputs; the appended files are copies, so the inputs stay as
they were built.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import inputs, partitions
from bench.children import DEFAULT_CAP_MIB, python_run, replog_run

MiB = 1 << 20
SEGMENT = 2 * MiB
PARTITION = 40 * MiB
TOPIC = "fleet"
CLUSTER = "bench-fleet-cluster-0001"
APPEND = 100 * MiB
GOALS = {"throughput": (">=", 0.6), "fixed_cost_seconds": ("<", 20.0), "rescan_unchanged": ("<", 0.05),
         "rescan_appended": ("<", 0.10)}
SCALE = (3, 20, 300)   # clusters, brokers per cluster, partition replicas per broker

DOCTOR = """
import json, sys, time
from replog.recovery import doctor
from replog.recovery.kafka import logdir
if sys.argv[1] == "compiled":
    logdir.FAST_WALK_BYTES = 0
dirs = sys.argv[2:]
doctor.diagnose(dirs[:1])
t = time.perf_counter()
report = doctor.diagnose(dirs)
print(json.dumps({"seconds": time.perf_counter() - t, "errors": report.summary["errors"]}))
"""


def _met(name: str, value: float | None) -> dict[str, Any]:
    op, target = GOALS[name]
    met = value is not None and (value >= target if op == ">=" else value < target)
    return {"value": None if value is None else round(value, 3), "goal": f"{op} {target}", "met": met}


def _once(target: Path, build: Callable[[], object]) -> None:
    marker = target.with_name(target.name + ".complete")
    if marker.exists():
        return
    shutil.rmtree(target, ignore_errors=True)
    build()
    marker.write_text("built by bench.spark_goal\n")


def _broker_files(log_dir: Path, cluster: str, node: int, offsets: dict[tuple[str, int], int]) -> None:
    """meta.properties and the root checkpoints (high watermark and recovery point at the log end)."""
    from replog.formats.fileio import atomic_write
    from replog.formats.kafka import checkpoint, names
    from replog.formats.kafka.meta_properties import MetaProperties, build_meta_properties

    log_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(log_dir / names.META_PROPERTIES, build_meta_properties(
        MetaProperties.of(1, cluster, node), when="Mon Jan 01 00:00:00 UTC 2024"))
    for name in (names.REPLICATION_OFFSET_CHECKPOINT, names.RECOVERY_POINT_OFFSET_CHECKPOINT):
        atomic_write(log_dir / name, checkpoint.build_offset_checkpoint(offsets))


def _leo(pdir: Path) -> int:
    from replog.recovery.kafka.logdir import summarize_partition
    return summarize_partition(pdir).log_end_offset


def build_fleet(root: Path) -> None:
    """18 partitions (12 of 100-record batches, 6 of 1-record ones) under `root/parts`, each linked into
    three broker log dirs `root/broker-<n>`."""
    shapes = [inputs.SHAPES[0]] * 12 + [inputs.SHAPES[1]] * 6
    leos = {}
    for p, shape in enumerate(shapes):
        pdir = root / "parts" / f"{TOPIC}-{p}"
        partitions.build_partition(pdir, shape, PARTITION, segment_bytes=SEGMENT, seed=7 + p)
        leos[(TOPIC, p)] = _leo(pdir)
    for node in (1, 2, 3):
        _broker_files(root / f"broker-{node}", CLUSTER, node, leos)
        for p in range(len(shapes)):
            shutil.copytree(root / "parts" / f"{TOPIC}-{p}", root / f"broker-{node}" / f"{TOPIC}-{p}",
                            copy_function=os.link)


def build_scale_fleet(root: Path) -> None:
    """3 clusters x 20 brokers x 300 partition replicas: topics t0..t19 of 100 partitions each, replica
    i of partition k on broker (k + i) % 20; every partition of a cluster links one template of small
    segments, each cluster's template built from its own seed."""
    clusters, brokers, per_broker = SCALE
    count = brokers * per_broker // 3
    for c in range(clusters):
        template = root.with_name(f"{root.name}.template-{c}") / "t-0"   # beside the fleet: not scanned
        shutil.rmtree(template.parent, ignore_errors=True)
        partitions.build_partition(template, inputs.SHAPES[1], 48 * 1024, segment_bytes=16 * 1024, seed=100 + c)
        leo = _leo(template)
        files = [f for f in template.iterdir() if f.is_file()]
        for b in range(brokers):
            held = [(f"t{k // 100}", k % 100) for k in range(count) if b in {(k + i) % brokers for i in range(3)}]
            log_dir = root / f"cluster-{c}" / f"broker-{b}"
            _broker_files(log_dir, f"scale-cluster-{c:04d}-aaaaaaaaa", b, {tp: leo for tp in held})
            for topic, part in held:
                pdir = log_dir / f"{topic}-{part}"
                pdir.mkdir()
                for f in files:
                    os.link(f, pdir / f.name)


def _work_tree(source: Path, work: Path) -> list[Path]:
    """Hard links of the fleet's broker dirs under `work`; the log dirs."""
    shutil.rmtree(work, ignore_errors=True)
    dirs = []
    for broker in sorted(source.glob("broker-*")):
        shutil.copytree(broker, work / broker.name, copy_function=os.link)
        dirs.append(work / broker.name)
    return dirs


def _append(work: Path, total: int) -> int:
    """About `total` bytes of new batches across the fleet: the active segment of 6 partitions copied
    (the inputs stay as built) and appended to, the same bytes on each of its three replicas."""
    chosen = [f"{TOPIC}-{p}" for p in (0, 3, 6, 9, 13, 16)]
    each = total // (3 * len(chosen))
    added = 0
    for name in chosen:
        replicas = [work / f"broker-{n}" / name for n in (1, 2, 3)]
        active = sorted(replicas[0].glob("*.log"))[-1]
        shape = inputs.SHAPES[1] if int(name.rsplit("-", 1)[1]) >= 12 else inputs.SHAPES[0]
        raw = work / f".{name}.raw"
        cycle = partitions.Cycle.of(shape, 99)
        added_bytes = partitions.write_raw_log(raw, shape, cycle.batches_for(each), _leo(replicas[0]), 3, seed=99)
        fresh = work / f".{name}.log"
        shutil.copyfile(active, fresh)
        with open(fresh, "ab") as out, open(raw, "rb") as src:
            shutil.copyfileobj(src, out, 8 * MiB)
        raw.unlink()
        for replica in replicas:
            target = replica / active.name
            target.unlink()
            os.link(fresh, target)
        fresh.unlink()
        added += 3 * added_bytes
    return added


def _tables(out: Path) -> dict[str, list[str]]:
    import pyarrow.dataset as ds
    return {t: sorted(map(repr, ds.dataset(str(out / t), format="parquet").to_table().to_pylist()))
            for t in ("partitions", "segments", "findings", "replicas") if (out / t).is_dir()}


def _log_bytes(dirs: list[Path]) -> int:
    return sum(p.stat().st_size for d in dirs for p in d.glob("*/*.log"))


def throughput_and_rescans(root: Path, cores: int, cap: int) -> dict[str, Any]:
    """Throughput (scan 1), the unchanged rescan, then the rescan after appends against a full scan."""
    from replog.spark.fleet import scan_fleet
    from replog.spark.session import get_session, stop_session

    source = root / "fleet-2g"
    _once(source, lambda: build_fleet(source))
    samples = _samples(root)
    work = root / ".scratch" / "fleet-work"
    dirs = _work_tree(source, work)
    nbytes = _log_bytes(dirs)
    out: dict[str, Any] = {"bytes": nbytes, "partitions": sum(1 for d in dirs for _ in d.glob(f"{TOPIC}-*"))}
    doctor = {mode: python_run(DOCTOR, [mode, *map(str, dirs)], cap) for mode in ("compiled", "shipped")}
    out["doctor"] = {mode: {**run.to_dict(), "seconds_in_process": run.result.get("seconds")}
                     for mode, run in doctor.items()}
    session = get_session(f"local[{cores}]", "replog-bench")
    try:
        scan_fleet([str(samples)], work / ".warm", session=session, force=True)
        t = time.perf_counter()
        first = scan_fleet(list(map(str, dirs)), work / ".scan-1", session=session)
        seconds = time.perf_counter() - t
        again = scan_fleet(list(map(str, dirs)), work / ".scan-2", session=session, since=work / ".scan-1")
        appended = _append(work, APPEND)
        t = time.perf_counter()
        after = scan_fleet(list(map(str, dirs)), work / ".scan-3", session=session, since=work / ".scan-1")
        rescan_seconds = time.perf_counter() - t
        full = scan_fleet(list(map(str, dirs)), work / ".scan-4", session=session)
        equal = _tables(work / ".scan-3") == _tables(work / ".scan-4")
    finally:
        stop_session(session)
    compiled = doctor["compiled"].result.get("seconds")
    per_core = nbytes / seconds / 1e6 / cores
    doctor_mb_s = nbytes / compiled / 1e6 if compiled else None
    out["scan"] = {"seconds": round(seconds, 3), "cores": cores, "mb_s_per_core": round(per_core, 1),
                   "doctor_mb_s": None if doctor_mb_s is None else round(doctor_mb_s, 1),
                   "task_seconds": first.task_seconds,   # the scan stage alone, summed over its tasks (core-s)
                   "scan_stage_mb_s_per_core": round(nbytes / first.task_seconds / 1e6, 1) if first.task_seconds
                   else None, "counts": first.counts, "replica_sets": first.rows.get("replicas")}
    out["throughput"] = _met("throughput", per_core / doctor_mb_s if doctor_mb_s else None)
    out["rescan_unchanged"] = {**_met("rescan_unchanged", again.counts.get("bytes_read", 0) / nbytes),
                               "counts": again.counts, "seconds": round(again.seconds, 3)}
    total = nbytes + appended
    out["rescan_appended"] = {**_met("rescan_appended", after.counts.get("bytes_read", 0) / total),
                              "appended_bytes": appended, "counts": after.counts,
                              "seconds": round(rescan_seconds, 3), "full_scan_seconds": round(full.seconds, 3),
                              "tables_equal_full_scan": equal}
    out["rescan_appended"]["met"] = out["rescan_appended"]["met"] and equal
    shutil.rmtree(work, ignore_errors=True)
    return out


def _samples(root: Path) -> Path:
    """The sample Kafka fleet (`replog samples generate`'s), built once under `root`."""
    from replog.samples.kafka_fleet import generate_kafka_fleet

    samples = root / "samples"
    _once(samples, lambda: generate_kafka_fleet(samples / "kafka", seed=7))
    return samples / "kafka"


def fixed_cost(root: Path, cap: int) -> dict[str, Any]:
    """The sample fleet scanned by the command in a fresh process, twice: the second run's seconds."""
    samples = _samples(root)
    runs = []
    for k in range(2):
        out = root / ".scratch" / f"fixed-{k}"
        runs.append(replog_run(["fleet", "scan", str(samples), "--out", str(out), "--force",
                                "--master", "local[2]", "--format", "json"], cap).to_dict())
        shutil.rmtree(out, ignore_errors=True)
    return {"first_run": runs[0], "after_first": runs[1], **_met("fixed_cost_seconds", runs[1]["seconds"])}


def scale(root: Path, cap: int) -> dict[str, Any]:
    """The 3 x 20 x 300 fleet scanned by the command in local[2] under the RSS cap; its replica sets."""
    import pyarrow.dataset as ds

    source = root / "fleet-scale"
    _once(source, lambda: build_scale_fleet(source))
    out = root / ".scratch" / "scale-scan"
    run = replog_run(["fleet", "scan", str(source), "--out", str(out), "--force", "--master", "local[2]",
                      "--format", "json"], cap)
    result: dict[str, Any] = {"command": run.to_dict()}
    if run.ok and (out / "replicas").is_dir():
        reps = ds.dataset(str(out / "replicas"), format="parquet").to_table().to_pylist()
        mixed = [r for r in reps if len({Path(d).parent.name for d in r["log_dirs"]}) != 1
                 or len(r["log_dirs"]) != 3]
        clusters, brokers, per_broker = SCALE
        result.update(replica_sets=len(reps), expected=clusters * brokers * per_broker // 3, mixed=len(mixed),
                      divergent=sum(r["first_divergent_offset"] is not None for r in reps))
        result["met"] = (not mixed and result["replica_sets"] == result["expected"] and not result["divergent"])
    else:
        result["met"] = False
    shutil.rmtree(out, ignore_errors=True)
    tail = replog_run(["fleet", "scan", str(source), "--out", str(out), "--force", "--master", "local[2]", "--tail",
                       "--format", "json"], cap)
    clusters, brokers, per_broker = SCALE
    result["tail"] = {"command": tail.to_dict(),
                      "seconds_per_1000_partitions": round(tail.seconds * 1000 / (clusters * brokers * per_broker), 2)}
    shutil.rmtree(out, ignore_errors=True)
    return result


def spark_goal(root: Path, cores: int = 2, cap: int = DEFAULT_CAP_MIB,
               progress: Callable[[str], None] = lambda text: None) -> dict[str, Any]:
    """Every fleet-scan goal; each one that fails says why and the others go on."""
    out: dict[str, Any] = {"uptime": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()}
    for name, fn in (("fixed_cost", lambda: fixed_cost(root, cap)),
                     ("fleet", lambda: throughput_and_rescans(root, cores, cap)),
                     ("scale", lambda: scale(root, cap))):
        try:
            out[name] = fn()
        except Exception as err:  # noqa: BLE001 - a measurement harness reports, it does not stop
            out[name] = {"error": f"{type(err).__name__}: {err}"[:300], "met": False}
        progress(f"spark {name}: {json.dumps(out[name])[:400]}")
    return out


if __name__ == "__main__":   # python -m bench.spark_goal DIR: the fleet goals alone, inputs kept in DIR
    print(json.dumps(spark_goal(Path(sys.argv[1]), progress=lambda t: print(t, file=sys.stderr)), indent=2))
