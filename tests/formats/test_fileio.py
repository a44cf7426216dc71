"""Read-only mapping helpers: released pages read back the same; other buffers are left alone."""
from __future__ import annotations

import mmap
import os
from pathlib import Path

from replog.formats.fileio import mapped, release_pages


def test_released_pages_fault_back_in_unchanged(tmp_path: Path) -> None:
    data = os.urandom(64 * mmap.PAGESIZE + 123)
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:  # over the pread limit, so it is really mapped
        f.truncate(32 << 20)
        f.seek(5 << 20)
        f.write(data)
    with mapped(big) as buf:
        assert isinstance(buf.obj, mmap.mmap)
        before = bytes(buf[5 << 20:(5 << 20) + len(data)])
        release_pages(buf, 0, len(buf))
        assert bytes(buf[5 << 20:(5 << 20) + len(data)]) == before == data
    with mapped(path) as small:
        release_pages(small, 0, len(small))  # a pread copy: nothing to release, nothing breaks
        assert bytes(small) == data
    release_pages(data, 0, len(data))


def test_only_regular_files_are_opened_and_others_are_named(tmp_path: Path) -> None:
    import pytest

    from replog.formats.errors import NotRegularFile
    from replog.formats.fileio import EntryType, entry_type, open_regular, read_small

    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "dangling").symlink_to("nowhere")
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_bytes(b"x")
    expected = {"fifo": EntryType.FIFO, "loop": EntryType.SYMLINK_LOOP, "dangling": EntryType.DANGLING_SYMLINK,
                "dir": EntryType.DIRECTORY, "file": EntryType.REGULAR, "absent": EntryType.MISSING}
    assert {name: entry_type(tmp_path / name) for name in expected} == expected
    for name in ("fifo", "loop", "dangling", "dir"):
        with pytest.raises(NotRegularFile, match=expected[name].value):  # the FIFO must not block here
            with mapped(tmp_path / name):
                pass
        with pytest.raises(NotRegularFile):
            read_small(tmp_path / name)
    if os.path.exists("/dev/zero"):
        assert entry_type("/dev/zero") is EntryType.CHARACTER_DEVICE
        with pytest.raises(NotRegularFile, match="character device"):
            open_regular("/dev/zero")
    os.close(open_regular(tmp_path / "file"))
