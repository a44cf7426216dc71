"""`dump`'s JSON lines and kafka-dump-log text a block at a time: an `EntryRun`'s columns written as bytes.

The entry-by-entry writers (`output.dumps`, `dump_log.batch_line` and
`record_line`) make a dict and a string per batch and per record: ~5 µs each, so
a segment of one-record batches dumps at a few MB/s. Here the same lines are
declared once as programs (literal text and fields, see `dump_kernel`) and
written by one kernel call per run of up to 64 Ki batches, with one `write`.
What a program does not cover (control records, the internal-topic decoders,
--print-data, non-ASCII bytes, a value outside an enum) makes `text` answer
None, and the caller writes that run's entries the usual way: the bytes are the
same either way, which tests/toolkit/test_dump_blocks.py holds on generated and
real segments.
"""
from __future__ import annotations

import codecs
import functools
import sys
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from replog.formats.kafka import batch as v2
from replog.formats.kafka.blocks import FIELDS
from replog.formats.kafka.codecs import CODEC_NAMES
from replog.toolkit import dump_kernel as k
from replog.toolkit.output import dumps

if TYPE_CHECKING:
    from replog.toolkit.dump import Entry, EntryRun, Item
    from replog.toolkit.dump_log import Style

BATCH_COLUMNS = (*FIELDS, "last_sequence")
RECORD_COLUMNS = ("offset", "timestamp", "sequence", "key_pos", "key_len", "value_pos", "value_len",
                  "header_first", "header_count")
Field = str | tuple[Any, ...]
_BOOLS = {0: "false", 1: "true"}


def _int(name: str) -> tuple[Any, ...]:
    return ("int", name)


def _rint(name: str) -> tuple[Any, ...]:
    return ("rint", name)


def _enum(name: str, names: dict[int, str]) -> tuple[Any, ...]:
    return ("enum", name, names)


_HORIZON = ("opt", "first_timestamp", "has_delete_horizon")
DUMP_LOG_BATCH: tuple[Field, ...] = (
    "baseOffset: ", _int("base_offset"), " lastOffset: ", _int("last_offset"), " count: ", _int("count"),
    " baseSequence: ", _int("base_sequence"), " lastSequence: ", _int("last_sequence"),
    " producerId: ", _int("producer_id"), " producerEpoch: ", _int("producer_epoch"),
    " partitionLeaderEpoch: ", _int("partition_leader_epoch"),
    " isTransactional: ", _enum("is_transactional", _BOOLS), " isControl: ", _enum("is_control", _BOOLS),
    " deleteHorizonMs: ", (*_HORIZON, "OptionalLong.empty", "OptionalLong[", "]"),
    " position: ", _int("position"), " ", _enum("timestamp_type", v2.TIMESTAMP_TYPE_NAMES), ": ",
    _int("max_timestamp"), " size: ", _int("size"), " magic: ", _int("magic"),
    " compresscodec: ", _enum("codec", CODEC_NAMES), " crc: ", _int("crc"),
    " isvalid: ", _enum("crc_valid", _BOOLS), "\n")
"""`dump_log.batch_line` of a v2 batch."""

DUMP_LOG_RECORD: tuple[Field, ...] = (
    "| offset: ", _rint("offset"), " ", _enum("timestamp_type", v2.TIMESTAMP_TYPE_NAMES), ": ",
    _rint("timestamp"), " keySize: ", _rint("key_len"), " valueSize: ", _rint("value_len"),
    " sequence: ", _rint("sequence"), " headerKeys: [", ("hkeys",), "]\n")
"""`dump_log.record_line` of a v2 record that is not a control record, without --print-data."""


