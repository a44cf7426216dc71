"""The golden run: every command on the sample fleet and the real broker files, each output hashed.

A refactor that must leave behaviour unchanged runs this before and after and compares the two manifests
(`python -m bench.golden compare A B`); a differing line names the command, and its saved output can be diffed.
Commands run in children forked from one warm process (so each has a fresh process state, as a user's command
does, without paying the interpreter's start-up hundreds of times); the Spark fleet scan runs as a real
subprocess. Paths of the temporary inputs and outputs are replaced by `$SAMPLES`, `$REALDATA` and `$OUT` so
that two runs in different directories compare equal.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

REALDATA = Path(__file__).resolve().parents[1].parent / "shared" / "realdata"
KAFKA_BROKERS = ("broker-1", "broker-2", "broker-3")
RMQ_STORES = ("master", "slave", "damaged")
CREATED = re.compile(r'("created_utc": )"[^"]*"')
REPLOG = str(Path(sys.executable).with_name("replog"))


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def _dump_variants(path: Path) -> list[list[str]]:
    base = [str(path)]
    variants = [base + ["--format", "json"], base + ["--format", "dump-log"]]
    if path.suffix == ".log":
        variants += [base + ["--format", "dump-log", "--deep", "--print-data"],
                     base + ["--format", "jsonl", "--deep"]]
    return [["dump", *v] for v in variants]


def sample_commands(samples: Path, out: Path) -> Iterator[list[str]]:
    """Every command of the contract on the generated sample fleet."""
    kafka, rmq = samples / "kafka", samples / "rocketmq"
    for broker in KAFKA_BROKERS:
        yield ["ls", str(kafka / broker), "--format", "json"]
        yield ["doctor", str(kafka / broker), "--format", "json"]
    for store in RMQ_STORES:
        yield ["ls", str(rmq / store), "--format", "json"]
        yield ["doctor", str(rmq / store), "--format", "json"]
    yield ["doctor", str(kafka / "broker-1"), "--manifest", str(out / "manifest.txt"), "--format", "json"]
    for path in _files(samples):
        if path.suffix not in (".json", ".txt"):
            yield from _dump_variants(path)
    for part in sorted(p.name for p in (kafka / "broker-1").iterdir() if p.is_dir()):
        named = [f"b{i + 1}={kafka / b / part}" for i, b in enumerate(KAFKA_BROKERS) if (kafka / b / part).is_dir()]
        yield ["replay", *named, "--format", "json", "--html", str(out / f"replay-{part}.html")]
        yield ["replay", *named, "--format", "json", "--protocol", "hw"]
        yield ["replay", *named, "--format", "json", "--what-if"]
        yield ["impact", *named, "--format", "json"]
        yield ["repair", *named, "--out", str(out / f"repair-{part}"), "--format", "json"]
        for broker in KAFKA_BROKERS:
            yield ["recover", str(kafka / broker / part), "--out", str(out / f"recover-{broker}-{part}"),
                   "--format", "json"]
        yield ["recover", str(kafka / "broker-2" / part), "--salvage", "--out", str(out / f"salvage-{part}"),
               "--format", "json"]
    pair = [f"master={rmq / 'master'}", f"slave={rmq / 'slave'}"]
    for protocol in ("autoswitch", "classic"):
        yield ["replay", *pair, "--protocol", protocol, "--format", "json"]
        yield ["impact", *pair, "--protocol", protocol, "--format", "json"]
    yield ["replay", *pair, "--protocol", "autoswitch", "--what-if", "--format", "json"]
    yield ["replay", *pair, "--protocol", "autoswitch", "--html", str(out / "replay-rmq.html"), "--format", "json"]
    yield ["repair", *pair, "--protocol", "autoswitch", "--out", str(out / "repair-rmq"), "--format", "json"]
    for store in RMQ_STORES:
        yield ["recover", str(rmq / store), "--out", str(out / f"recover-rmq-{store}"), "--format", "json"]


def realdata_commands(root: Path) -> Iterator[list[str]]:
    """ls, doctor and every dump of each real broker's files, read in place."""
    for dataset in sorted(p for p in root.iterdir() if p.is_dir()):
        yield ["ls", str(dataset), "--format", "json"]
        yield ["doctor", str(dataset), "--format", "json"]
        for path in _files(dataset):
            yield from _dump_variants(path)


class Normalizer:
    """Replaces this run's directories by names, so that runs in different places compare equal."""

    def __init__(self, places: dict[str, Path]) -> None:
        pairs = sorted(((str(p.resolve()), n) for n, p in places.items()), key=lambda kv: -len(kv[0]))
        pairs += [(str(p), n) for n, p in places.items() if str(p) != str(p.resolve())]
        self.pattern = re.compile("|".join(re.escape(p) for p, _ in pairs))
        self.names = dict(pairs)

    def __call__(self, text: str) -> str:
        text = CREATED.sub(r'\1"<time>"', text)   # the evidence manifest's creation time
        return self.pattern.sub(lambda m: "$" + self.names[m.group(0)], text)


def _child(argv: list[str], log: Path) -> NoReturn:
    """The forked child: a fresh command, as the user's shell would start it; never returns."""
    try:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        sys.argv = ["replog", *argv]
        from replog.toolkit.cli import main
        main()
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:  # noqa: BLE001 - a traceback is an outcome to record, not to hide
        import traceback
        traceback.print_exc()
        code = 99
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _tree_digest(root: Path, norm: Normalizer) -> str:
    """The files a command wrote: names, and contents (text normalized) hashed."""
    lines = []
    for path in _files(root) if root.is_dir() else [root]:
        data = path.read_bytes()
        if b"\0" not in data:
            try:
                data = norm(data.decode("utf-8")).encode()
            except UnicodeDecodeError:
                pass
        lines.append(f"{hashlib.sha256(data).hexdigest()}  {norm(str(path))}")
    return "\n".join(lines)


