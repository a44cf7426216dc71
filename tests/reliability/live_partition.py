"""The two sides of the live-broker tests, each run as its own process (helpers, not tests).

`python -m tests.reliability.live_partition write PDIR SECONDS SEED`: appends
batches to the active (last) segment of PDIR and now and then truncates it to
an earlier batch boundary, as a broker's follower truncation does, until the
time is up. `... read PDIR SECONDS`: walks and summarises the partition over
and over and prints one JSON line: rounds, the findings seen on sealed
segments, the codes seen on the active one.

`... churn SEGMENT SECONDS SEED`: the large case. SEGMENT (built by
`big_active_partition`) is cut back to a batch boundary in its first few MiB
and written out again to its full size, over and over, as fast as a broker
would after a follower truncation; a reader that maps it dies of SIGBUS when a
page it touches is cut away. Prints "ready" once it has started.
"""
from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

from replog.formats.kafka import batch as v2
from replog.formats.kafka import names

TS = 1_700_000_000_000
BIG_ACTIVE = 24 << 20


def _batch(offset: int, rng: random.Random) -> bytes:
    n = rng.randint(1, 20)
    recs = [v2.Record(offset + i, TS + offset + i, b"k%d" % (offset + i), rng.randbytes(rng.randint(10, 400)))
            for i in range(n)]
    return v2.build_batch(recs, base_offset=offset, partition_leader_epoch=5)


def write(pdir: Path, seconds: float, seed: int) -> None:
    rng = random.Random(seed)
    active = sorted(pdir.glob("*.log"))[-1]
    base = names.parse_segment_file_name(active.name).base_offset
    ends = [(0, base)]                     # (byte position, next offset) at every batch boundary
    deadline = time.monotonic() + seconds
    fd = os.open(active, os.O_WRONLY)
    try:
        while time.monotonic() < deadline:
            if rng.random() < 0.15 and len(ends) > 1:
                pos, nxt = ends[rng.randrange(len(ends) - 1)]   # follower truncation
                os.ftruncate(fd, pos)
                ends = [e for e in ends if e[0] <= pos]
            else:
                pos, nxt = ends[-1]
                data = _batch(nxt, rng)
                cut = rng.randint(1, len(data)) if rng.random() < 0.3 else len(data)
                os.pwrite(fd, data[:cut], pos)               # a torn append, completed next round
                if cut == len(data):
                    from replog.formats.kafka.segment import SegmentWalk
                    info = next(SegmentWalk(data, "<w>").batches())
                    ends.append((pos + len(data), info.next_offset))
                else:
                    os.pwrite(fd, data[cut:], pos + cut)
                    info_end = pos + len(data)
                    from replog.formats.kafka.segment import SegmentWalk
                    ends.append((info_end, next(SegmentWalk(data, "<w>").batches()).next_offset))
            if ends[-1][0] > 2 << 20:
                os.ftruncate(fd, 0)
                ends = [(0, base)]
            time.sleep(rng.uniform(0, 0.002))
    finally:
        os.close(fd)


def read(pdir: Path, seconds: float) -> dict:
    from replog.recovery.kafka.logdir import summarize_partition
    from replog.recovery.kafka.replica import load_replica
    segs = sorted(pdir.glob("*.log"))
    active = str(segs[-1])
    sealed_findings: list[dict] = []
    active_codes: set[str] = set()
    rounds = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        part = summarize_partition(pdir)
        rep = load_replica(pdir, "live")
        for f in list(part.findings) + list(rep.findings) + [f for s in part.segments for f in s.findings]:
            if f.path == active:
                active_codes.add(f.code)
            elif f.path.endswith(".log"):
                sealed_findings.append(f.to_dict())
        rounds += 1
    return {"rounds": rounds, "sealed_findings": sealed_findings[:20], "active_codes": sorted(active_codes)}


# --- a 24 MiB active segment ---------------------------------------------------------------------


def big_active_partition(root: Path, size: int = BIG_ACTIVE) -> Path:
    """A log dir `root/live` holding `t-0`: small sealed segments of offsets 0..29, then an active
    segment of about `size` bytes of 8 KiB batches from offset 30 (64 distinct batches, tiled with their
    base offsets restamped: the base offset lies outside a batch's CRC). Returns the partition dir."""
    import struct

    from tests.recovery.kafka.replicas import replica_dir
    pdir = replica_dir(root, "live", [(o, 0) for o in range(30)], hw=30, segment_bytes=600)
    rng = random.Random(24)
    templates = [v2.build_batch([v2.Record(i, TS + i, b"k%d" % i, rng.randbytes(2000)) for i in range(4)],
                                base_offset=0, partition_leader_epoch=1) for _ in range(64)]
    out, offset = bytearray(), 30
    while len(out) < size:
        at = len(out)
        out += templates[offset % 64]
        struct.pack_into(">q", out, at, offset)
        offset += 4
    (pdir / names.segment_file_name(30, "log")).write_bytes(out)
    return pdir


def churn(segment: Path, seconds: float, seed: int) -> None:
    """Cut `segment` back and write it out again until the time is up (see the module docstring)."""
    from replog.formats.kafka.segment import SegmentWalk
    data = segment.read_bytes()
    ends = [info.end for info in SegmentWalk(data, str(segment)).batches()]
    early = [e for e in ends if e < 4 << 20]
    rng = random.Random(seed)
    fd = os.open(segment, os.O_WRONLY)
    print("ready", flush=True)
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:  # mostly at full size (a reader maps it), cut back every few ms
            cut = rng.choice(early)
            os.ftruncate(fd, cut)
            while cut < len(data):
                cut += os.pwrite(fd, data[cut:cut + (1 << 20)], cut)
            time.sleep(rng.uniform(0, 0.008))
    finally:
        os.close(fd)


if __name__ == "__main__":
    mode, target, seconds = sys.argv[1], Path(sys.argv[2]), float(sys.argv[3])
    if mode == "write":
        write(target, seconds, int(sys.argv[4]))
    elif mode == "churn":
        churn(target, seconds, int(sys.argv[4]))
    else:
        print(json.dumps(read(target, seconds)))
