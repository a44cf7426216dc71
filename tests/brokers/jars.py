"""The broker lab's jars: each Kafka version's broker, tools and one logging backend, resolved once from Maven
Central (through `pom.xml` beside this file) into `~/.cache/replog/brokers/kafka-<version>/`, outside the repository.

RocketMQ's name server, broker, tools, client (and the 5.x controller) resolve the same way, through
`pom-rocketmq.xml`, into `~/.cache/replog/brokers/rocketmq-<version>/`.

`python -m tests.brokers.jars [VERSION ...]` (what `make brokers` runs) resolves every lab version of both products,
or those named (`rocketmq-5.3.3` names a RocketMQ version); a version already resolved costs nothing.
The result is a folder of jars and `classpath.txt`, the jars in sorted order (a `lib/*` wildcard has no defined
order: duplicate classes would load from whichever comes first).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

POM = Path(__file__).with_name("pom.xml")
ROCKETMQ_POM = Path(__file__).with_name("pom-rocketmq.xml")
# The lab's Kafka versions: the last 3.x (ZooKeeper and KRaft, old protocols), the first 4.x, the newest 4.x.
VERSIONS = ("3.9.1", "4.0.2", "4.4.0")
# Kafka 4.0's own distribution ships Log4j2 2.24.3 (its POMs name no Log4j2 jar at runtime).
DEFAULT_LOG4J2 = "2.24.3"
# RocketMQ: 4.9.7 is the newest 4.x whose broker jars Maven Central's mirror serves here (4.9.8's are not:
# docs/reference/real-brokers.md §5); 5.3.3 is the 5.x the reference notes were read at.
ROCKETMQ_VERSIONS = ("4.9.7", "5.3.3")
# RocketMQ 4.9 logs through logback-classic (the broker POM's), 5.x through its own shaded logback.
BINDINGS = ("rocketmq-logback-classic", "slf4j-reload4j", "log4j-slf4j-impl",
             "log4j-slf4j2-impl", "slf4j-log4j12", "logback-classic")
# The kafka-storage test jar holding `LocalTieredStorage` (tiered storage on the local file system), per lab version:
# Maven Central has 3.9.1's and 4.0.2's (`mvn dependency:get ...:kafka-storage:<v>:jar:test`), not 4.4.0's; the
# newest published one, 4.3.0's, does not load in a 4.4.0 broker (NoClassDefFoundError
# org/apache/kafka/common/utils/LogContext: 4.4.0 moved that class), so 4.4.0 has no tiered lab.
TIERED_TEST_JAR = {"3.9.1": "3.9.1", "4.0.2": "4.0.2"}
# The kafka-streams jar for the lab's Streams application (KIP-1071 "streams" groups, on by default at 4.4.0).
STREAMS_JAR = {"4.4.0": "4.4.0"}
LOCAL_TIERED_STORAGE = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"


def cache_root() -> Path:
    """Where downloaded things live: `$REPLOG_CACHE` or `~/.cache/replog`."""
    return Path(os.environ.get("REPLOG_CACHE") or Path.home() / ".cache" / "replog")


def lib_dir(version: str) -> Path:
    return cache_root() / "brokers" / f"kafka-{version}"


def tools_problem() -> str | None:
    """None when Maven and Java are on the PATH, else what is missing (the lab cannot run without both)."""
    missing = [tool for tool in ("mvn", "java") if shutil.which(tool) is None]
    if missing:
        return f"the broker lab needs {' and '.join(missing)} on the PATH (Debian: maven, openjdk-17-jdk-headless)"
    return None


def classpath(version: str) -> str:
    """The version's class path, resolving its jars first when they are not cached yet."""
    lib = resolve(version)
    return (lib / "classpath.txt").read_text().strip()


def _mvn(version: str, *args: str) -> str:
    return _maven(POM, f"-Dkafka.version={version}", *args)


def _maven(pom: Path, *args: str) -> str:
    """Maven on one of the lab's poms; its output, or its failure with the end of what it said."""
    cmd = ["mvn", "-B", "-q", "-f", str(pom), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout[-4000:]}{done.stderr[-4000:]}")
    return done.stdout


def _log4j2_version(version: str, scratch: Path) -> str | None:
    """The Log4j2 version a 4.x tree already holds (or Kafka 4.0's), None for a tree bound to reload4j (3.x)."""
    listing = scratch / "list.txt"
    _mvn(version, "dependency:list", "-DincludeScope=runtime", f"-DoutputFile={listing}")
    text = listing.read_text()
    if "org.slf4j:slf4j-reload4j" in text:
        return None
    found = re.search(r"org\.apache\.logging\.log4j:log4j-core:jar:([\w.\-]+):", text)
    return found.group(1) if found else DEFAULT_LOG4J2


def resolve(version: str) -> Path:
    """The Kafka version's jar folder, filled once (`_resolved_once`), with the Log4j2 its tree holds."""
    def fill(scratch: Path, jars: Path) -> None:
        log4j2 = _log4j2_version(version, scratch)
        profile = [] if log4j2 is None else ["-Plog4j2", f"-Dlog4j2.version={log4j2}"]
        _mvn(version, *profile, *_COPY_RUNTIME, f"-DoutputDirectory={jars}")
    return _resolved_once(f"kafka {version}", lib_dir(version), fill)


