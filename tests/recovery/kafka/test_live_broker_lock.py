"""doctor warns when a running broker holds the log dir's .lock (and only then)."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from replog.formats.fileio import locked_by_another_process
from replog.recovery.doctor import diagnose
from tests.recovery.kafka.replicas import replica_dir

HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.lockf(fd, fcntl.LOCK_EX)   # what the broker's FileChannel.tryLock() takes
print("locked", flush=True)
time.sleep(60)
"""


def test_a_held_lock_is_reported_and_a_free_one_is_not(tmp_path: Path) -> None:
    part = replica_dir(tmp_path, "b1", [(0, 0), (1, 0)], hw=2)
    lock = part.parent / ".lock"
    lock.write_bytes(b"")
    assert not locked_by_another_process(lock)
    assert "KAFKA_BROKER_RUNNING" not in {f.code for f in diagnose([part.parent]).findings}
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        assert locked_by_another_process(lock)
        found = [f for f in diagnose([part.parent]).findings if f.code == "KAFKA_BROKER_RUNNING"]
        assert len(found) == 1 and found[0].severity.value == "warning"
    finally:
        holder.kill()
        holder.wait()
    deadline = time.monotonic() + 10
    while locked_by_another_process(lock) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not locked_by_another_process(lock)
    assert lock.read_bytes() == b""