def json_batch(path: str) -> tuple[Field, ...]:
    """`dump_entries.batch_entry` as `output.dumps` writes it."""
    return (
        f'{{"kind": "batch", "path": {dumps(path)}, "position": ', _int("position"),
        ', "base_offset": ', _int("base_offset"), ', "last_offset": ', _int("last_offset"),
        ', "count": ', _int("count"), ', "partition_leader_epoch": ', _int("partition_leader_epoch"),
        ', "magic": ', _int("magic"), ', "codec": "', _enum("codec", CODEC_NAMES), '", "crc": ', _int("crc"),
        ', "crc_valid": ', _enum("crc_valid", _BOOLS), ', "size": ', _int("size"),
        ', "first_timestamp": ', _int("first_timestamp"), ', "max_timestamp": ', _int("max_timestamp"),
        ', "timestamp_type": "', _enum("timestamp_type", v2.TIMESTAMP_TYPE_NAMES),
        '", "producer_id": ', _int("producer_id"), ', "producer_epoch": ', _int("producer_epoch"),
        ', "base_sequence": ', _int("base_sequence"), ', "last_sequence": ', _int("last_sequence"),
        ', "is_transactional": ', _enum("is_transactional", _BOOLS),
        ', "is_control": ', _enum("is_control", _BOOLS),
        ', "delete_horizon_ms": ', (*_HORIZON, "null", "", ""), "}\n")


def json_record(path: str) -> tuple[Field, ...]:
    """`dump_entries.record_entry` of a record that is not a control record, utf8 decoders, as `dumps` writes it."""
    return (
        f'{{"kind": "record", "path": {dumps(path)}, "offset": ', _rint("offset"),
        ', "position": ', _int("position"), ', "timestamp": ', _rint("timestamp"),
        ', "timestamp_type": "', _enum("timestamp_type", v2.TIMESTAMP_TYPE_NAMES),
        '", "key_size": ', _rint("key_len"), ', "value_size": ', _rint("value_len"),
        ', "sequence": ', _rint("sequence"), ', "is_control": ', _enum("is_control", _BOOLS),
        ', "key": ', ("jstr", "key_pos", "key_len"), ', "value": ', ("jstr", "value_pos", "value_len"),
        ', "headers": ', ("jheaders",), "}\n")


# --- programs -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Program:
    """Ops for `dump_kernel.fill` over a shared literal table, and the most one line writes besides the
    bytes it copies from records (`fixed`)."""

    ops: np.ndarray
    fixed: int


class Texts:
    """The literal table of a pair of programs: texts back to back, `starts[i]:starts[i+1]` the i-th."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def add(self, *texts: str) -> int:
        self.parts.extend(t.encode("utf-8") for t in texts)
        return len(self.parts) - len(texts)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        starts = np.zeros(len(self.parts) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in self.parts], out=starts[1:])
        return np.frombuffer(b"".join(self.parts) or b"\0", dtype=np.uint8), starts


def compile_program(fields: Sequence[Field], texts: Texts) -> Program:
    """`fields` as kernel ops (adjacent literals joined), literals added to `texts`."""
    ops: list[tuple[int, ...]] = []
    fixed, prefix = 0, -1
    joined = _joined(fields)
    for i, field in enumerate(joined):
        op, width = _op(field, texts)
        fixed += width
        if op[0] == k.LIT and i < len(joined) - 1:
            prefix = op[2]  # written by the next op, before its field
            continue
        ops.append(op + (0,) * (k.WIDTH - 1 - len(op)) + (prefix,))
        prefix = -1
    return Program(np.array(ops, dtype=np.int64).reshape(-1, k.WIDTH), fixed)


def _joined(fields: Sequence[Field]) -> list[Field]:
    out: list[Field] = []
    for f in fields:
        if isinstance(f, str) and out and isinstance(out[-1], str):
            out[-1] += f
        else:
            out.append(f)
    return out


def _op(field: Field, texts: Texts) -> tuple[tuple[int, ...], int]:
    """One field's op and the most it writes (without copied record bytes)."""
    if isinstance(field, str):
        return (k.LIT, 0, texts.add(field)), len(field.encode("utf-8"))
    kind, *args = field
    if kind in ("int", "rint"):
        return ((k.INT, _column(args[0])) if kind == "int" else (k.RINT, _record(args[0]))), k.INT_CHARS
    if kind == "enum":
        name, names = args
        low, high = min(names), max(names)
        first = texts.add(*(names.get(v, "") for v in range(low, high + 1)))
        return (k.ENUM, _column(name), first, low, high - low + 1), max(map(len, names.values()))
    if kind == "opt":
        name, flag, none, pre, post = args
        return ((k.OPT, _column(name), _column(flag), texts.add(none), texts.add(pre), texts.add(post)),
                max(len(none), len(pre) + k.INT_CHARS + len(post)))
    if kind == "jstr":
        return (k.JSTR, _record(args[0]), _record(args[1])), 4
    op = k.HKEYS if kind == "hkeys" else k.JHEADERS
    return (op, _record("header_first"), _record("header_count")), 2


