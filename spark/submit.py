"""Driver for `spark-submit`, for clusters where replog is not installed on the driver host.

    python -m replog.spark.submit --make-zip /tmp   # writes and prints /tmp/replog-<sha>.zip (formats, recovery, spark)
    spark-submit --master spark://head:7077 --py-files /tmp/replog-<sha>.zip spark/submit.py \\
        --out /shared/scan /shared/kafka-logs/broker-*

Executors need Python with pyarrow and the packages in pyproject's dependency list; the
zip carries replog's own code. Paths must be visible to the executors (a shared mount).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spark/submit.py", description="replog fleet scan under spark-submit")
    parser.add_argument("paths", nargs="*", help="broker log dirs, folders of them, or globs")
    parser.add_argument("--out", help="directory for the Parquet tables")
    parser.add_argument("--inventory", help="file of broker=path lines")
    parser.add_argument("--batches", action="store_true", help="also write the per-batch table")
    parser.add_argument("--force", action="store_true", help="replace a previous scan's output")
    parser.add_argument("--since", metavar="DIR", help="an earlier scan's --out: unchanged sealed segments not read")
    parser.add_argument("--tail", action="store_true", help="checkpoints, epoch files and segment tails only")
    parser.add_argument("--make-zip", metavar="DIR", help="only write DIR/replog-<sha>.zip for --py-files")
    args = parser.parse_args(argv)
    if args.make_zip:
        from replog.spark.session import project_zip
        print(project_zip(Path(args.make_zip)))
        return 0
    if not args.out or not (args.paths or args.inventory):
        parser.error("--out and at least one path (or --inventory) are required")
    from pyspark.sql import SparkSession

    from replog.spark.fleet import scan_fleet
    session = SparkSession.builder.appName("replog-fleet").getOrCreate()  # master comes from spark-submit
    result = scan_fleet(args.paths, args.out, inventory=args.inventory, batches=args.batches, force=args.force,
                        session=session, since=args.since, tail=args.tail)
    print(json.dumps(result.to_dict(), indent=2))
    return 1 if result.has_errors else 0


if __name__ == "__main__":
    sys.exit(main())
