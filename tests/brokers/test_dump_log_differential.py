"""`replog dump --format dump-log --kafka-version X` against the real kafka-dump-log of Kafka X, line for line.

The real DumpLogSegments of each lab version (jars resolved by `tests.brokers.jars`) and replog (a real
`replog` process) dump the same corpus (`dumplog_corpus`: generated files of every kind, plus real broker files
when `/work/shared/realdata` is there) with each option set; only the `Dumping <path>` header (and the path a
passed sanity check prints) is normalised, as the real tool reads copies. The real tool is the oracle: any
difference fails. Without Java or Maven the test skips, and fails under `CI=true`.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.brokers import dumplog, dumplog_corpus
from tests.brokers.jars import VERSIONS, tools_problem

pytestmark = pytest.mark.brokers
REPLOG = Path(shutil.which("replog") or Path(__file__).resolve().parents[2] / ".venv" / "bin" / "replog")


def _lab_or_skip() -> None:
    """Skip with the reason where the lab cannot run; fail in CI, where it must."""
    problem = tools_problem()
    if problem is None and not REPLOG.is_file():
        problem = f"no replog executable at {REPLOG}"
    if problem is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"broker lab: {problem}")
    pytest.skip(f"broker lab: {problem}")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("dumplog-corpus")
    return root, dumplog_corpus.build(root)


@pytest.fixture(scope="module")
def cases(corpus: tuple[Path, list[str]]) -> dict[str, list[dumplog.Case]]:
    """Every version x option set x file, with the corpus tree as replog found and left it."""
    _lab_or_skip()
    root, files = corpus
    before = dumplog.tree_state(root)
    out: dict[str, list[dumplog.Case]] = {}
    for version in VERSIONS:
        out[version] = []
        for option_set in dumplog_corpus.OPTION_SETS:
            if version not in option_set.versions or not _selected(option_set.name):
                continue
            chosen = [f for f in files if option_set.applies(f)]
            out[version].extend(
                dumplog.compare(version, root, chosen, option_set.options, option_set.name, REPLOG))
    assert dumplog.tree_state(root) == before, "replog (or the harness) wrote beside its inputs"
    return out


def _selected(name: str) -> bool:
    """`DUMPLOG_OPTION_SETS=share,offsets` compares only those option sets (a quicker run while working on one
    decoder); unset: all."""
    only = os.environ.get("DUMPLOG_OPTION_SETS")
    return not only or name in only.split(",")


@pytest.mark.parametrize("version", VERSIONS)
def test_replog_prints_what_kafka_dump_log_prints(version: str, cases: dict[str, list[dumplog.Case]]) -> None:
    found = cases[version]
    if not found and os.environ.get("DUMPLOG_OPTION_SETS"):
        pytest.skip(f"DUMPLOG_OPTION_SETS leaves no option set that kafka-dump-log {version} has")
    differ = [c for c in found if not c.identical]
    print(f"kafka-dump-log {version}: {len(found) - len(differ)}/{len(found)} file x option cases identical")
    assert found and all(c.real is not None for c in found), "the real tool printed nothing for some file"
    assert not differ, "\n".join(f"{c.options} {c.file} (real tool died: {c.real_died})\n{c.diff()}"
                                 for c in differ[:8])


def test_replog_writes_nothing_beside_its_inputs(tmp_path: Path) -> None:
    """A `.timeindex` whose `.index` is missing: 4.4's own tool creates the `.index` beside it (so the state
    check can see a write), replog dumping the same files in every format leaves the folder as it was. (The
    `cases` fixture checks the whole corpus the same way after all of replog's runs.)"""
    _lab_or_skip()
    part = tmp_path / "orders-0"
    part.mkdir()
    dumplog_corpus.GENERATED["orders-0"](part)
    (part / f"{dumplog_corpus.SEGMENT}.index").unlink()
    files = [f"{dumplog_corpus.SEGMENT}.timeindex", f"{dumplog_corpus.SEGMENT}.log"]
    before = dumplog.tree_state(part)
    real_copy = tmp_path / "real-copy"
    shutil.copytree(part, real_copy)
    real = subprocess.run(dumplog.java_command("4.4.0", [real_copy / f for f in files], [], tmp_path),
                          capture_output=True, timeout=120)
    created = set(dumplog.tree_state(real_copy)) - set(before)
    assert created == {f"{dumplog_corpus.SEGMENT}.index"}, real.stderr.decode()[-2000:]
    for fmt in ("dump-log", "jsonl", "json", "table"):
        for options in ([], ["--deep-iteration", "--print-data-log"], ["--verify-index-only"],
                        ["--index-sanity-check"]):
            done = subprocess.run([str(REPLOG), "dump", "--format", fmt, "--files",
                                   ",".join(str(part / f) for f in files), *options], capture_output=True,
                                  timeout=120)
            assert done.returncode in (0, 1), done.stderr.decode()[-2000:]
    assert dumplog.tree_state(part) == before