def _column(name: str) -> int:
    return BATCH_COLUMNS.index(name)


def _record(name: str) -> int:
    return RECORD_COLUMNS.index(name)


# --- runs -----------------------------------------------------------------------------------


class RunText:
    """Writes `EntryRun`s in one format, or says it cannot (None): `jsonl`, or `dump-log` in `style`."""

    def __init__(self, fmt: str, style: Style | None = None) -> None:
        self.fmt, self.style = fmt, style
        self._programs: dict[str, tuple[Program, Program, np.ndarray, np.ndarray]] = {}
        self._outs = [[np.empty(0, dtype=np.uint8) for _ in range(2)] for _ in range(2)]  # [turn][half]
        self._turn = 0
        self._pool: ThreadPoolExecutor | None = None

    def text(self, run: EntryRun) -> tuple[memoryview, ...] | None:
        """The run's bytes (its entries' lines, each ending in a newline) in one or two parts (halves of the
        run made by two threads: the kernel releases the GIL), or None: write it entry by entry. Two sets of
        buffers take turns, each reused (its pages faulted in once): the bytes stay as they are until the
        call after next, so a `BlockWriter` can write them while the next run is made."""
        if not self._covers(run):
            return None
        records, first, data, heads = _record_columns(run)
        n = len(run.batches)
        halves = [(0, n)] if n < 2 * k.TILE else [(0, n // 2), (n // 2, n)]
        self._turn ^= 1
        fill = functools.partial(self._fill, run, records, first, data, heads)
        if len(halves) == 1:
            parts = [fill(0, *halves[0])]
        else:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="replog-dump-format")
            second = self._pool.submit(fill, 1, *halves[1])
            parts = [fill(0, *halves[0]), second.result()]
        return None if any(p is None for p in parts) else tuple(p for p in parts if p is not None)

    def _fill(self, run: EntryRun, records: np.ndarray, first: np.ndarray, data: np.ndarray, heads: np.ndarray,
              part: int, lo: int, hi: int) -> memoryview | None:
        """Batches lo:hi of the run (and their records) into buffer `part` of this turn's pair."""
        batch_prog, record_prog, text, starts = self._compiled(run.path)
        copied = (np.maximum(records[first[lo]:first[hi], [4, 6]], 0).sum() if self.fmt == "jsonl" else 0)
        size = ((hi - lo) * batch_prog.fixed + int(first[hi] - first[lo]) * record_prog.fixed + 6 * int(copied)
                + 6 * int(np.maximum(heads[:, [1, 3]], 0).sum()) + 48 * len(heads) + 2 * k.INT_CHARS)
        pair = self._outs[self._turn]
        if len(pair[part]) < size:
            pair[part] = np.empty(size, dtype=np.uint8)
        out = pair[part]
        n = k.fill(out, text, starts, batch_prog.ops, record_prog.ops, np.ascontiguousarray(run.batches.cols),
                   _last_sequences(run.batches)[None], records, first, data, heads, k.ESCAPE, k.HEX, lo, hi)
        return None if n < 0 else out[:n].data

    def _covers(self, run: EntryRun) -> bool:
        """Whether the programs write every entry of the run (else None, entry by entry)."""
        opts, deep = run.opts, run.records is not None
        if deep and run.batches.is_control.any():
            return False  # control records carry fields of their own
        if not _writes_as_utf8(run.path):
            return False
        if self.fmt == "jsonl":
            return not opts.internal and (not deep or opts.key_decoder == opts.value_decoder == "utf8")
        style = self.style
        return style is not None and not (style.print_data or style.skip_record_metadata or style.decoder)

    def _compiled(self, path: str) -> tuple[Program, Program, np.ndarray, np.ndarray]:
        found = self._programs.get(path)
        if found is None:
            texts = Texts()
            pair = ((json_batch(path), json_record(path)) if self.fmt == "jsonl"
                    else (DUMP_LOG_BATCH, DUMP_LOG_RECORD))
            batch_prog, record_prog = (compile_program(p, texts) for p in pair)
            found = self._programs[path] = (batch_prog, record_prog, *texts.arrays())
        return found


def _writes_as_utf8(path: str) -> bool:
    """The path (in JSON) is the only text not ASCII a program may hold: its bytes are what the text stream
    writes only when that stream is UTF-8."""
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    return dumps(path).isascii() or codecs.lookup(encoding).name == "utf-8"


def _last_sequences(block: Any) -> np.ndarray:
    """`dump_entries._batch`'s last_sequence: base + (last - base offset), wrapping at INT32_MAX; -1 for none."""
    base, delta = block.base_sequence, block.last_offset - block.base_offset
    wrapped = np.where(base > v2.INT32_MAX - delta, delta - (v2.INT32_MAX - base) - 1, base + delta)
    return np.where(base >= 0, wrapped, -1)


def _record_columns(run: EntryRun) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The run's record columns (`RECORD_COLUMNS` rows), each batch's first record, the bytes they point
    into and the headers' (key pos, key len, value pos, value len) rows."""
    rec = run.records
    if rec is None:
        empty = np.zeros((0, len(RECORD_COLUMNS)), dtype=np.int64)
        return empty, np.zeros(len(run.batches) + 1, np.int64), np.zeros(1, np.uint8), np.zeros((0, 4), np.int64)
    from replog.formats.kafka.fastrecords import headers_kernel
    counts = rec.header_count.astype(np.int64)
    header_first = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=header_first[1:])
    heads = np.zeros((4, int(counts.sum())), dtype=np.int64)
    if heads.shape[1]:
        headers_kernel(rec.data, rec.header_pos, counts, heads[0], heads[1], heads[2], heads[3])
    records = np.stack([rec.offset, rec.timestamp, rec.sequence.astype(np.int64), rec.key_pos, rec.key_len,
                        rec.value_pos, rec.value_len, header_first, counts], axis=1)
    first = np.zeros(len(run.batches) + 1, dtype=np.int64)
    np.cumsum(run.batches.count, out=first[1:])
    return records, first, rec.data, np.ascontiguousarray(heads.T)


