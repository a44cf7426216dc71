"""A fleet scan's tasks run in this process, without Spark (helpers, not tests): units dealt into a few
tasks as the driver deals them, each task writing its table files and its record, then the driver's
finish of split partitions."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.dataset as ds

from replog.spark import cache, fleet
from replog.spark.inputs import LogDir
from replog.spark.job import JobOptions, deal, run_task, total
from replog.spark.units import SPLIT_BYTES

TABLES = ("partitions", "segments", "findings", "batches", "stores")


def scan(log_dirs: list[LogDir], out: Path, *, since: Path | None = None, split_bytes: int | None = SPLIT_BYTES,
         with_batches: bool = True, record: bool = True, tasks: int = 3) -> dict[str, Any]:
    """The scan job's tasks over `log_dirs` into `out`; replaying what `since` (an earlier OUT) recorded."""
    out.mkdir(parents=True, exist_ok=True)
    index = cache.inherit(since, out) if since is not None else None
    units = [u for d in log_dirs for u in d.units(split_bytes, index)]
    reports = [run_task(k, group, JobOptions(str(out), with_batches, record, scan=out.name))
               for k, group in enumerate(deal(units, tasks))]
    fleet._finish_split(out)
    return total(reports)


def tables(out: Path) -> dict[str, list[str]]:
    """Every public table the tasks wrote, rows sorted (as text: lists and None compare)."""
    return {name: sorted(map(repr, ds.dataset(str(out / name), format="parquet").to_table().to_pylist()))
            for name in TABLES if (out / name).is_dir()}
