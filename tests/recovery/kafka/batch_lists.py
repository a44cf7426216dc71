"""Random partitions for the writer tests: batch lists of every kind the writers meet (helpers, not tests)."""
from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from replog.formats.kafka import batch as v2
from replog.formats.kafka import codecs, control, legacy

TS = 1_700_000_000_000

KINDS = ["data", "data", "data", "producer", "txn", "txn", "txn", "abort", "abort", "commit", "legacy0", "legacy1",
         "wrapper", "bad_crc", "leader_change", "no_epoch"]


@st.composite
def partitions(draw: Any) -> list[bytes]:
    """Batches in offset order (mostly): v2 data, producers, transactions and markers, legacy
    entries and wrappers, a damaged CRC, other control batches; random sizes, epochs, timestamps."""
    out: list[bytes] = []
    offset, epoch = draw(st.integers(0, 40)), draw(st.integers(0, 2))
    for _ in range(draw(st.integers(0, 40))):
        kind = draw(st.sampled_from(KINDS))
        offset += draw(st.sampled_from([0, 0, 0, 0, 1, 5, -2]))  # gaps, an occasional step back
        offset = max(offset, 0)
        epoch = max(0, epoch + draw(st.sampled_from([0, 0, 0, 1, -1])))
        ts = TS + draw(st.integers(-50, 50)) if draw(st.booleans()) else -1
        pid = draw(st.sampled_from([3, 4, 9]))
        n = draw(st.integers(1, 4))
        size = draw(st.integers(0, 300))
        recs = [v2.Record(offset + i, ts + i if ts >= 0 else ts, b"k", b"v" * size) for i in range(n)]
        if kind in ("data", "bad_crc", "no_epoch"):
            b = v2.build_batch(recs, base_offset=offset, partition_leader_epoch=-1 if kind == "no_epoch" else epoch,
                               codec=draw(st.sampled_from([codecs.NONE, codecs.NONE, codecs.GZIP])))
            if kind == "bad_crc":
                b = b[:-1] + bytes([b[-1] ^ 1])
        elif kind in ("producer", "txn"):
            b = v2.build_batch(recs, base_offset=offset, partition_leader_epoch=epoch, producer_id=pid,
                               producer_epoch=0, base_sequence=draw(st.integers(0, 100)),
                               transactional=kind == "txn")
        elif kind in ("abort", "commit"):
            n = 1
            b = control.build_marker_batch(offset=offset, commit=kind == "commit", producer_id=pid, producer_epoch=0,
                                           coordinator_epoch=draw(st.integers(0, 3)), timestamp=max(ts, 0),
                                           partition_leader_epoch=epoch)
        elif kind == "leader_change":
            n = 1
            b = control.build_control_batch(offset=offset, control_type=2, value=b"\0" * 8, timestamp=max(ts, 0),
                                            partition_leader_epoch=epoch)
        elif kind == "wrapper":
            b = legacy.build_compressed([(offset + i, max(ts, 0) + i, None, b"w" * size) for i in range(n)],
                                        magic=draw(st.sampled_from([0, 1])), codec=codecs.GZIP)
        else:
            n = 1
            b = legacy.build_message(offset, b"k", b"v" * size, magic=int(kind[-1]), timestamp=max(ts, 0))
        out.append(b)
        offset += n
    return out
