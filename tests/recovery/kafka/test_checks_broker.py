"""Root-file checks of a broker log dir: dirs the broker itself does not load as partitions are not defects."""
from __future__ import annotations

from pathlib import Path

from replog.recovery.doctor import diagnose
from tests.recovery.kafka.log_dirs import build_log_dir


def test_tiered_storage_index_cache_is_not_a_bad_partition_dir(tmp_path: Path) -> None:
    build_log_dir(tmp_path)
    (tmp_path / "remote-log-index-cache").mkdir()
    (tmp_path / "not-a-partition").mkdir()
    bad = [f.path for f in diagnose([tmp_path]).findings if f.code == "KAFKA_BAD_PARTITION_DIR"]
    assert bad == [str(tmp_path / "not-a-partition")]