_COPY_RUNTIME = ("dependency:copy-dependencies", "-DincludeScope=runtime")


def _resolved_once(product: str, lib: Path, fill: Callable[[Path, Path], None]) -> Path:
    """`lib`, filled once: `fill(scratch, jars)` copies the jars into a scratch folder, `_install` checks them
    and renames the folder into place."""
    if (lib / "classpath.txt").is_file():
        return lib
    lib.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{product.replace(' ', '-')}-", dir=lib.parent))
    try:
        jars = scratch / "jars"
        fill(scratch, jars)
        _install(product, jars, lib)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return lib


def _install(product: str, jars: Path, lib: Path) -> None:
    """Copied jars into place: exactly one logging binding among them, their class path written, the
    folder renamed to `lib` (a half-resolved version never looks cached)."""
    names = sorted(p.name for p in jars.glob("*.jar"))
    bound = [name for name in names if name.startswith(BINDINGS)]
    if len(bound) != 1:
        raise RuntimeError(f"{product}: want exactly one logging binding, found {bound or 'none'}")
    (jars / "classpath.txt").write_text(":".join(str(lib / name) for name in names) + "\n")
    os.replace(jars, lib)


def rocketmq_lib_dir(version: str) -> Path:
    return cache_root() / "brokers" / f"rocketmq-{version}"


def rocketmq_classpath(version: str) -> str:
    """The RocketMQ version's class path, resolving its jars first when they are not cached yet."""
    lib = rocketmq_resolve(version)
    return (lib / "classpath.txt").read_text().strip()


def rocketmq_resolve(version: str) -> Path:
    """The RocketMQ version's jar folder, filled once (scratch folder, checked, renamed into place). The
    controller profile is added from 5.0 on (the 4.x line has no controller)."""
    def fill(_scratch: Path, jars: Path) -> None:
        profile = ["-Pcontroller"] if int(version.split(".")[0]) >= 5 else []
        _maven(ROCKETMQ_POM, f"-Drocketmq.version={version}", *profile, *_COPY_RUNTIME, f"-DoutputDirectory={jars}")
    return _resolved_once(f"rocketmq {version}", rocketmq_lib_dir(version), fill)


def streams_jar(version: str) -> Path:
    """The kafka-streams jar for a lab version, resolved once through the pom's `streams` profile into
    kafka-<version>/streams/ (the jar alone: the Streams application runs on the broker's class path beside it)."""
    return _profile_jar(version, "streams", f"kafka-streams-{STREAMS_JAR[version]}.jar",
                        f"-Dstreams.version={STREAMS_JAR[version]}", "-DincludeArtifactIds=kafka-streams")


def tiered_jar(version: str) -> Path:
    """The kafka-storage test jar (`LocalTieredStorage`) for a lab version, resolved once through the pom's
    `tiered` profile into kafka-<version>/tiered/. Only that jar: its classes need nothing the broker's class
    path lacks (with `dir` configured, `LocalTieredStorage.configure` never touches the clients' test utils)."""
    tiered = TIERED_TEST_JAR.get(version)
    if tiered is None:
        raise RuntimeError(f"kafka {version}: no kafka-storage test jar is known for it (TIERED_TEST_JAR)")
    return _profile_jar(version, "tiered", f"kafka-storage-{tiered}-test.jar", f"-Dtiered.version={tiered}",
                        "-DincludeArtifactIds=kafka-storage", "-DincludeClassifiers=test")


def _profile_jar(version: str, profile: str, name: str, *options: str) -> Path:
    """One jar of a pom profile, resolved once into kafka-<version>/<profile>/ (through a scratch folder, moved
    in whole: a half-copied jar is never found there)."""
    folder = resolve(version) / profile
    jar = folder / name
    if jar.is_file():
        return jar
    scratch = Path(tempfile.mkdtemp(prefix=f".{profile}-", dir=folder.parent))
    try:
        _mvn(version, f"-P{profile}", *options, "dependency:copy-dependencies", "-DexcludeTransitive=true",
             f"-DoutputDirectory={scratch}")
        got = scratch / jar.name
        if not got.is_file():
            raise RuntimeError(f"kafka {version}: {jar.name} not resolved (found {sorted(os.listdir(scratch))})")
        folder.mkdir(exist_ok=True)
        os.replace(got, jar)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return jar


def main(argv: list[str]) -> int:
    problem = tools_problem()
    if problem:
        print(f"broker lab: {problem}", file=sys.stderr)
        return 1
    kafka = [v for v in argv if not v.startswith("rocketmq-")]
    rocketmq = [v.removeprefix("rocketmq-") for v in argv if v.startswith("rocketmq-")]
    for version in kafka if argv else VERSIONS:
        lib = resolve(version)
        print(f"kafka {version}: {lib}")
        if version in TIERED_TEST_JAR:
            print(f"kafka {version}: {tiered_jar(version)} (LocalTieredStorage)")
        if version in STREAMS_JAR:
            print(f"kafka {version}: {streams_jar(version)} (Kafka Streams)")
    for version in rocketmq if argv else ROCKETMQ_VERSIONS:
        lib = rocketmq_resolve(version)
        print(f"rocketmq {version}: {lib}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
