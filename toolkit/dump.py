"""`dump`: decode any broker file into a stream of JSON-able entries, each with a `kind`.

This is the library behind `replog dump` (kafka-dump-log parity plus every
other file replog knows). Entries follow the shapes in docs/CLI-CONTRACT.md.
Damage met on the way is an entry of kind `finding`, never an exception.
Entries are produced as they are read (a segment's by `dump_segment`, from its
column blocks), so a consumer that writes them as they come holds none.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from replog.formats.discovery import FileKind, classify_file
from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.fileio import unreadable
from replog.formats.findings import Finding, finding, from_error, from_unreadable
from replog.toolkit.dump_entries import DumpOptions, Entry, Progress, finding_entry
from replog.toolkit.dump_segment import EntryRun, Item

__all__ = ["DumpOptions", "Entry", "EntryRun", "Item", "Progress", "dump_file", "dump_items", "dump_paths",
           "expand_paths", "file_items"]


def expand_paths(paths: list[str | os.PathLike[str]], problems: list[Finding] | None = None) -> list[Path]:
    """Files to dump: files as given, directories walked in name order. Every entry but a directory
    is listed, FIFOs and devices too: `dump_file` reports them rather than leaving them out. A folder
    that vanishes or cannot be listed while it is walked (a live broker renames and deletes) goes to
    `problems` as a finding; the walk goes on."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(_files_under(p, problems if problems is not None else []))
        elif p.exists():
            out.append(p)
        else:
            raise UnreadableInput(f"{p}: no such file or directory")
    return out


def _files_under(root: Path, problems: list[Finding]) -> list[Path]:
    """Every entry under `root` that is not a directory, symlinked folders not followed (as `rglob`)."""
    def note(err: OSError) -> None:
        where = err.filename if err.filename is not None else root
        problems.append(from_unreadable(unreadable(err, where, "list"), os.fspath(where)))
    found = [Path(folder) / name for folder, _, files in os.walk(root, onerror=note) for name in files]
    return sorted(found)


def dump_paths(paths: list[str | os.PathLike[str]], options: DumpOptions,
               progress: Progress | None = None) -> Iterator[Entry]:
    problems: list[Finding] = []
    files = expand_paths(paths, problems)
    yield from map(finding_entry, problems)
    for path in files:
        yield from dump_file(path, options, progress)


def dump_items(paths: list[str | os.PathLike[str]], options: DumpOptions,
               progress: Progress | None = None) -> Iterator[Item]:
    """`dump_paths` with a segment's clean runs of batches as `EntryRun`s (columns), for writers that format
    a block at a time; expanding each run (`EntryRun.entries`) gives `dump_paths`' entries exactly."""
    problems: list[Finding] = []
    files = expand_paths(paths, problems)
    yield from map(finding_entry, problems)
    for path in files:
        yield from file_items(path, options, progress)


def dump_file(path: str | os.PathLike[str], options: DumpOptions,
              progress: Progress | None = None) -> Iterator[Entry]:
    """Entries for one file: a `file` header entry, then its contents."""
    for item in file_items(path, options, progress, runs=False):
        yield from item.entries() if isinstance(item, EntryRun) else (item,)


def file_items(path: str | os.PathLike[str], options: DumpOptions,
               progress: Progress | None = None, runs: bool = True) -> Iterator[Item]:
    """`dump_file`, a segment's clean runs of batches as `EntryRun`s when `runs`."""
    kind = classify_file(path)
    try:
        size: int | None = os.path.getsize(path)
    except OSError:  # a symlink loop or a dangling link: the dumper says what it is
        size = None
    yield {"kind": "file", "path": str(path), "file_kind": kind.value, "size": size}
    dumper = _DUMPERS.get(kind)
    if dumper is None:
        yield finding_entry(finding("UNKNOWN_FILE", str(path), message="not a file kind replog decodes"))
        return
    try:
        if kind in _SEGMENTS:
            from replog.toolkit.dump_segment import segment_items
            yield from segment_items(Path(path), options, progress, runs)
        else:
            yield from dumper(Path(path), options, progress)
    except FormatError as e:
        yield finding_entry(from_error(e, str(path)))
    except UnreadableInput as e:
        yield finding_entry(from_unreadable(e, str(path)))


Dumper = Callable[[Path, DumpOptions, Progress | None], Iterator[Entry]]


def _path_only(entries: Callable[[Path], Iterator[Entry]]) -> Dumper:
    """A dumper for files whose entries depend on the file alone (no option, no progress)."""
    return lambda path, _options, _progress: entries(path)


def _kafka_dumpers() -> dict[FileKind, Dumper]:
    """Each kind of file the dump decodes, and what decodes it (kinds decoded alike listed together)."""
    from replog.toolkit import dump_kafka as k
    from replog.toolkit import dump_rocketmq as r
    from replog.toolkit.dump_segment import segment_entries
    table: list[tuple[tuple[FileKind, ...], Dumper]] = [
        ((FileKind.KAFKA_SEGMENT, FileKind.KAFKA_KRAFT_SNAPSHOT), segment_entries),
        ((FileKind.KAFKA_OFFSET_INDEX, FileKind.KAFKA_TIME_INDEX),
         lambda p, o, _: k.index_entries(p, o.verify_index_only, o.index_sanity_check)),
        ((FileKind.KAFKA_TXN_INDEX,), _path_only(k.txn_index_entries)),
        ((FileKind.KAFKA_PRODUCER_SNAPSHOT,), _path_only(k.snapshot_entries)),
        ((FileKind.KAFKA_OFFSET_CHECKPOINT, FileKind.KAFKA_EPOCH_CHECKPOINT), _path_only(k.checkpoint_entries)),
        ((FileKind.KAFKA_PARTITION_METADATA, FileKind.KAFKA_META_PROPERTIES, FileKind.KAFKA_QUORUM_STATE,
          FileKind.KAFKA_CLEAN_SHUTDOWN), _path_only(k.metadata_entry)),
        ((FileKind.KAFKA_REMOTE_LOG_SNAPSHOT,), _path_only(k.remote_log_snapshot_entries)),
        ((FileKind.ROCKETMQ_COMMITLOG,), lambda p, o, _: r.commitlog_entries(p, o.value_decoder, o.records)),
        ((FileKind.ROCKETMQ_CONSUMEQUEUE,), _path_only(r.consumequeue_entries)),
        ((FileKind.ROCKETMQ_BATCH_CONSUMEQUEUE,), _path_only(r.batch_consumequeue_entries)),
        ((FileKind.ROCKETMQ_INDEX,), _path_only(r.index_file_entries)),
        ((FileKind.ROCKETMQ_CHECKPOINT, FileKind.ROCKETMQ_EPOCH, FileKind.ROCKETMQ_CONFIG),
         _path_only(r.store_file_entry)),
        ((FileKind.ROCKETMQ_DLEDGER_DATA,), lambda p, o, _: r.dledger_entries(p, o.value_decoder, o.records)),
        ((FileKind.ROCKETMQ_DLEDGER_INDEX,), _path_only(r.dledger_index_entries)),
        ((FileKind.ROCKETMQ_DLEDGER_PROPERTIES,), _path_only(r.dledger_properties_entry)),
    ]
    return {kind: dumper for kinds, dumper in table for kind in kinds}


_DUMPERS = _kafka_dumpers()
_SEGMENTS = (FileKind.KAFKA_SEGMENT, FileKind.KAFKA_KRAFT_SNAPSHOT)
