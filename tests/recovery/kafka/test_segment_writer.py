"""The streaming writer: byte-identical to the reference writer, from ranges of files anywhere in them."""
from __future__ import annotations

import errno
import os
import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.formats import filecopy
from replog.formats.errors import UnwritableOutput
from replog.formats.kafka import batch as v2
from replog.recovery.kafka.segment_writer import ByteRun, write_partition_runs
from tests.recovery.kafka.reference_writer import reference_write_partition
from tests.recovery.kafka.writer_cases import FEW, OPTIONS, options, partitions, scratch, tree

TS = 1_700_000_000_000


@contextmanager
def compiled_if(on: bool) -> Iterator[None]:
    """Run the writer's compiled kernels (numba) even on small inputs, or leave the size rule alone."""
    if not on:
        yield
        return
    with mock.patch("replog.recovery.kafka.segment_writer.use_fast_walk", lambda size: True):
        yield


def runs_over_files(root: Path, batches: list[bytes], rnd: random.Random) -> list[ByteRun]:
    """The batches spread over a few files, each run between unrelated bytes (runs start anywhere)."""
    runs: list[ByteRun] = []
    i = 0
    while i < len(batches):
        j = rnd.randint(i + 1, len(batches))
        path = root / f"input-{len(runs)}.bin"
        prefix, suffix = os.urandom(rnd.choice([0, 5, 61])), os.urandom(rnd.choice([0, 9]))
        body = b"".join(batches[i:j])
        path.write_bytes(prefix + body + suffix)
        runs.append(ByteRun(str(path), len(prefix), len(prefix) + len(body), 0))
        i = j
    return runs


# --- the writer equals the reference --------------------------------------------------------------


@FEW
@given(partitions(), OPTIONS, st.booleans(), st.integers(0, 2**32))
def test_written_from_runs_byte_identical(batches: list[bytes], drawn: dict[str, Any], compiled: bool,
                                          seed: int) -> None:
    with scratch() as root:
        runs = runs_over_files(root, batches, random.Random(seed))
        try:
            expected = reference_write_partition(root / "ref", batches, **options(drawn))
        except ValueError as e:  # the reference refuses (an offset below its segment's base): so must we
            with compiled_if(compiled), pytest.raises(ValueError) as got:
                write_partition_runs(root / "new", runs, **options(drawn))
            assert str(got.value) == str(e)
            assert list((root / "new").iterdir()) == []
            return
        with compiled_if(compiled):
            written = write_partition_runs(root / "new", runs, **options(drawn))
        assert tree(root / "new") == tree(root / "ref")
        assert (written.segment_bases, written.log_end_offset, written.files) == (
            expected.segment_bases, expected.log_end_offset, expected.files)
        assert written.epochs.entries == expected.epochs.entries


def test_tiny_segments_roll_at_every_batch(tmp_path: Path) -> None:
    batches = [v2.build_batch([v2.Record(i, TS + i, None, b"x" * 50)], base_offset=i) for i in range(20)]
    written = write_partition_runs(tmp_path / "p-0", runs_over_files(tmp_path, batches, random.Random(1)),
                                   segment_bytes=1)
    assert written.segment_bases == list(range(20)) and written.log_end_offset == 20
    reference_write_partition(tmp_path / "ref", batches, segment_bytes=1)
    assert tree(tmp_path / "p-0") == tree(tmp_path / "ref")


def test_relative_offsets_past_32_bits_roll(tmp_path: Path) -> None:
    far = 2**31 + 10
    batches = [v2.build_batch([v2.Record(o, TS, None, b"x")], base_offset=o) for o in (0, 1, far, far + 1)]
    written = write_partition_runs(tmp_path / "p-0", runs_over_files(tmp_path, batches, random.Random(6)))
    assert written.segment_bases == [0, far]
    reference_write_partition(tmp_path / "ref", batches)
    assert tree(tmp_path / "p-0") == tree(tmp_path / "ref")


def test_offsets_below_the_segment_base_are_refused_as_the_reference_refuses(tmp_path: Path) -> None:
    batches = [v2.build_batch([v2.Record(o, TS, None, b"x")], base_offset=o) for o in (5, 3)]
    with pytest.raises(ValueError, match="outside the 32-bit range") as expected:
        reference_write_partition(tmp_path / "ref", batches, interval=0, start_offset=5)
    with pytest.raises(ValueError) as got:
        write_partition_runs(tmp_path / "p-0", runs_over_files(tmp_path, batches, random.Random(2)), interval=0,
                             start_offset=5)
    assert str(got.value) == str(expected.value)
    assert list((tmp_path / "p-0").iterdir()) == []


