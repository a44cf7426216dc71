"""The fuzz harness: mutate seeds, call every parser family, keep what crashes.

A crash is any exception other than `FormatError` escaping a target (see
`targets.py`), or an input that runs longer than `EXEC_TIMEOUT` seconds (a
hang). Each distinct crash (exception type + innermost replog frame) is saved
once to `tests/fuzz/crashes/<target>/<hash>.bin` with its traceback beside it
(`.txt`); re-run one with `check_input(target, data)`.

Seeds: the committed corpus (`tests/fuzz/corpus/<target>/`), the hand-built
seeds of `seeds.py`, and, unless disabled, files cut from a sample fleet the
generator writes at start. The run is deterministic for a given `seed` and
`max_execs`; with a time budget, how far it gets depends on the machine.
"""
from __future__ import annotations

import hashlib
import random
import signal
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from replog.formats.errors import FormatError
from tests.fuzz import seeds as seed_sources
from tests.fuzz.mutators import mutate
from tests.fuzz.targets import COST, TARGETS, Scratch

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CORPUS = HERE / "corpus"
CRASHES = HERE / "crashes"
EXEC_TIMEOUT = 5.0


class Hang(BaseException):
    """Raised by the watchdog timer; a BaseException so no `except Exception` in a parser hides it."""


@dataclass
class Crash:
    target: str
    signature: str
    error: str
    traceback: str
    data: bytes
    saved_to: Path | None = None


@dataclass
class TargetStats:
    target: str
    seeds: int = 0
    execs: int = 0
    seconds: float = 0.0
    format_errors: int = 0
    crashes: list[Crash] = field(default_factory=list)

    @property
    def execs_per_second(self) -> float:
        return self.execs / self.seconds if self.seconds else 0.0


def load_corpus(target: str, root: Path = CORPUS) -> dict[str, bytes]:
    d = root / target
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()} if d.is_dir() else {}


def fleet_seeds() -> dict[str, dict[str, bytes]]:
    """Seeds cut from a freshly generated sample fleet; empty when the generator is absent."""
    try:
        from replog.samples.kafka_fleet import generate_kafka_fleet
    except ImportError:
        return {}
    with tempfile.TemporaryDirectory(prefix="replog-fuzz-fleet-") as d:
        generate_kafka_fleet(Path(d) / "kafka", seed=7)
        return seed_sources.from_fleet(Path(d) / "kafka")


_FLEET_SOURCE = {"kafka_partition": "kafka_segment"}  # a partition target is fed real segments


def gather_seeds(targets: list[str], with_fleet: bool = True) -> dict[str, list[bytes]]:
    """target -> seed inputs (corpus, hand-built, fleet), deduplicated, in a stable order."""
    built = seed_sources.hand_built()
    fleet = fleet_seeds() if with_fleet else {}
    out: dict[str, list[bytes]] = {}
    for t in targets:
        pool = (list(load_corpus(t).values()) + list(built.get(t, {}).values())
                + list(fleet.get(_FLEET_SOURCE.get(t, t), {}).values()))
        out[t] = list(dict.fromkeys(pool)) or [b""]
    return out


def _signature(err: BaseException) -> str:
    """Exception type plus the innermost frame inside replog's own code (not this harness)."""
    frames = [f for f in traceback.extract_tb(err.__traceback__)
              if f.filename.startswith(str(REPO)) and "/tests/fuzz/" not in f.filename]
    where = f"{Path(frames[-1].filename).relative_to(REPO)}:{frames[-1].lineno}" if frames else "?"
    return f"{type(err).__name__} at {where}"


def _alarm(signum: int, frame: object) -> None:
    raise Hang(f"no result after {EXEC_TIMEOUT} s")


def execute(target: str, data: bytes, scratch: Scratch, timeout: float = EXEC_TIMEOUT) -> Crash | None:
    """Run one input; None when it parsed or was rejected with `FormatError` and left its input files
    as they were put (hashed before and after: an input that changes is a crash too)."""
    watchdog = threading.current_thread() is threading.main_thread()
    if watchdog:
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
    crash = None
    try:
        TARGETS[target](data, scratch)
    except FormatError:
        pass
    except (Exception, Hang, RecursionError) as err:  # noqa: BLE001 - this is what the harness looks for
        crash = Crash(target, _signature(err), f"{type(err).__name__}: {err}"[:500], traceback.format_exc(), data)
    finally:
        if watchdog:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    changed = scratch.changed()
    if crash is None and changed:
        crash = Crash(target, f"InputModified {changed[0]}", f"inputs changed by the run: {', '.join(changed)}",
                      "", data)
    return crash


def check_input(target: str, data: bytes) -> None:
    """Raise AssertionError with the traceback if `data` crashes `target` (for regression tests)."""
    scratch = Scratch()
    try:
        crash = execute(target, data, scratch)
    finally:
        scratch.close()
    assert crash is None, f"{target} crashed: {crash.signature}\n{crash.traceback}"


def save_crash(crash: Crash, root: Path = CRASHES) -> Path:
    digest = hashlib.sha256(crash.signature.encode()).hexdigest()[:12]
    d = root / crash.target
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{digest}.bin"
    path.write_bytes(crash.data)
    (d / f"{digest}.txt").write_text(f"{crash.signature}\n{crash.error}\n\n{crash.traceback}")
    crash.saved_to = path
    return path


def fuzz_target(target: str, seeds: list[bytes], rng: random.Random, *, seconds: float | None = None,
                max_execs: int | None = None, save: bool = True, crashes_dir: Path = CRASHES) -> TargetStats:
    """Run every seed as is, then mutated ones until the time or exec budget is spent."""
    stats = TargetStats(target, seeds=len(seeds))
    seen: set[str] = set()
    scratch = Scratch()
    start = time.perf_counter()
    deadline = start + seconds if seconds is not None else None
    try:
        i = 0
        while True:
            if i < len(seeds):
                data = seeds[i]
            else:
                if (max_execs is not None and stats.execs >= max_execs) or \
                        (deadline is not None and time.perf_counter() >= deadline):
                    break
                data = mutate(rng.choice(seeds), rng.choice(seeds), rng)
            i += 1
            crash = execute(target, data, scratch)
            stats.execs += 1
            if crash is not None and crash.signature not in seen:
                seen.add(crash.signature)
                if save:
                    save_crash(crash, crashes_dir)
                stats.crashes.append(crash)
    finally:
        scratch.close()
    stats.seconds = time.perf_counter() - start
    return stats


def run(*, seconds: float | None = 60.0, targets: list[str] | None = None, seed: int = 0,
        max_execs: int | None = None, with_fleet: bool = True, save: bool = True,
        crashes_dir: Path = CRASHES) -> list[TargetStats]:
    """Fuzz each target in turn with an equal share of `seconds` (or `max_execs` each)."""
    names = targets or list(TARGETS)
    unknown = [t for t in names if t not in TARGETS]
    if unknown:
        raise ValueError(f"unknown fuzz targets {unknown}; known: {', '.join(TARGETS)}")
    pools = gather_seeds(names, with_fleet)
    share = seconds / len(names) if seconds is not None else None
    return [fuzz_target(t, pools[t], random.Random(f"{seed}:{t}"), seconds=share,
                        max_execs=None if max_execs is None else max(1, max_execs // COST.get(t, 1)),
                        save=save, crashes_dir=crashes_dir) for t in names]
