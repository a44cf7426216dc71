"""`doctor` of tiered storage's `remote-log-index-cache/`: the indexes of remote segments a broker fetched.

`RemoteIndexCache` (apache/kafka storage/src/main/java/org/apache/kafka/storage/internals/log/
RemoteIndexCache.java, branches 3.9 and trunk) keeps, in `<log dir>/remote-log-index-cache/`, a copy of the offset,
time and transaction index of each remote segment it fetched, named `<startOffset>_<segmentId>.<kind>`
(`formats.kafka.names.parse_remote_index_file_name`). On start-up (`init`) it loads every complete triple as the
ordinary indexes they are, with the segment's start offset as their base: `new OffsetIndex(file, offset, ...)`
then `sanityCheck()`, the same for `TimeIndex` and `TransactionIndex`. So each cached file is checked here with
the readers of an index without its log (`formats.kafka.offset_index` / `time_index` / `txn_index`) and the
broker's own sanity checks; files being fetched (`.tmp`) or removed (`.deleted`) are hashed, not checked (`init`
deletes them). A name the cache does not write is left to `UNKNOWN_FILE` (reported once).
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import is_regular
from replog.formats.findings import Finding, from_error, from_unreadable
from replog.formats.kafka import names, offset_index, time_index, txn_index
from replog.recovery.evidence import Evidence

_READERS: dict[str, Callable[..., offset_index.IndexRead | txn_index.TxnIndexRead]] = {
    "index": offset_index.read_offset_index, "timeindex": time_index.read_time_index,
    "txnindex": txn_index.read_txn_index}
_SANITY: dict[str, Callable[..., list[Finding]]] = {
    "index": offset_index.sanity_check, "timeindex": time_index.sanity_check}


def remote_index_cache_findings(ev: Evidence, log_dir: Path) -> list[Finding]:
    """Every cached remote index of the log dir, read through `ev` (in the manifest) and checked."""
    cache = log_dir / names.REMOTE_INDEX_CACHE_DIR
    try:
        entries = sorted(os.listdir(cache))
    except OSError:
        return []          # no cache (tiered storage off), or one the walk of unread files reports
    out: list[Finding] = []
    for entry in entries:
        path = cache / entry
        name = names.parse_remote_index_file_name(entry)
        if name is None or not is_regular(path):
            continue
        if name.transient:
            ev.note(path)
            continue
        out += cached_index_findings(ev, path, name)
    return out


def cached_index_findings(ev: Evidence, path: Path, name: names.RemoteIndexName) -> list[Finding]:
    """One cached index as the broker loads it: the index reader's findings, then the broker's `sanityCheck`
    ones the reader did not already give at the same place."""
    try:
        data = ev.read_small(path, 1 << 30)
        found = list(_READERS[name.kind](data, name.start_offset, path=str(path)).findings)
        seen = {(f.code, f.position) for f in found}
        sanity = _SANITY.get(name.kind)
        extra = sanity(data, name.start_offset, path=str(path)) if sanity is not None else []
        return found + [f for f in extra if (f.code, f.position) not in seen]
    except FormatError as e:
        return [from_error(e, str(path))]
    except UnreadableInput as e:
        return [from_unreadable(e, str(path))]
