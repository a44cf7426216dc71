"""Kafka's own DumpLogSegments (`kafka-dump-log.sh`), run from the broker lab's jars: the oracle replog's
`dump --format dump-log` text is held to.

The real tool writes beside what it reads (dumping a `.timeindex` makes 4.4 create an empty `.index` next to
it), so it only ever sees copies: `run_real` copies the corpus folder into a scratch folder per JVM. One JVM
dumps many files (`--files a,b,c`) to keep the JVM starts few; its stdout is cut back into one section per file
at the `Dumping <path>` header it prints first for each. A file the tool dies on (an exception ends the run)
gets what it printed before dying, and the files after it are dumped by a fresh JVM.
"""
from __future__ import annotations

import difflib
import functools
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tests.brokers.jars import classpath

JVM_FLAGS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto")
# 4.4 moved the tool from core (Scala) to tools (Java); both names are probed in the version's jars.
MAIN_CLASSES = ("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments")
HEADER = "Dumping "
# Both logging backends of the lab's trees (reload4j for 3.x, Log4j2 for 4.x) send everything to stderr.
LOG4J = """log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=%p %m%n
"""
LOG4J2 = """status = error
appender.err.type = Console
appender.err.name = STDERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = %p %m%n
rootLogger.level = warn
rootLogger.appenderRef.err.ref = STDERR
"""


@dataclass
class Dump:
    """One tool run's text, cut per file: `sections[name]` is the stdout lines from that file's header on,
    the header's path made relative to the corpus root (so the real tool's copy and replog's original match)."""

    sections: dict[str, list[str]] = field(default_factory=dict)
    stderr: str = ""
    failed: list[str] = field(default_factory=list)  # files the tool died on


@functools.cache
def main_class(version: str) -> str:
    """The tool's class in this version's jars, found by looking into them (no JVM started)."""
    for jar in classpath(version).split(":"):
        if "kafka" not in Path(jar).name:
            continue
        with zipfile.ZipFile(jar) as z:
            names = set(z.namelist())
        for cls in MAIN_CLASSES:
            if cls.replace(".", "/") + ".class" in names:
                return cls
    raise RuntimeError(f"kafka {version}: no DumpLogSegments class in its jars")


def split_sections(stdout: str, root: Path) -> dict[str, list[str]]:
    """Stdout cut at each `Dumping <path>` header, keyed and headed by the path relative to `root`. The same
    prefix is cut where a line starts with the file's path (`<path> passed sanity check.`, `<path> is empty.`):
    the real tool reads copies, replog the originals."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    prefix = f"{root}/"
    for line in lines_of(stdout):
        if line.startswith(HEADER):
            name = relative(line[len(HEADER):], root)
            current = sections.setdefault(name, [])
            line = HEADER + name
        elif line.startswith(prefix):
            line = line[len(prefix):]
        if current is not None:
            current.append(line)
    return sections


def lines_of(text: str) -> list[str]:
    """Lines split at `\n` only: record payloads may hold `\r` and other characters `str.splitlines` splits at."""
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def decoded(raw: bytes) -> str:
    """A tool's output as text; bytes that are not UTF-8 kept (as surrogates), so they still compare."""
    return raw.decode("utf-8", "surrogateescape")


def relative(path: str, root: Path) -> str:
    """`path` relative to `root` when it lies under it (the tool prints paths as given), else as printed."""
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path


def _log_configs(scratch: Path) -> list[str]:
    (scratch / "log4j.properties").write_text(LOG4J)
    (scratch / "log4j2.properties").write_text(LOG4J2)
    return [f"-Dlog4j.configuration=file:{scratch / 'log4j.properties'}",
            f"-Dlog4j2.configurationFile=file:{scratch / 'log4j2.properties'}"]


def java_command(version: str, files: Sequence[Path], options: Sequence[str], scratch: Path) -> list[str]:
    return ["java", *JVM_FLAGS, *_log_configs(scratch), "-cp", classpath(version), main_class(version),
            "--files", ",".join(map(str, files)), *options]


def run_real(version: str, root: Path, files: Sequence[str], options: Sequence[str]) -> Dump:
    """The real tool of `version` over `files` (relative to `root`), on a copy of `root`, in as few JVMs as
    the files allow (one, unless it dies on one of them)."""
    out = Dump()
    todo = list(files)
    with tempfile.TemporaryDirectory(prefix="dumplog-real-") as tmp:
        for attempt in range(len(files) + 1):
            if not todo:
                break
            copy = Path(tmp) / f"run{attempt}"
            shutil.copytree(root, copy, symlinks=True)
            done = subprocess.run(java_command(version, [copy / f for f in todo], options, Path(tmp)),
                                  capture_output=True, timeout=300, cwd=tmp, env={**os.environ, "LC_ALL": "C.UTF-8"})
            sections = split_sections(decoded(done.stdout), copy)
            out.sections.update(sections)
            out.stderr += decoded(done.stderr).replace(str(copy) + "/", "")
            todo = _after_failure(todo, sections, done.returncode, out)
    return out


def _after_failure(todo: list[str], sections: dict[str, list[str]], returncode: int, out: Dump) -> list[str]:
    """The files still to dump after a run: none when it ended well, else those after the one it died on."""
    if returncode == 0 and all(f in sections for f in todo):
        return []
    dumped = [f for f in todo if f in sections]
    if not dumped:  # died before its first header: every file is a failure of that one run
        out.failed.extend(todo)
        return []
    last = todo.index(dumped[-1])
    out.failed.append(todo[last])
    return todo[last + 1:]


def run_replog(replog: Path, version: str, root: Path, files: Sequence[str], options: Sequence[str]) -> Dump:
    """`replog dump --format dump-log --kafka-version <version>` over the same files, in place (replog writes
    nothing; the test checks that)."""
    cmd = [str(replog), "dump", "--format", "dump-log", "--kafka-version", version,
           "--files", ",".join(str(root / f) for f in files), *options]
    done = subprocess.run(cmd, capture_output=True, timeout=300, cwd=root, env={**os.environ, "LC_ALL": "C.UTF-8"})
    return Dump(split_sections(decoded(done.stdout), root), decoded(done.stderr))


@dataclass(frozen=True)
class Case:
    """One file dumped with one option set by one version: the real tool's lines and replog's."""

    version: str
    options: str
    file: str
    real: list[str] | None
    replog: list[str] | None
    real_died: bool

    @property
    def identical(self) -> bool:
        return self.real == self.replog

    def diff(self, context: int = 0, limit: int = 12) -> str:
        """The first differing lines, for a failure message."""
        lines = difflib.unified_diff(self.real or [], self.replog or [], "kafka-dump-log", "replog", n=context,
                                     lineterm="")
        return "\n".join(line[:400] for line in list(lines)[:limit])


def compare(version: str, root: Path, files: Sequence[str], options: Sequence[str], name: str,
            replog: Path) -> list[Case]:
    """The real tool and replog over `files` with `options`, one JVM and one replog process, side by side."""
    with ThreadPoolExecutor(2) as pool:
        real_run = pool.submit(run_real, version, root, files, options)
        mine = pool.submit(run_replog, replog, emulated_version(version), root, files, options).result()
        real = real_run.result()
    return [Case(version, name, f, real.sections.get(f), mine.sections.get(f), f in real.failed) for f in files]


def emulated_version(version: str) -> str:
    """`3.9.1` -> `3.9`: what `--kafka-version` takes."""
    return ".".join(version.split(".")[:2])


def tree_state(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under `root` with its size and modification time: what a read-only tool leaves as it was."""
    return {p.relative_to(root).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}
