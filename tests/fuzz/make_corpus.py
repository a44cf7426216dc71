"""Regenerate `tests/fuzz/corpus/<target>/` deterministically: `python -m tests.fuzz.make_corpus`.

Every seed is made by replog's writers: the hand-built ones of `seeds.py`
and a few pieces (< 4 KB each) cut from the sample fleet of seed 7.
Stale files in the corpus are removed first, so the tree is exactly what
this script writes.
"""
from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from tests.fuzz.harness import CORPUS
from tests.fuzz.seeds import from_fleet, hand_built

MAX_SEED = 4000
FLEET_PER_TARGET = 6


def corpus_files() -> dict[str, dict[str, bytes]]:
    out = {t: dict(s) for t, s in hand_built().items()}
    try:
        from replog.samples.kafka_fleet import generate_kafka_fleet
    except ImportError:
        return out
    with tempfile.TemporaryDirectory() as d:
        generate_kafka_fleet(Path(d) / "kafka", seed=7)
        for target, found in from_fleet(Path(d) / "kafka", budget=MAX_SEED, per_target=FLEET_PER_TARGET).items():
            out.setdefault(target, {}).update({f"fleet__{k}": v for k, v in found.items()})
    return out


def write_corpus(root: Path = CORPUS) -> int:
    files = corpus_files()
    if root.exists():
        shutil.rmtree(root)
    count = 0
    for target, found in sorted(files.items()):
        for name, data in sorted(found.items()):
            if len(data) >= MAX_SEED + 96:
                raise ValueError(f"seed {target}/{name} is {len(data)} bytes; the corpus keeps seeds under 4 KB")
            (root / target).mkdir(parents=True, exist_ok=True)
            (root / target / f"{name}.bin").write_bytes(data)
            count += 1
    return count


if __name__ == "__main__":
    n = write_corpus(Path(sys.argv[1]) if len(sys.argv) > 1 else CORPUS)
    print(f"wrote {n} seed files under {CORPUS}")
