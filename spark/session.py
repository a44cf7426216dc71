"""SparkSession bootstrap: embedded `local[*]` by default, any `--master` otherwise.

Checks Java first (a clear sentence instead of a JVM stack trace), points the
Python workers at the running interpreter (the venv's packages), keeps the
console quiet, and on a cluster ships this project to the executors as a zip of
`formats/`, `recovery/` and `spark/` so they need only Python with pyarrow (and
pandas, which pyspark's Arrow path imports).

Quiet: the JVM this module starts writes its stdout and stderr into a pipe that
a thread reads line by line, so nothing of it lands on our stdout (data only)
or glues itself onto a progress bar; Spark's own logging is set to
`DEFAULT_LOG_LEVEL` by a log4j2 file given to the JVM before it logs anything.
Stoppable: `stop_session` stops the context and the JVM it runs in, on every
exit path, with Ctrl-C held back while it does.
"""
from __future__ import annotations

import atexit
import contextlib
import hashlib
import importlib
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from replog.formats.errors import ReplogError
from replog.spark.java import java_problem

PACKAGES = ("formats", "recovery", "spark")  # what executors import, under `replog.`
SHIPPED = ("*.py", "__pycache__/*.nbi", "__pycache__/*.nbc")   # the code and numba's compiled kernels
LOG_LEVELS = ("OFF", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE", "ALL")   # log4j's, quietest first
DEFAULT_LOG_LEVEL = "ERROR"
STOP_SECONDS = 20.0   # for the context to stop, then as long again for the JVM to exit before it is killed
LOCAL_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"   # `spark_conf` says why

# Lines the JVM prints outside Spark's logging (the JDK, the REPL hints of Spark's launcher): never shown.
NOISE = re.compile(r"WARNING: Using incubator modules|Using Spark's default log4j profile"
                   r"|Setting default log level to|To adjust logging level use sc\.setLogLevel")

Sink = Callable[[str], None]
T = TypeVar("T")


def log4j2_properties(level: str) -> str:
    """Spark's log4j2 setup: one console appender on stderr, everything at `level`.

    PySpark's gateway counts as a shell: unless its logger has a level of its own, Spark filters the console
    at WARN whatever the root's level is, and says so on stderr ("Setting default log level").
    """
    return "\n".join([
        "status = error",
        "appender.console.type = Console",
        "appender.console.name = console",
        "appender.console.target = SYSTEM_ERR",
        "appender.console.layout.type = PatternLayout",
        "appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex",
        f"rootLogger.level = {level}",
        "rootLogger.appenderRef.stderr.ref = console",
        "logger.shell.name = org.apache.spark.api.python.PythonGatewayServer",
        f"logger.shell.level = {level}",
        "",
    ])


def _write_stderr(line: str) -> None:
    """The default sink: `sys.stderr` looked up per line, so a live progress bar's proxy prints it above the bar."""
    sys.stderr.write(line)
    sys.stderr.flush()


@dataclass
class JvmOutput:
    """The thread that reads the JVM's merged stdout/stderr and passes on what is not `NOISE`."""

    fd: int
    sink: Sink
    muted: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def start(self) -> None:
        self.thread = threading.Thread(target=self._pump, name="replog-jvm-output", daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        with open(self.fd, encoding="utf-8", errors="replace", closefd=True) as lines:
            for line in lines:
                if not self.muted.is_set() and not NOISE.search(line):
                    with contextlib.suppress(Exception):   # a closed stderr must not kill the reader: the JVM
                        self.sink(line)                    # would block on a full pipe

    def join(self, timeout: float) -> None:
        if self.thread is not None:
            self.thread.join(timeout)


@dataclass
class Jvm:
    """The JVM this module started: its process, the reader of its output, its log4j2 file's folder."""

    proc: subprocess.Popen[bytes]
    output: JvmOutput
    conf_dir: Path
    level: str
    sigint_before: Any = None   # the SIGINT handler `watch_sigint` replaced, put back by `stop_session`
    interrupted: threading.Event = field(default_factory=threading.Event)

    def watch_sigint(self) -> None:
        """Ctrl-C is noted (and at a quiet level silences the JVM at once), then interrupts as usual.

        The py4j call it cuts short makes Spark abort the running job and log that as an ERROR
        with a stack trace before replog has even begun to stop it; and a py4j call made after it
        (a `finally`'s cleanup) may fail on the cut connection, hiding the KeyboardInterrupt:
        `sigint_seen` tells the caller what really happened.
        """
        if threading.current_thread() is not threading.main_thread():
            return

        def interrupt(signum: int, frame: Any) -> None:
            self.interrupted.set()
            if _quiet(self.level):
                self.output.muted.set()
            raise KeyboardInterrupt

        self.sigint_before = signal.signal(signal.SIGINT, interrupt)


_jvm: Jvm | None = None


class Py4jInterrupted(logging.Filter):
    """Drops what py4j logs, with a traceback, on the root logger for each call Ctrl-C cut short."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(("KeyboardInterrupt while sending command",
                                               "Exception while sending command"))


PY4J_INTERRUPTED = Py4jInterrupted()


def is_local(master: str | None) -> bool:
    return master is None or master.startswith("local")


def check_log_level(level: str) -> str:
    """`level` in log4j's spelling; ReplogError (exit 2) for a name log4j does not know."""
    name = level.upper()
    if name not in LOG_LEVELS:
        raise ReplogError(f"unknown Spark log level {level!r}; one of {', '.join(LOG_LEVELS)}")
    return name


def get_session(master: str | None = None, app_name: str = "replog-fleet", log_level: str = DEFAULT_LOG_LEVEL,
                sink: Sink | None = None, conf: dict[str, str] | None = None) -> Any:
    """A configured SparkSession; raises ReplogError when Java or pyspark is missing.

    `log_level` is Spark's (log4j) level; the JVM's output goes line by line to `sink` (default stderr).
    Stop it with `stop_session`, which also ends the JVM; a Ctrl-C while the JVM starts is held
    back until it is up, then the JVM is stopped and the KeyboardInterrupt goes on.
    """
    level = check_log_level(log_level)
    problem = java_problem()
    if problem:
        raise ReplogError(problem)
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise ReplogError("fleet scans need pyspark (pip install 'pyspark>=3.5' 'pandas>=2.2,<3')") from None
    for var in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):
        if not os.environ.get(var):   # set but empty would make Spark run the program ""
            os.environ[var] = sys.executable
    if is_local(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")   # no "hostname resolves to a loopback address"
    with held_sigint() as interrupted:   # on its own thread: pyspark puts its SIGINT handler only on the main one
        spark = on_own_thread(lambda: _start(SparkSession, master, app_name, level, sink, conf or {}))
    if interrupted():
        stop_session(spark)
        raise KeyboardInterrupt
    if _jvm is not None:
        _jvm.watch_sigint()
    if not is_local(master):
        spark.sparkContext.addPyFile(str(project_zip(ship_dir())))
    return spark


def spark_conf(master: str | None, app_name: str, log4j: Path, given: dict[str, str]) -> dict[str, str]:
    """The session's settings: ours, then the user's (`--conf`), which win; our log4j file is added to
    any driver Java options given.

    An embedded (local) JVM that is given no Java options of the user's runs its JIT's first tier only
    and the serial collector: a fleet scan's JVM mostly schedules tasks and plans a few queries, the
    Python tasks do the reading, and on two cores the optimizing compiler and the parallel collector's
    threads took more CPU than the scan (user CPU of a sample-fleet scan 32 s -> 19 s here)."""
    conf = {"spark.app.name": app_name, "spark.master": master or "local[*]",
            "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            "spark.sql.execution.arrow.pyspark.enabled": "true", "spark.sql.adaptive.enabled": "true"}
    if is_local(master):
        conf["spark.sql.shuffle.partitions"] = str(max(2, 2 * (os.cpu_count() or 2)))
    java = given.get("spark.driver.extraJavaOptions")
    if java is None and is_local(master):
        java = LOCAL_JVM_OPTIONS
    conf.update(given)
    conf["spark.driver.extraJavaOptions"] = f"{java or ''} -Dlog4j2.configurationFile={log4j}".strip()
    return conf


def _start(session_class: Any, master: str | None, app_name: str, level: str, sink: Sink | None,
           given: dict[str, str]) -> Any:
    """The JVM (unless one runs already) and the session in it, at `level`."""
    conf_dir = Path(tempfile.mkdtemp(prefix="replog-spark-"))
    atexit.register(shutil.rmtree, conf_dir, True)
    (conf_dir / "log4j2.properties").write_text(log4j2_properties(level))
    conf = spark_conf(master, app_name, conf_dir / "log4j2.properties", given)
    try:
        _launch_jvm(conf, conf_dir, level, sink or _write_stderr)
        builder = session_class.builder
        for key, value in conf.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
    except Exception as e:  # noqa: BLE001 - py4j/JVM start-up failures have many types
        _end_jvm(STOP_SECONDS)
        raise ReplogError(f"could not start Spark (master {master or 'local[*]'}): {e}") from None
    spark.sparkContext.setLogLevel(level)
    return spark


def on_own_thread(fn: Callable[[], T]) -> T:
    """`fn()` run on a new thread and waited for; its exception raised here."""
    value: list[T] = []
    error: list[BaseException] = []

    def run() -> None:
        try:
            value.append(fn())
        except BaseException as e:  # noqa: BLE001 - handed to the caller as it is
            error.append(e)

    thread = threading.Thread(target=run, name="replog-spark-start", daemon=True)
    thread.start()
    thread.join()
    if error:
        raise error[0]
    return value[0]


def _launch_jvm(conf: dict[str, str], conf_dir: Path, level: str, sink: Sink) -> None:
    """Start the py4j gateway's JVM with its output into a pipe we read; nothing when a JVM runs already."""
    global _jvm
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    read_end, write_end = os.pipe()
    output = JvmOutput(read_end, sink)
    output.start()
    try:
        # its own process group: a terminal's Ctrl-C reaches replog alone, which stops the JVM and its Python
        # workers in order, instead of workers dying mid-task and the JVM reporting each with a stack trace
        gateway = launch_gateway(SparkConf(loadDefaults=False).setAll(list(conf.items())),
                                 popen_kwargs={"stdout": write_end, "stderr": write_end, "process_group": 0})
    finally:
        os.close(write_end)   # the JVM holds its own copy; EOF reaches the reader when the JVM ends
    SparkContext._ensure_initialized(gateway=gateway)
    _jvm = Jvm(gateway.proc, output, conf_dir, level)
    if _quiet(level):
        logging.getLogger().addFilter(PY4J_INTERRUPTED)


def sigint_seen() -> bool:
    """Whether Ctrl-C was pressed since this module started the running JVM."""
    return _jvm is not None and _jvm.interrupted.is_set()


def stop_session(spark: Any, timeout: float = STOP_SECONDS) -> None:
    """Stop `spark` and end the JVM this module started, bounded in time; Ctrl-C is held back meanwhile.

    The stop runs on its own thread: the main thread's py4j connection may have been cut by a
    KeyboardInterrupt in the middle of a call, and would answer the next call with the old reply.
    """
    jvm = _jvm
    with held_sigint():
        if jvm is not None and _quiet(jvm.level):
            jvm.output.muted.set()   # cancelled tasks' complaints are not news to someone who pressed Ctrl-C
        stopper = threading.Thread(target=_stop_context, args=(spark,), name="replog-spark-stop", daemon=True)
        stopper.start()
        stopper.join(timeout)
        _end_jvm(timeout)
    if jvm is not None and jvm.sigint_before is not None:
        signal.signal(signal.SIGINT, jvm.sigint_before)


def _stop_context(spark: Any) -> None:
    with contextlib.suppress(Exception):
        spark.sparkContext.cancelAllJobs()
    with contextlib.suppress(Exception):
        spark.stop()


def _end_jvm(timeout: float) -> None:
    """Close the gateway and end the JVM: EOF on its stdin asks it to exit; SIGTERM, then SIGKILL if it does not."""
    global _jvm
    from pyspark import SparkContext

    jvm, _jvm = _jvm, None
    gateway = SparkContext._gateway
    if jvm is None or gateway is None or getattr(gateway, "proc", None) is not jvm.proc:
        return   # a JVM someone else started (spark-submit, a caller's session): theirs to end
    closer = threading.Thread(target=_close_gateway, args=(gateway,), daemon=True)
    closer.start()
    closer.join(timeout)
    with SparkContext._lock:
        SparkContext._gateway = None
        SparkContext._jvm = None
    _end_process(jvm.proc, timeout)
    jvm.output.join(timeout)
    shutil.rmtree(jvm.conf_dir, ignore_errors=True)
    logging.getLogger().removeFilter(PY4J_INTERRUPTED)


def _quiet(level: str) -> bool:
    """The default level or quieter: a Ctrl-C's aftermath (cancelled tasks, cut calls) is not shown."""
    return LOG_LEVELS.index(level) <= LOG_LEVELS.index(DEFAULT_LOG_LEVEL)


def _close_gateway(gateway: Any) -> None:
    with contextlib.suppress(Exception):
        gateway.shutdown()


def _end_process(proc: subprocess.Popen[bytes], timeout: float) -> None:
    with contextlib.suppress(OSError):
        if proc.stdin is not None:
            proc.stdin.close()
    for end in (None, proc.terminate, proc.kill):
        if end is not None:
            with contextlib.suppress(OSError):
                end()
        try:
            proc.wait(timeout)
            return
        except subprocess.TimeoutExpired:
            continue


@contextlib.contextmanager
def held_sigint() -> Iterator[Callable[[], bool]]:
    """Hold Ctrl-C back for a block that must finish (starting or stopping the JVM); yields `was it pressed`.

    Whatever handler was in place before is put back after (pyspark's own, installed when a context
    starts, makes a py4j call from inside the signal handler, which breaks the interrupted call).
    """
    pressed: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, lambda signum, frame: pressed.append(signum))
    try:
        yield lambda: bool(pressed)
    finally:
        signal.signal(signal.SIGINT, before if before is not None else signal.default_int_handler)


def project_zip(out_dir: Path) -> Path:
    """A zip of the packages executors import, for `addPyFile` (or `spark-submit --py-files`), named by
    a hash of its content (`replog-<sha>.zip`) and written only when missing: the same code ships as
    the same file, which an executor extracts once per host (`job.task_function`).

    With the code go the kernels numba compiled here, as they are in the packages' `__pycache__`
    (its in-tree cache): an executor whose CPU matches loads them instead of compiling its own
    (numba checks the source's content and the machine before it uses an entry)."""
    files = [(f"replog/{pkg}/{path.relative_to(root).as_posix()}", path.read_bytes())
             for pkg in PACKAGES
             for root in [Path(importlib.import_module(f"replog.{pkg}").__path__[0])]
             for path in sorted(p for pattern in SHIPPED for p in root.rglob(pattern))]
    digest = hashlib.sha256()
    for name, data in files:
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    target = out_dir / f"replog-{digest.hexdigest()[:16]}.zip"
    if target.is_file():
        return target
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkstemp(prefix=".replog-", suffix=".zip", dir=out_dir)[1])
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.mkdir("replog")  # zipimport finds the `replog` namespace only by its directory entry
            for name, data in files:
                zf.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def ship_dir() -> Path:
    """Where the driver keeps the zips it ships (`REPLOG_CACHE`, else ~/.cache/replog): one per version
    of the code, not one per run."""
    root = os.environ.get("REPLOG_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "replog")
    return Path(root) / "ship"
