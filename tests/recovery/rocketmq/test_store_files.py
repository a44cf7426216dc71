"""Every regular file under a store is in `doctor`'s evidence listing (the manifest), features replog names but does
not check are reported once per path (not as UNKNOWN_FILE), and a file nothing knows is UNKNOWN_FILE exactly once."""
from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from replog.recovery.doctor import diagnose
from tests.recovery.rocketmq.independent import Store


def store_with_extras(tmp_path: Path) -> Path:
    s = Store(file_size=4096)
    s.append("T", 0, b"x")
    root = s.write(tmp_path / "store")
    (root / "lock").write_text("lock")
    (root / "abort.bak").write_bytes(b"")
    (root / "config").mkdir()
    (root / "config" / "topics.json").write_text('{"topicConfigTable":{}}')
    (root / "config" / "topics.json.bak").write_text('{"topicConfigTable":{}}')
    (root / "config" / "transactionMetrics").write_text("{}")
    for rel in ("compaction/position-checkpoint", "compaction/compactionLog/T/0/00000000000000000000",
                "timerlog/00000000000000000000"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b"\0" * 16)
    (root / "timerwheel").write_bytes(b"\0" * 16)
    (root / "stray.bin").write_bytes(b"?")
    return root


def test_every_file_listed_features_named_unknown_once(tmp_path: Path) -> None:
    root = store_with_extras(tmp_path)
    report = diagnose([root])
    listed = {Path(str(e["path"])).resolve() for e in report.inputs}
    on_disk = {(Path(d) / n).resolve() for d, _, names in os.walk(root) for n in names}
    assert on_disk <= listed, f"not in the manifest: {sorted(on_disk - listed)}"
    unknown = [f.path for f in report.findings if f.code == "UNKNOWN_FILE"]
    assert unknown == [str(root / "stray.bin")], f"only the stray file is unknown, once: {unknown}"
    named = Counter(Path(f.path).relative_to(root).as_posix() for f in report.findings
                    if f.code == "ROCKETMQ_FEATURE_NOT_CHECKED")
    assert named == {"compaction": 1, "config/transactionMetrics": 1}, f"one finding per feature path: {named}"
    timer_codes = {f.code for f in report.findings if f.code.startswith("ROCKETMQ_TIMER_")}
    assert "ROCKETMQ_TIMER_WHEEL_INVALID" in timer_codes, f"the timer files are checked, not only named: {timer_codes}"