def _written(argv: list[str]) -> list[Path]:
    paths = []
    for flag in ("--out", "--html", "--manifest"):
        if flag in argv:
            paths.append(Path(argv[argv.index(flag) + 1]))
    return paths


def _warm() -> None:
    """Import every module a command may load, once, before the children are forked from this process."""
    import importlib
    import pkgutil

    import replog
    for info in pkgutil.walk_packages(replog.__path__, "replog."):
        if not info.name.startswith(("replog.spark", "replog.samples")) and "__main__" not in info.name:
            importlib.import_module(info.name)


def _start(argv: list[str], log: Path) -> int:
    """Fork a child running `replog argv` with stdout and stderr in `log`; its pid."""
    pid = os.fork()
    if pid == 0:
        _child(argv, log)
    return pid


def run(commands: list[list[str]], out: Path, norm: Normalizer, record: Path, jobs: int = 2) -> list[str]:
    """Run each command (`jobs` at a time); save its normalized output and return the manifest lines."""
    record.mkdir(parents=True, exist_ok=True)
    logs = [record / f"{i:05d}.txt" for i in range(len(commands))]
    codes: dict[int, int] = {}
    running: dict[int, int] = {}
    for i, argv in enumerate(commands):
        while len(running) >= jobs:
            pid, status = os.wait()
            codes[running.pop(pid)] = os.waitstatus_to_exitcode(status)
        running[_start(argv, logs[i])] = i
    while running:
        pid, status = os.wait()
        codes[running.pop(pid)] = os.waitstatus_to_exitcode(status)
    lines = []
    for i, argv in enumerate(commands):
        log, code = logs[i], codes[i]
        text = norm(log.read_text("utf-8", "replace"))
        for path in _written(argv):
            if path.exists():
                text += f"\n--- wrote {norm(str(path))}\n{_tree_digest(path, norm)}"
        shown = norm(" ".join(argv))
        log.write_text(f"$ replog {shown}\nexit {code}\n{text}")
        lines.append(f"{hashlib.sha256(text.encode()).hexdigest()[:16]} {code} {i:05d} {shown}")
    return lines


def _spark_lines(samples: Path, out: Path, norm: Normalizer, record: Path) -> list[str]:
    """The fleet scan (a real subprocess: Spark) and its report; each Parquet table as sorted rows."""
    import pyarrow.parquet as pq
    scan = out / "fleet"
    argv = [REPLOG, "fleet", "scan", str(samples / "kafka"),
            str(samples / "rocketmq"), "--out", str(scan), "--force"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    lines = [f"scan exit {done.returncode}"]
    tables = sorted(p for p in scan.iterdir() if p.is_dir() and not p.name.startswith("_")) if scan.is_dir() else []
    for table in tables:
        rows = pq.read_table(table).to_pylist()
        text = norm("\n".join(sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)))
        (record / f"fleet-{table.name}.txt").write_text(text)
        lines.append(f"{hashlib.sha256(text.encode()).hexdigest()[:16]} fleet table {table.name}")
    return lines + run([["fleet", "report", str(scan), "--format", "json"]], out, norm, record / "report")


def golden(dest: Path, with_spark: bool) -> int:
    with tempfile.TemporaryDirectory(prefix="replog-golden-") as tmp:
        samples, out = Path(tmp) / "samples", Path(tmp) / "out"
        out.mkdir()
        subprocess.run([REPLOG, "samples", "generate", str(samples)],
                       check=True, capture_output=True)
        _warm()
        norm = Normalizer({"SAMPLES": samples, "OUT": out, "REALDATA": REALDATA})
        lines = run(list(sample_commands(samples, out)), out, norm, dest / "samples")
        if REALDATA.is_dir():
            lines += run(list(realdata_commands(REALDATA)), out, norm, dest / "realdata")
        if with_spark:
            lines += _spark_lines(samples, out, norm, dest)
    (dest / "SUMS").write_text("\n".join(lines) + "\n")
    print(f"{len(lines)} outputs hashed: {dest / 'SUMS'}")
    return 0


def compare(a: Path, b: Path) -> int:
    """The commands whose output differs between two golden runs (their saved outputs can be diffed)."""
    left, right = (p.joinpath("SUMS").read_text().splitlines() for p in (a, b))
    diff = [f"- {x}\n+ {y}" for x, y in zip(left, right, strict=False) if x != y]
    if len(left) != len(right):
        diff.append(f"{len(left)} outputs against {len(right)}")
    print("\n".join(diff) if diff else f"identical: {len(left)} outputs")
    return 1 if diff else 0


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.golden", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    make = sub.add_parser("run", help="run every command and write DEST/SUMS")
    make.add_argument("dest", type=Path)
    make.add_argument("--spark", action="store_true", help="also the fleet scan (starts Spark)")
    cmp_ = sub.add_parser("compare", help="list the outputs that differ between two runs")
    cmp_.add_argument("a", type=Path)
    cmp_.add_argument("b", type=Path)
    args = parser.parse_args()
    if args.cmd == "run":
        return golden(args.dest, args.spark)
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