def test_a_run_that_is_not_whole_batches_is_refused_and_nothing_is_left(tmp_path: Path) -> None:
    data = b"".join(v2.build_batch([v2.Record(i, TS, None, b"x" * 30)], base_offset=i) for i in range(10))
    src = tmp_path / "in.log"
    src.write_bytes(data)
    with pytest.raises(ValueError, match="no whole batch"):
        write_partition_runs(tmp_path / "p-0", [ByteRun(str(src), 0, len(data) - 3, 0)], segment_bytes=200)
    assert list((tmp_path / "p-0").iterdir()) == []


# --- copies, their fallbacks, verification ----------------------------------------------------------


def some_batches() -> list[bytes]:
    return [v2.build_batch([v2.Record(i * 2 + k, TS + i, None, b"y" * 40) for k in range(2)], base_offset=i * 2,
                           partition_leader_epoch=i // 10) for i in range(60)]


@pytest.mark.parametrize("unavailable", [(), ("copy_file_range",), ("copy_file_range", "sendfile")])
def test_every_copy_method_writes_the_same_bytes(tmp_path: Path, unavailable: tuple[str, ...]) -> None:
    """Where the kernel refuses a method (EXDEV, ENOSYS...), the next one writes the same files."""
    batches = some_batches()
    reference_write_partition(tmp_path / "ref", batches, segment_bytes=1500)
    used: list[str] = []
    real_copy = filecopy.OutputFile._copy_some

    def copy_some(self: filecopy.OutputFile, src: int, offset: int, count: int) -> int:
        n = real_copy(self, src, offset, count)
        used.append(self.method)
        return n

    def refuse(code: int) -> Any:
        def call(*_: Any) -> int:
            raise OSError(code, os.strerror(code))
        return call

    patches = [mock.patch.object(filecopy.OutputFile, "_copy_some", copy_some)]
    if "copy_file_range" in unavailable:
        patches.append(mock.patch.object(os, "copy_file_range", refuse(errno.EXDEV)))
    if "sendfile" in unavailable:
        patches.append(mock.patch.object(os, "sendfile", refuse(errno.ENOSYS)))
    for p in patches:
        p.start()
    try:
        write_partition_runs(tmp_path / "p-0", runs_over_files(tmp_path, batches, random.Random(3)),
                             segment_bytes=1500)
    finally:
        for p in patches:
            p.stop()
    assert tree(tmp_path / "p-0") == tree(tmp_path / "ref")
    expected = [m for m in filecopy.METHODS if m not in unavailable][0]
    assert used and set(used) == {expected}


def test_a_real_io_error_is_raised_not_hidden(tmp_path: Path) -> None:
    def broken(*_: Any) -> int:
        raise OSError(errno.EIO, "I/O error")

    runs = runs_over_files(tmp_path, some_batches(), random.Random(4))
    # reported as what it is, naming the output (an ordinary error, exit 2, at the command line)
    with mock.patch.object(os, "copy_file_range", broken), pytest.raises(UnwritableOutput, match="I/O error"):
        write_partition_runs(tmp_path / "p-0", runs)
    assert list((tmp_path / "p-0").iterdir()) == []


def test_a_copy_that_writes_other_bytes_fails_verification_and_leaves_nothing(tmp_path: Path) -> None:
    """A copy that lands the wrong bytes (here: one byte off in the source) is caught by the checksum."""
    real = os.copy_file_range

    def off_by_one(src: int, dst: int, count: int, offset_src: int | None = None, *rest: Any) -> int:
        return real(src, dst, count, (offset_src or 0) + 1, *rest)

    pdir, runs = tmp_path / "p-0", runs_over_files(tmp_path, some_batches(), random.Random(5))
    with mock.patch.object(os, "copy_file_range", off_by_one), pytest.raises(filecopy.VerificationError):
        write_partition_runs(pdir, runs, segment_bytes=1500)
    assert list(pdir.iterdir()) == []


def test_output_file_discards_its_temporary_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "x.log"
    with pytest.raises(RuntimeError), filecopy.OutputFile(target) as out:
        out.write(b"abc")
        raise RuntimeError("stop")
    assert list(tmp_path.iterdir()) == []
    with filecopy.OutputFile(target) as out:
        out.write(b"abc")
    assert target.read_bytes() == b"abc" and list(tmp_path.iterdir()) == [target]
