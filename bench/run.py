"""Run every contender on every input in one process, best-of-N, then the command goals, and report.

Timings are wall-clock (`time.perf_counter`), best of N after one warm-up run
(which also pays numba's first-call cost, measured separately as `first_call_s`).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import inputs, peers

MiB = 1 << 20


def peak_rss_mib() -> float:
    """Peak resident set of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def machine() -> dict[str, Any]:
    return {"uname": " ".join(platform.uname()), "nproc": os.cpu_count(), "python": platform.python_version()}


def best_of(fn: peers.Runner, buf: bytes, path: str, repeat: int, budget: float) -> tuple[float, int]:
    """Best time of up to `repeat` runs after a warm-up; slow contenders stop once over `budget` s."""
    start = time.perf_counter()
    count = fn(buf, path)
    spent = time.perf_counter() - start
    times: list[float] = []
    for _ in range(repeat):
        if times and spent > budget:
            break
        t = time.perf_counter()
        fn(buf, path)
        times.append(time.perf_counter() - t)
        spent += times[-1]
    return min(times), count


def first_call_seconds() -> dict[str, float]:
    """Import + first call of the kernels in a fresh interpreter (numba cache warm or cold)."""
    code = ("import time; t=time.perf_counter(); from replog.formats.kafka import fastwalk, fastrecords; "
            "from bench.inputs import SHAPES, build_segment; d,_,_=build_segment(SHAPES[0], 1<<16); "
            "i=time.perf_counter(); t0=time.perf_counter(); tab,_,_=fastwalk.fast_batch_columns(d,'p',0); "
            "w=time.perf_counter()-t0; t0=time.perf_counter(); fastrecords.record_columns(d,'p',tab); "
            "r=time.perf_counter()-t0; print(i-t, w, r)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parent.parent)
    imp, walk, dec = map(float, out.stdout.split())
    return {"import": round(imp, 3), "walk": round(walk, 3), "decode": round(dec, 3)}


def scan_rss(path: Path) -> float:
    """Peak RSS (MiB) of a fresh process that mmaps `path` and walks it in column chunks.

    VmHWM, not ru_maxrss: a child's ru_maxrss starts from its parent's peak at fork.
    """
    code = ("import mmap,resource,sys; from replog.formats.kafka.fastwalk import FastWalk; "
            "f=open(sys.argv[1],'rb'); m=mmap.mmap(f.fileno(),0,access=mmap.ACCESS_READ); "
            "w=FastWalk(memoryview(m),sys.argv[1],0); [None for _ in w.column_chunks()]; "
            "print([int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM')][0]/1024)")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parent.parent)
    return round(float(out.stdout), 1)


def run(size_mb: float, repeat: int, budget: float) -> dict[str, Any]:
    """Every contender on every input shape of `size_mb` MB."""
    report: dict[str, Any] = {"machine": machine(), "size_mb": size_mb, "repeat": repeat, "inputs": {},
                              "results": [], "ratios": {}}
    report["first_call_s"] = first_call_seconds()
    with tempfile.TemporaryDirectory(prefix="replog-bench-") as tmp:
        files = inputs.write_inputs(Path(tmp), int(size_mb * MiB))
        for name, (path, batches, records) in files.items():
            buf = path.read_bytes()
            report["inputs"][name] = {"bytes": len(buf), "batches": batches, "records": records}
            for task, impls in peers.TASKS.items():
                for impl, fn in impls.items():
                    report["results"].append(_measure(task, name, impl, fn, buf, str(path), records, repeat, budget))
            del buf
        report["scan_peak_rss_mib"] = {"input": "large", "bytes": files["large"][0].stat().st_size,
                                       "peak_rss_mib": scan_rss(files["large"][0])}
    report["ratios"] = ratios(report["results"])
    report["peak_rss_mib"] = round(peak_rss_mib(), 1)
    return report


def _measure(task: str, name: str, impl: str, fn: peers.Runner, buf: bytes, path: str, records: int,
             repeat: int, budget: float) -> dict[str, Any]:
    row: dict[str, Any] = {"task": task, "input": name, "impl": impl}
    try:
        seconds, count = best_of(fn, buf, path, repeat, budget)
    except Exception as err:  # noqa: BLE001 - a peer lacking a codec is reported, not fatal
        row.update(error=f"{type(err).__name__}: {err}"[:120])
        return row
    if count not in (-1, records):
        row["error"] = f"saw {count} records, input has {records}"
    row.update(seconds=round(seconds, 6), mb_s=round(len(buf) / seconds / 1e6, 1),
               records_s=None if count == -1 else round(records / seconds), peak_rss_mib=round(peak_rss_mib(), 1))
    return row


