"""Rules of `dump --format dump-log` that are Java's or Kafka's, pinned here without a JVM (the broker lab's
differential test, tests/brokers/test_dump_log_differential.py, measured each of them against the real tool)."""
from __future__ import annotations

from pathlib import Path

import pytest

from replog.toolkit.dump_log import EMULATED, emulation, ignored_by_kafka, java_string, metadata_type_name
from tests.toolkit.terminal import run_piped


@pytest.mark.parametrize("raw, text", [
    (b"caf\xc3\xa9", "café"),
    (b"\xff\xfe\x00bin", "\ufffd\ufffd\x00bin"),
    (b"\xed\xa0\x80", "\ufffd"),              # a UTF-8-encoded surrogate: Java writes one U+FFFD, Python three
    (b"\xc0\xaf", "\ufffd\ufffd"),            # an overlong '/': one per byte, as Python
    (b"\xe2\x82 ", "\ufffd "),                # a cut 3-byte sequence: one for its maximal part
    (b"\xf4\x90\x80\x80", "\ufffd" * 4),      # past U+10FFFF
])
def test_bytes_print_as_javas_new_string_utf8(raw: bytes, text: str) -> None:
    assert java_string({"undecodable": "utf8", "hex": raw.hex()}) == text


def test_metadata_record_types_print_as_kafkas_enum_names() -> None:
    assert metadata_type_name("FeatureLevelRecord") == "FEATURE_LEVEL_RECORD"
    assert metadata_type_name("ZkMigrationStateRecord") == "ZK_MIGRATION_STATE_RECORD"
    assert metadata_type_name("NoOpRecord") == "NO_OP_RECORD"


def test_versions_emulated() -> None:
    assert emulation("4.4.0") is EMULATED["4.4"] and emulation("3.9") is EMULATED["3.9"]
    with pytest.raises(ValueError, match="3.9, 4.0, 4.4"):
        emulation("3.8.1")


def test_files_kafka_dump_log_ignores(tmp_path: Path) -> None:
    """Kafka dispatches on the text after the last `.` of a name: anything else prints its header only, and
    `Ignoring unknown file` on stderr."""
    assert [ignored_by_kafka(n) for n in ("0.log", "0.log.deleted", "leader-epoch-checkpoint", "b.checkpoint",
                                          "0.snapshot", "partition.metadata")] == [False, True, True, False,
                                                                                    False, True]
    epochs = tmp_path / "leader-epoch-checkpoint"
    epochs.write_text("0\n1\n0 0\n")
    res = run_piped(["dump", str(epochs), "--format", "dump-log"])
    assert res.stdout.decode().splitlines() == [f"Dumping {epochs}"]
    assert res.stderr.decode().splitlines() == [f"Ignoring unknown file {epochs}"]
    res = run_piped(["dump", str(epochs), "--format", "dump-log", "--kafka-version", "3.8"])
    assert res.returncode == 2 and b"3.9, 4.0, 4.4" in res.stderr
