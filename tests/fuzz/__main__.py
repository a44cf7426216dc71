"""`python -m tests.fuzz --seconds N [--target T ...] [--seed S]`: fuzz for a set time, report, save crashes."""
from __future__ import annotations

import argparse
import sys

from tests.fuzz.harness import CRASHES, run
from tests.fuzz.targets import TARGETS


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    ap.add_argument("--seconds", type=float, default=60.0, help="total time budget, shared by the targets")
    ap.add_argument("--target", action="append", choices=sorted(TARGETS), help="fuzz only this target (repeatable)")
    ap.add_argument("--seed", type=int, default=0, help="random seed of the mutators")
    ap.add_argument("--max-execs", type=int, default=None, help="stop each target after this many executions")
    ap.add_argument("--no-fleet", action="store_true", help="do not generate a sample fleet for extra seeds")
    args = ap.parse_args(argv)
    results = run(seconds=None if args.max_execs and args.seconds <= 0 else args.seconds, targets=args.target,
                  seed=args.seed, max_execs=args.max_execs, with_fleet=not args.no_fleet)
    total_execs = total_time = 0.0
    print(f"{'target':26} {'seeds':>5} {'execs':>8} {'execs/s':>9} crashes")
    for s in results:
        total_execs += s.execs
        total_time += s.seconds
        print(f"{s.target:26} {s.seeds:5d} {s.execs:8d} {s.execs_per_second:9.0f} {len(s.crashes)}")
        for c in s.crashes:
            print(f"    {c.signature}: {c.error[:160]}\n    saved to {c.saved_to}")
    crashes = sum(len(s.crashes) for s in results)
    print(f"total: {int(total_execs)} execs in {total_time:.1f} s ({total_execs / max(total_time, 1e-9):.0f}/s), "
          f"{crashes} distinct crashes" + (f" saved under {CRASHES}" if crashes else ""))
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
