"""Planting damage into generated partition dirs, recording exactly what changed.

Each function changes files the generator has just written (never anything
else) and returns the `PlantedDamage` entries a correct scanner must report:
the code, the position it reports it at, and the bytes the change touched.
"""
from __future__ import annotations

import os
from pathlib import Path

from replog.formats.fileio import atomic_write
from replog.formats.kafka import checkpoint, names, offset_index, time_index
from replog.formats.kafka.partition_files import list_partition_files
from replog.formats.kafka.segment import SegmentWalk
from replog.recovery.kafka.epoch_cache import EpochCache
from replog.samples.manifest import PlantedDamage

INDEX_ZERO_TAIL = 4096


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def segment_bases(part: Path) -> list[int]:
    """Base offsets of the `.log` files of a partition dir, in order."""
    return list(list_partition_files(part).logs)


def _log(part: Path, base: int, kind: str = "log") -> Path:
    return part / names.segment_file_name(base, kind)


def flip_crc_in_middle_batch(root: Path, broker: str, part: Path) -> PlantedDamage:
    """Bit rot: one bit flipped inside the records of a middle batch of a middle (rolled) segment."""
    bases = segment_bases(part)
    if len(bases) < 2:
        raise ValueError(f"{part} needs a rolled segment")
    base = bases[len(bases) // 2] if len(bases) >= 3 else bases[0]
    path = _log(part, base)
    data = bytearray(path.read_bytes())
    infos = list(SegmentWalk(bytes(data), str(path), base).batches())
    plain = [b for b in infos[1:-1] if b.codec == 0] or infos[1:-1] or infos
    target = plain[len(plain) // 2]
    changed = target.position + 61 + (target.size - 61) * 2 // 3
    data[changed] ^= 0x04
    atomic_write(path, bytes(data))
    return PlantedDamage("KAFKA_BATCH_CRC_MISMATCH", broker, part.name, _rel(root, path), target.position,
                         target.base_offset, changed, 1,
                         f"bit 2 of byte {changed} flipped inside batch {target.base_offset}..{target.last_offset}")


def tear_tail(root: Path, broker: str, part: Path, next_batch: bytes) -> PlantedDamage:
    """A crash while appending: the first half of the next batch after the active segment's end."""
    base = segment_bases(part)[-1]
    path = _log(part, base)
    data = path.read_bytes()
    torn = next_batch[:max(17, len(next_batch) // 2)]
    atomic_write(path, data + torn)
    offset = int.from_bytes(next_batch[:8], "big", signed=True)
    return PlantedDamage("KAFKA_TORN_TAIL", broker, part.name, _rel(root, path), len(data), offset, len(data),
                         len(torn), f"{len(torn)} of the {len(next_batch)} bytes of batch {offset} were written")


def zero_tail_log(root: Path, broker: str, part: Path, size: int = 8192) -> PlantedDamage:
    """A preallocated (`log.preallocate=true`) active segment: zeros after the last batch."""
    path = _log(part, segment_bases(part)[-1])
    data = path.read_bytes()
    atomic_write(path, data + bytes(size))
    return PlantedDamage("KAFKA_ZERO_TAIL", broker, part.name, _rel(root, path), len(data), None, len(data), size,
                         f"{size} zero bytes after the last batch (preallocated, crash before trim)")


def zero_tail_indexes(root: Path, broker: str, part: Path) -> list[PlantedDamage]:
    """The active segment's indexes as a live broker leaves them: preallocated zero slots."""
    base = segment_bases(part)[-1]
    out = []
    for kind, entry in (("index", offset_index.ENTRY_SIZE), ("timeindex", time_index.ENTRY_SIZE)):
        path = _log(part, base, kind)
        data = path.read_bytes()
        size = INDEX_ZERO_TAIL // entry * entry
        atomic_write(path, data + bytes(size))
        reported = max(len(data), entry)  # slot 0 counts as an entry even when it is zero
        out.append(PlantedDamage("KAFKA_INDEX_ZERO_TAIL", broker, part.name, _rel(root, path), reported, None,
                                 len(data), size, f"{size // entry} preallocated zero slots (not trimmed: crash)"))
    return out


def orphan_swap(root: Path, broker: str, part: Path, base: int, data: bytes) -> PlantedDamage:
    """A cleaner that crashed after renaming its output `.cleaned` -> `.swap`."""
    path = part / (names.segment_file_name(base, "log") + ".swap")
    atomic_write(path, data)
    return PlantedDamage("KAFKA_ORPHAN_TEMP_FILE", broker, part.name, _rel(root, path), None, base, 0, len(data),
                         "cleaned segment left as .swap by a cleaner crash; the broker completes the swap at startup")


def drop_oldest_log(root: Path, broker: str, part: Path) -> tuple[list[PlantedDamage], int]:
    """A crash in the middle of retention: the oldest `.log` is gone, its indexes are not.

    Returns the damage and the new log start offset; the epoch checkpoint is
    truncated from the start as the broker does when the log start moves.
    """
    bases = segment_bases(part)
    if len(bases) < 2:
        raise ValueError(f"{part} needs two segments to lose its oldest")
    oldest, log_start = bases[0], bases[1]
    log = _log(part, oldest)
    size = log.stat().st_size
    os.remove(log)
    out = [PlantedDamage("KAFKA_INDEX_WITHOUT_LOG", broker, part.name, _rel(root, _log(part, oldest, kind)), None,
                         oldest, None, 0,
                         f"{names.segment_file_name(oldest, 'log')} ({size} bytes) deleted by retention; "
                         f"its .{kind} was left behind")
           for kind in ("index", "timeindex")]
    epoch_path = part / names.LEADER_EPOCH_CHECKPOINT
    cache = EpochCache(checkpoint.parse_leader_epoch_checkpoint(epoch_path.read_bytes()))
    cache.truncate_from_start(log_start)
    atomic_write(epoch_path, checkpoint.build_leader_epoch_checkpoint(cache.entries))
    return out, log_start


def checkpoint_line_position(data: bytes, topic: str, partition: int) -> int:
    """Byte position of the `topic partition offset` line in an offset checkpoint."""
    needle = f"\n{topic} {partition} ".encode()
    at = data.find(needle)
    if at < 0:
        raise ValueError(f"{topic}-{partition} is not in the checkpoint")
    return at + 1
