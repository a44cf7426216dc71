"""Evidence: every file read is listed with its size and SHA-256, hashed once; a change while reading is seen."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from replog.recovery.evidence import Evidence


def test_listing_holds_each_file_once_with_its_digest(tmp_path: Path) -> None:
    big, small = tmp_path / "a.log", tmp_path / "b.txt"
    big.write_bytes(os.urandom(3 << 20) + b"tail")
    small.write_bytes(b"x=1\n")
    ev = Evidence()
    with ev.mapped(big) as buf:
        assert len(buf) == big.stat().st_size
    ev.read_small(small)
    ev.read_small(small)
    listing = ev.listing()
    ev.close()
    assert listing == [{"path": str(p), "size": p.stat().st_size, "sha256": hashlib.sha256(p.read_bytes()).hexdigest()}
                       for p in (big, small)]
    assert ev.changed_since() == []


def test_a_file_rewritten_or_removed_after_it_was_read_is_changed(tmp_path: Path) -> None:
    kept, rewritten, removed = (tmp_path / n for n in ("kept", "rewritten", "removed"))
    for p in (kept, rewritten, removed):
        p.write_bytes(b"0123456789")
    ev = Evidence()
    for p in (kept, rewritten, removed):
        ev.read_small(p)
    ev.listing()
    rewritten.write_bytes(b"0123456780")  # same size, other bytes
    os.utime(rewritten, ns=(1, 1))        # even with the old-looking times, ctime moves
    removed.unlink()
    assert sorted(ev.changed_since()) == [str(removed), str(rewritten)]
    ev.close()


def test_without_hashes_the_listing_has_sizes_only(tmp_path: Path) -> None:
    p = tmp_path / "f"
    p.write_bytes(b"abc")
    ev = Evidence(hash_files=False)
    ev.read_small(p)
    assert ev.listing() == [{"path": str(p), "size": 3, "sha256": None}]
