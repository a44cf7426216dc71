"""SparkSession bootstrap: embedded `local[*]` by default, any `--master` otherwise.

Checks Java first (a clear sentence instead of a JVM stack trace), points the
Python workers at the running interpreter (the venv's packages), keeps the
console quiet (no UI, WARN logs), and on a cluster ships this project to the
executors as a zip of `formats/`, `recovery/` and `spark/` so they need only
Python with pyarrow (and pandas, which pyspark's Arrow path imports).
"""
from __future__ import annotations

import importlib
import os
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from replog.formats.errors import ReplogError
from replog.spark.java import java_problem

PACKAGES = ("formats", "recovery", "spark")  # what executors import, under `replog.`


def is_local(master: str | None) -> bool:
    return master is None or master.startswith("local")


def get_session(master: str | None = None, app_name: str = "replog-fleet") -> Any:
    """A configured SparkSession; raises ReplogError when Java or pyspark is missing."""
    problem = java_problem()
    if problem:
        raise ReplogError(problem)
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise ReplogError("fleet scans need pyspark (pip install 'pyspark>=3.5' 'pandas>=2.2,<3')") from None
    for var in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):
        os.environ.setdefault(var, sys.executable)
    builder = (SparkSession.builder.appName(app_name).master(master or "local[*]")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.sql.adaptive.enabled", "true")
               .config("spark.driver.extraJavaOptions", "-Dlog4j2.level=ERROR"))
    if is_local(master):
        builder = builder.config("spark.sql.shuffle.partitions", str(max(2, 2 * (os.cpu_count() or 2))))
    try:
        spark = builder.getOrCreate()
    except Exception as e:  # noqa: BLE001 - py4j/JVM start-up failures have many types
        raise ReplogError(f"could not start Spark (master {master or 'local[*]'}): {e}") from None
    spark.sparkContext.setLogLevel("ERROR")
    if not is_local(master):
        spark.sparkContext.addPyFile(str(project_zip(Path(tempfile.mkdtemp(prefix="replog-ship-")))))
    return spark


def project_zip(out_dir: Path) -> Path:
    """A zip of the packages executors import, for `addPyFile` (or `spark-submit --py-files`)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / "replog.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.mkdir("replog")  # zipimport finds the `replog` namespace only by its directory entry
        for pkg in PACKAGES:
            root = Path(importlib.import_module(f"replog.{pkg}").__path__[0])
            for path in sorted(root.rglob("*.py")):
                zf.write(path, f"replog/{pkg}/{path.relative_to(root).as_posix()}")
    return target