def ratios(results: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float | None]]]:
    """replog's speed over each peer's, per task and input (>1: replog is faster)."""
    speed = {(r["task"], r["input"], r["impl"]): r.get("mb_s") for r in results}
    out: dict[str, dict[str, dict[str, float | None]]] = {}
    for (task, name, impl), mine in speed.items():
        if impl != "replog":
            continue
        for peer in peers.PEERS:
            if (task, name, peer) in speed:
                other = speed[(task, name, peer)]
                ratio = round(mine / other, 2) if mine and other else None
                out.setdefault(task, {}).setdefault(name, {})[peer] = ratio
    return out


def render_table(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table
    console = Console()
    if "results" in report:
        table = Table(title=f"replog bench — {report['machine']['uname']}, {report['machine']['nproc']} cpus")
        for col in ("task", "input", "impl", "MB/s", "records/s", "replog ×", "peak RSS MiB"):
            table.add_column(col, justify="left" if col in ("task", "input", "impl") else "right")
        for r in report["results"]:
            ratio = report["ratios"].get(r["task"], {}).get(r["input"], {}).get(r["impl"])
            table.add_row(r["task"], r["input"], r["impl"], r.get("error") or f"{r['mb_s']:,.0f}",
                          "" if r.get("records_s") is None else f"{r['records_s']:,}",
                          "" if ratio is None else f"{ratio:.2f}", f"{r.get('peak_rss_mib', '')}")
        console.print(table)
        console.print(f"first call (import, walk, decode) s: {report['first_call_s']}")
        console.print(f"chunked mmap scan peak RSS: {report['scan_peak_rss_mib']}")
        console.print(f"process peak RSS: {report['peak_rss_mib']} MiB")
    if "startup" in report:
        render_startup(console, report["startup"])
    if "goals" in report:
        render_goals(console, report["goals"])


def render_startup(console: Any, found: dict[str, Any]) -> None:
    """The fixed cost of a command: best and median wall seconds of fresh processes, against the goal."""
    from rich.table import Table
    table = Table(title="start-up: whole processes, best of several after a warm-up")
    for col in ("command", "best s", "median s", "peak RSS MiB", "goal", "met"):
        table.add_column(col, justify="left" if col == "command" else "right")
    for name, label in (("help", "replog --help"), ("doctor_1mib", "replog doctor, 1 MiB partition")):
        row = found[name]
        table.add_row(label, row.get("error") or _cell(row.get("seconds")), _cell(row.get("median_seconds")),
                      _cell(row.get("peak_rss_mib")), row.get("goal", "-"), _met(row.get("met", False)))
    console.print(table)


def _met(ok: bool) -> str:
    return "yes" if ok else "[bold red]NO[/]"


def _cell(value: Any, fmt: str = "") -> str:
    return "-" if value is None else format(value, fmt)


def render_goals(console: Any, found: dict[str, Any]) -> None:
    """The goals as two tables: ratios to peers, and peak RSS per command and input size."""
    from rich.table import Table
    size = found["inputs"]["size_bytes"] / MiB
    table = Table(title=f"command goals ({size:g} MiB inputs; commands less a {found['startup_seconds']} s start-up)")
    for col in ("goal", "replog s", "peer", "peer s", "ratio", "target", "met"):
        table.add_column(col, justify="left" if col in ("goal", "peer") else "right")
    rows = []
    for shape, g in found["doctor"].items():
        if "error" in g:
            rows.append((f"doctor {shape}", g["error"], "", "", None, "", False))
            continue
        rows += [(f"doctor {shape} (in process)", g["doctor_seconds"], "aiokafka walk+CRC", g["aiokafka_seconds"],
                  g["ratio"], g["goal"], g["ratio"] is not None and g["ratio"] >= 1.0),
                 (f"doctor {shape} (command)", g["command_net_seconds"], "aiokafka walk+CRC", g["aiokafka_seconds"],
                  g["command_ratio"], g["goal"], g["command_ratio"] is not None and g["command_ratio"] >= 1.0),
                 (f"doctor {shape} / replog walk", g["doctor_seconds"], "replog compiled walk", g["walk_seconds"],
                  g["walk_ratio"]["ratio"], g["walk_ratio"]["goal"], g["walk_ratio"]["met"])]
    r, p = found["replay"], found["repair"]
    if "error" not in r:
        rows.append(("replay of 3 (in process)", r["seconds"], "replog compiled walk", r["walk_seconds"],
                     r["ratio"], r["goal"], r["met"]))
    if "error" not in p:
        rows += [("repair of 3 (command)", p["command_net_seconds"], "cp -r", p["cp_seconds"], p["ratio"],
                  p["goal"], p["met"]),
                 ("repair of 3 (command)", p["command_net_seconds"], "cp -r + fsync", p["cp_sync_seconds"],
                  p["sync_ratio"], p["goal"], p["sync_ratio"] is not None and p["sync_ratio"] >= 0.5)]
    rows += _spark_rows(found.get("spark") or {})
    for goal, mine, peer, theirs, ratio, target, met in rows:
        table.add_row(goal, _cell(mine), peer, _cell(theirs), _cell(ratio, ".2f"), target, _met(met))
    console.print(table)
    rss = Table(title=f"peak RSS of each command, a fresh process per run (killed past {found['rss_cap_mib']} MiB)")
    for col in ("command", "input", "s", "CPU s", "peak RSS MiB", "limit", "exit", "met"):
        rss.add_column(col, justify="left" if col in ("command", "input") else "right", no_wrap=True)
    for row in found["rss"]:
        peak = f"> {row['killed_over_mib']} (killed)" if "killed_over_mib" in row else f"{row['peak_rss_mib']}"
        rss.add_row(row["command"], row["input"], f"{row['seconds']}", f"{row['cpu_seconds']}", peak,
                    f"< {row['limit_mib']}", f"{row['returncode']}", _met(row["met"]))
    console.print(rss)
    for name in ("replay", "repair", "spark"):
        if "error" in found.get(name, {}):
            console.print(f"[red]{name}: {found[name]['error']}[/]")
    for name, goal in (found.get("spark") or {}).items():
        if isinstance(goal, dict) and "error" in goal:
            console.print(f"[red]spark {name}: {goal['error']}[/]")


def _spark_rows(s: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The fleet-scan goals (`bench.spark_goal`) as rows of the goal table."""
    rows: list[tuple[Any, ...]] = []
    fleet, fixed, scale = s.get("fleet", {}), s.get("fixed_cost", {}), s.get("scale", {})
    if "throughput" in fleet:
        t = fleet["throughput"]
        rows.append(("fleet scan MB/s per core (local[2])", fleet["scan"]["mb_s_per_core"], "doctor MB/s",
                     fleet["scan"]["doctor_mb_s"], t["value"], t["goal"], t["met"]))
        for name, label in (("rescan_unchanged", "rescan, unchanged"), ("rescan_appended", "rescan, +100 MB")):
            r = fleet[name]
            rows.append((f"{label}: log bytes read", r["counts"].get("bytes_read"), "fleet bytes", fleet["bytes"],
                         r["value"], r["goal"], r["met"]))
    if "value" in fixed:
        rows.append(("fixed cost, sample fleet (s)", fixed["value"], "first run (s)",
                     fixed["first_run"]["seconds"], None, fixed["goal"], fixed["met"]))
    if "replica_sets" in scale:
        rows.append(("3x20x300 fleet: sets mixing clusters", scale["mixed"], "replica sets", scale["replica_sets"],
                     None, "0, no OOM", scale["met"]))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--quick", action="store_true", help="small inputs, one timed run: a few seconds")
    parser.add_argument("--size", type=float, default=None, help="MB per peer input (default 32; --quick 0.25)")
    parser.add_argument("--repeat", type=int, default=None, help="best of N (default 5; --quick 1)")
    parser.add_argument("--goals", action="store_true", help="only the whole-command goals (no peer table)")
    parser.add_argument("--no-goals", action="store_true", help="only the peer table")
    parser.add_argument("--goal-size", type=float, default=None,
                        help="MiB per partition and replica for the command goals (default 2048; --quick 1)")
    parser.add_argument("--goal-small", type=float, default=None,
                        help="MiB of the smaller inputs the RSS goal compares with (default 200; --quick 0.25)")
    parser.add_argument("--goal-repeat", type=int, default=1, help="best of N for in-process goal timings")
    parser.add_argument("--inputs", type=Path, default=None,
                        help="build the goal inputs here and keep them (reused when already built)")
    parser.add_argument("--rss-cap", type=int, default=None,
                        help="MiB past which a measured command is killed (default 4096)")
    parser.add_argument("--spark", action="store_true", help="also the Spark fleet-scan goal (local[2])")
    parser.add_argument("--brokers", action="store_true",
                        help="also the real peers of the broker lab (Java and Maven): replog dump vs kafka-dump-log, "
                             "replog recover vs a Kafka broker's startup recovery")
    args = parser.parse_args(argv)
    # replog runs from its bytecode caches, as an installed package does: a shell that sets
    # PYTHONDONTWRITEBYTECODE would make every measured command compile replog from source (~70 ms)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    size = args.size if args.size is not None else (0.25 if args.quick else 32)
    repeat = args.repeat if args.repeat is not None else (1 if args.quick else 5)
    goal_size = args.goal_size if args.goal_size is not None else (1 if args.quick else 2048)
    goal_small = args.goal_small if args.goal_small is not None else (0.25 if args.quick else 200)
    report: dict[str, Any] = {"machine": machine()}
    if not args.goals:
        report = run(size, repeat, budget=1.0 if args.quick else 6.0)
    if not args.no_goals:
        from bench import goals, startup
        with tempfile.TemporaryDirectory(prefix="replog-bench-startup-") as scratch:
            report["startup"] = startup.measure(Path(scratch), 3 if args.quick else 7)
        report["goals"] = goals.measure(int(goal_size * MiB), int(goal_small * MiB), args.goal_repeat, args.spark,
                                        args.inputs, args.rss_cap or goals.DEFAULT_CAP_MIB)
    if args.brokers:
        from bench import brokers
        with tempfile.TemporaryDirectory(prefix="replog-bench-dump-") as scratch:
            report["kafka_dump_log"] = brokers.measure(Path(scratch), int((1 if args.quick else 209) * MiB),
                                                       1 if args.quick else 3, int((1 if args.quick else 32) * MiB),
                                                       int((1 if args.quick else 200) * MiB))
        from bench import broker_recover
        with tempfile.TemporaryDirectory(prefix="replog-bench-recover-") as scratch:
            report["broker_recovery"] = broker_recover.measure(Path(scratch), int((8 if args.quick else 1024) * MiB),
                                                               1 if args.quick else 3)
    if args.format == "json":
        print(json.dumps(report, indent=2))
    else:
        render_table(report)
        if "kafka_dump_log" in report:
            render_dump_peer(report["kafka_dump_log"])
        if "broker_recovery" in report:
            render_recover_peer(report["broker_recovery"])
    return 0


def render_recover_peer(found: dict[str, Any]) -> None:
    """replog recover vs the broker's own startup recovery of the same damaged partition (broker s / replog s)."""
    from rich.console import Console
    from rich.table import Table
    table = Table(title=f"replog recover vs {found['peer']}, best of {found['repeat']}")
    for col in ("MiB", "log end kept", "broker s", "its loader ms", "replog s", "ratio", "goal", "met"):
        table.add_column(col, justify="right")
    table.add_row(f"{found['bytes'] / MiB:.0f}", str(found["log_end_offset"]), f"{found['broker_seconds']}",
                  str(found["broker_loader_ms"]), f"{found['replog_seconds']}", f"{found['ratio']:.2f}",
                  found["goal"], _met(found["met"]))
    Console().print(table)


def render_dump_peer(found: dict[str, Any]) -> None:
    """replog dump vs the real kafka-dump-log, whole processes, as ratios (peer seconds / replog seconds)."""
    from rich.console import Console
    from rich.table import Table
    table = Table(title=f"replog dump vs {found['peer']}, whole processes, output to a file, "
                        f"best of {found['repeat']} (JVM {found['jvm']})")
    for col in ("case", "MiB", "replog s", "kafka-dump-log s", "ratio", "goal", "met"):
        table.add_column(col, justify="left" if col == "case" else "right")
    for row in found["cases"]:
        table.add_row(row["case"], f"{row['bytes'] / MiB:.0f}", f"{row['replog_seconds']}",
                      f"{row['kafka_dump_log_seconds']}", f"{row['ratio']:.2f}", row["goal"], _met(row["met"]))
    for row in found.get("deep_rate", []):
        table.add_row(row["case"], f"{row['bytes'] / MiB:.0f}", f"{row['replog_seconds']}", "",
                      f"{row['mb_per_s']} MB/s", row["goal"], _met(row["met"]))
    console = Console()
    console.print(table)
    console.print(f"replog: {found.get('replog_env', '')}; fixed costs (s): "
                  + ", ".join(f"{k} {v}" for k, v in found.get("fixed", {}).items()))
