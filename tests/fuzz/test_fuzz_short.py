"""A short deterministic fuzz run over every target, and the harness's own guarantees."""
from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fuzz import mutators
from tests.fuzz.harness import CORPUS, TARGETS, check_input, execute, fuzz_target, load_corpus, run
from tests.fuzz.make_corpus import MAX_SEED, write_corpus
from tests.fuzz.targets import COST, Scratch

REPO = Path(__file__).resolve().parents[2]


def test_short_run_over_every_target_finds_no_crash(tmp_path: Path) -> None:
    results = run(seconds=None, max_execs=150, seed=0, with_fleet=False, save=True, crashes_dir=tmp_path)
    assert {r.target for r in results} == set(TARGETS)
    assert all(r.execs >= 150 // COST.get(r.target, 1) for r in results)
    crashes = [f"{c.target}: {c.signature}\n{c.traceback}" for r in results for c in r.crashes]
    assert crashes == [], "\n\n".join(crashes)


def test_every_corpus_seed_runs_clean() -> None:
    for target in TARGETS:
        for data in load_corpus(target).values():
            check_input(target, data)


def test_corpus_is_small_complete_and_reproducible(tmp_path: Path) -> None:
    assert {p.name for p in CORPUS.iterdir() if p.is_dir()} == set(TARGETS)
    files = [p for p in CORPUS.rglob("*") if p.is_file()]
    assert files and all(p.stat().st_size < MAX_SEED + 96 for p in files)
    write_corpus(tmp_path / "corpus")
    fresh = {str(p.relative_to(tmp_path / "corpus")): p.read_bytes()
             for p in (tmp_path / "corpus").rglob("*") if p.is_file()}
    assert fresh == {str(p.relative_to(CORPUS)): p.read_bytes() for p in files}


def test_mutations_are_deterministic_per_seed() -> None:
    seed, other = b"0\n2\norders 0 5\norders 1 7\n", bytes(range(64))
    ra, rb = random.Random(3), random.Random(3)
    a = [mutators.mutate(seed, other, ra) for _ in range(50)]
    b = [mutators.mutate(seed, other, rb) for _ in range(50)]
    assert a == b and len(set(a)) > 1


def test_harness_reports_and_saves_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fragile(data: bytes, scratch: Scratch) -> None:
        if len(data) % 3 == 0:
            raise IndexError("planted bug")
    monkeypatch.setitem(TARGETS, "fragile", fragile)
    stats = fuzz_target("fragile", [b"ab", b"abcd"], random.Random(0), max_execs=200, crashes_dir=tmp_path)
    [crash] = stats.crashes
    assert crash.signature.startswith("IndexError") and len(crash.data) % 3 == 0
    assert crash.saved_to is not None and crash.saved_to.read_bytes() == crash.data
    assert "planted bug" in crash.saved_to.with_suffix(".txt").read_text()


def test_harness_reports_an_input_the_run_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inputs are hashed when put and after the run: a target that writes into one is a crash."""
    def writes(data: bytes, scratch: Scratch) -> None:
        path = scratch.put("t-0/00000000000000000000.log", data)
        if data.startswith(b"w"):
            with open(path, "r+b") as f:
                f.write(b"X")
    monkeypatch.setitem(TARGETS, "writes", writes)
    scratch = Scratch()
    try:
        assert execute("writes", b"read only", scratch) is None
        crash = execute("writes", b"write me", scratch)
    finally:
        scratch.close()
    assert crash is not None and crash.signature == "InputModified t-0/00000000000000000000.log"


def test_harness_reports_a_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    def hangs(data: bytes, scratch: Scratch) -> None:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            pass
    monkeypatch.setitem(TARGETS, "hangs", hangs)
    scratch = Scratch()
    try:
        crash = execute("hangs", b"x", scratch, timeout=0.2)
    finally:
        scratch.close()
    assert crash is not None and crash.signature.startswith("Hang")


def test_command_line_runs_for_a_set_time() -> None:
    out = subprocess.run([sys.executable, "-m", "tests.fuzz", "--seconds", "1", "--target", "kafka_checkpoint",
                          "--target", "rocketmq_epoch", "--no-fleet"], cwd=REPO, capture_output=True, text=True,
                         timeout=60, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "execs/s" in out.stdout and "0 distinct crashes" in out.stdout