# --- the stream -----------------------------------------------------------------------------


@dataclass(frozen=True)
class FormattedRun:
    """A run and its text, as `RunText` wrote it."""

    run: EntryRun
    text: tuple[memoryview, ...]


def formatted(items: Iterable[Item], writer: RunText | None) -> Iterator[Entry | FormattedRun]:
    """The stream with each run the writer covers written (`FormattedRun`), the others expanded into entries."""
    from replog.toolkit.dump import EntryRun
    for item in items:
        if not isinstance(item, EntryRun):
            yield item
            continue
        text = writer.text(item) if writer is not None else None
        if text is None:
            yield from item.entries()
        else:
            yield FormattedRun(item, text)


class BlockWriter:
    """Writes blocks of bytes to a text stream's binary buffer from a thread, one at a time and in order, so
    that the next run is walked, decoded and formatted (all in kernels that release the GIL) while the last
    is written: on two cores the dump takes about the longer of the two, not their sum. Text written to the
    stream waits for the block before it (`text`)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._pool: ThreadPoolExecutor | None = None
        self._pending: Future[None] | None = None

    def block(self, parts: tuple[memoryview, ...]) -> None:
        """Write `parts` (left as they are until the next `block` call returns) after what came before."""
        self.wait()
        self.out.flush()
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="replog-dump-writer")
        self._pending = self._pool.submit(self.out.buffer.writelines, parts)

    def text(self, line: str) -> None:
        self.wait()
        self.out.write(line)

    def wait(self) -> None:
        """The block being written, written (its error, such as a closed pipe, raised here)."""
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.result()

    def close(self) -> None:
        try:
            self.wait()
        finally:
            if self._pool is not None:
                self._pool.shutdown()
        self.out.flush()


def write_jsonl_items(items: Iterable[Item], out: TextIO | None = None) -> None:
    """`output.write_jsonl` of the expanded stream, byte for byte, runs written a block at a time."""
    writer = BlockWriter(out or sys.stdout)
    try:
        for item in formatted(items, RunText("jsonl")):
            if isinstance(item, FormattedRun):
                writer.block(item.text)
            else:
                writer.text(dumps(item) + "\n")
    finally:
        writer.close()
