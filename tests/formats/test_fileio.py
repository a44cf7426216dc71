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
