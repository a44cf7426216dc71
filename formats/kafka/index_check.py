"""Index files checked against the batches of their `.log` (reference §8.1-§8.3, §16.1.6).

Pure functions: the caller walks the segment and reads the index; these
compare and return findings. They take all batches of the segment at once, as
a list of `BatchInfo`, and run the one check, `index_stream`'s streaming form
(doctor and `dump --verify-index-only` feed it block by block); the tests'
independent list-form oracle is tests/formats/kafka/index_oracle.py.

What counts as correct follows how the broker writes and uses each index:
- `.index` entry (O, P): the append starting at batch position P ends at
  offset O. One append can hold several batches (followers append whole fetch
  responses), so O may be the last offset of a later batch than the one at P;
  what must hold is that P starts a batch, no batch before P reaches O, and
  some batch at or after P ends exactly at O. `(base_offset, 0)` is the
  lookup default and harmless (a zero slot 0).
- `.timeindex` entry (T, O): T is the largest timestamp up to the batch
  holding O, and that batch's max timestamp is T.
- `.txnindex`: one entry per ABORT marker of the segment, as recovery rebuilds it.
"""
from __future__ import annotations

from collections.abc import Sequence

from replog.formats.findings import Finding, FindingSink, Severity
from replog.formats.kafka.blocks import BatchBlock
from replog.formats.kafka.offset_index import (
    OffsetIndexEntry,
)
from replog.formats.kafka.segment import BatchInfo
from replog.formats.kafka.time_index import TimeIndexEntry
from replog.formats.kafka.txn_index import AbortedTxn

MAX_FINDINGS = 100  # per index file; one corrupt 10 MiB index would give a million


def check_offset_index(batches: Sequence[BatchInfo], entries: Sequence[OffsetIndexEntry], *,
                       base_offset: int, log_size: int, path: str = "") -> list[Finding]:
    """Every `.index` entry against the batches (in file order) of its `.log`: the streaming check
    (`index_stream.OffsetIndexCheck`) fed them as one block, so there is one offset index check."""
    from replog.formats.kafka.index_stream import OffsetIndexCheck
    check = OffsetIndexCheck(entries, base_offset=base_offset, log_size=log_size, path=path)
    check.feed(BatchBlock.from_infos(list(batches)))
    return check.finish()


def check_time_index(batches: Sequence[BatchInfo], entries: Sequence[TimeIndexEntry], *,
                     base_offset: int, path: str = "") -> list[Finding]:
    """Every `.timeindex` entry against the max timestamps of the batches: the streaming check
    (`index_stream.TimeIndexCheck`) fed them as one block, so there is one time index check."""
    from replog.formats.kafka.index_stream import TimeIndexCheck
    check = TimeIndexCheck(entries, base_offset=base_offset, path=path)
    check.feed(BatchBlock.from_infos(list(batches)))
    return check.finish()


def check_txn_index(expected: Sequence[AbortedTxn], actual: Sequence[AbortedTxn], *,
                    path: str = "") -> list[Finding]:
    """`.txnindex` entries against the aborted transactions the ABORT markers imply.

    Missing or extra entries are errors; a different first offset or LSO is a
    warning (they depend on transactions that may start before the log start).
    """
    sink = FindingSink(path, MAX_FINDINGS)
    want = {e.last_offset: e for e in expected}
    have = {e.last_offset: (slot, e) for slot, e in enumerate(actual)}
    for last, (slot, e) in have.items():
        w = want.get(last)
        if w is None:
            sink.add("KAFKA_TXNINDEX_MISMATCH", slot * 34, last,
                     f"entry {slot}: no ABORT marker of producer {e.producer_id} at offset {last}")
        elif w.producer_id != e.producer_id:
            sink.add("KAFKA_TXNINDEX_MISMATCH", slot * 34, last,
                     f"entry {slot}: producer {e.producer_id}, the ABORT marker at {last} is producer {w.producer_id}")
        elif (w.first_offset, w.last_stable_offset) != (e.first_offset, e.last_stable_offset):
            sink.add("KAFKA_TXNINDEX_MISMATCH", slot * 34, last,
                     f"entry {slot}: first offset / LSO ({e.first_offset}, {e.last_stable_offset}), "
                     f"the batches imply ({w.first_offset}, {w.last_stable_offset})",
                     severity=Severity.WARNING)
    end = len(actual) * 34
    for last, w in want.items():
        if last not in have:
            sink.add("KAFKA_TXNINDEX_MISMATCH", end, last,
                     f"ABORT marker of producer {w.producer_id} at offset {last} has no entry")
    return sink.result()
