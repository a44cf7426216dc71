"""The lab's Java programs (tests/brokers/java), compiled with the helper class they share.

Java 17's single-file source launcher compiles one file, so programs that share code (`RmqLab.java`: the producer,
the route wait, the "seq-<n>" message, the admin client; `KafkaLab.java`: the Kafka consumers' arguments, properties,
loop and output) are compiled with `javac` instead, each with its helpers,
into a folder of the download cache named for a digest of the sources and the class path. A version's programs are
compiled once; a changed source or class path gets a new folder. Parallel test workers may compile the same
program at once: each compiles into a folder of its own and renames it into place (the first rename wins).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.brokers.jars import cache_root

JAVA_DIR = Path(__file__).with_name("java")
RMQ_HELPERS = (JAVA_DIR / "RmqLab.java",)
KAFKA_HELPERS = (JAVA_DIR / "KafkaLab.java",)


def compiled(program: Path, helpers: tuple[Path, ...], cp: str) -> Path:
    """The folder holding `program`'s classes (and its helpers'), compiled against `cp` on first use."""
    sources = (program, *helpers)
    digest = hashlib.sha256(cp.encode())
    for source in sources:
        digest.update(source.read_bytes())
    folder = cache_root() / "brokers" / "classes" / f"{program.stem}-{digest.hexdigest()[:20]}"
    if (folder / f"{program.stem}.class").exists():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{program.stem}-"))
    done = subprocess.run(["javac", "-proc:none", "-encoding", "UTF-8", "-nowarn", "-cp", cp, "-d", str(work),
                           *map(str, sources)], capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        shutil.rmtree(work, ignore_errors=True)
        raise AssertionError(f"javac {program.name} failed ({done.returncode}):\n{done.stdout}{done.stderr}"[-4000:])
    try:
        os.rename(work, folder)
    except OSError:   # another worker put the same classes there first
        shutil.rmtree(work, ignore_errors=True)
    return folder


def lab_program(source: str, cp: str, helpers: tuple[Path, ...]) -> list[str]:
    """`-cp <classes>:<cp> <Main>` for a lab program (a file name in tests/brokers/java) and its `helpers`."""
    classes = compiled(JAVA_DIR / source, helpers, cp)
    return ["-cp", f"{classes}{os.pathsep}{cp}", Path(source).stem]


def rmq_program(source: str, cp: str) -> list[str]:
    """A RocketMQ lab program (`lab_program`, with `RmqLab.java`)."""
    return lab_program(source, cp, RMQ_HELPERS)
