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


# BLAKE3's published test vectors (github.com/BLAKE3-team/BLAKE3, test_vectors/test_vectors.json): input byte i
# is i % 251; the first 32 bytes of each extended output are the hash.
BLAKE3_VECTORS = {
    0: "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262",
    1: "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213",
    1024: "42214739f095a406f3fc83deb889744ac00df831c10daa55189b5d121c855af7",
}


def test_blake3_evidence_matches_the_published_vectors(tmp_path: Path) -> None:
    """`doctor --hash blake3`: each file under its BLAKE3 (the reference's own vectors), "sha256" null."""
    files = {}
    for n in BLAKE3_VECTORS:
        files[n] = tmp_path / f"v{n}.bin"
        files[n].write_bytes(bytes(i % 251 for i in range(n)))
    ev = Evidence(algorithm="blake3")
    for path in files.values():
        ev.read_small(path)
    listing = {e["path"]: e for e in ev.listing()}
    ev.close()
    for n, path in files.items():
        entry = listing[str(path)]
        assert entry["blake3"] == BLAKE3_VECTORS[n], n
        assert entry["sha256"] is None, n
        assert entry["size"] == n, n
