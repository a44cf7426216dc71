"""The streaming index checks give the list-based checks' findings exactly, whatever the block split.

The list forms (`check_offset_index`, `check_time_index`) are the oracle. On a
log whose offsets go back (damaged), their binary search over unsorted offsets
has no defined answer; there a linear oracle (the same rules, "first batch in
file order" instead of `bisect`) stands in, and the list form is compared only
where its offsets are sorted.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replog.formats.kafka import batch as v2
from replog.formats.kafka import fastwalk
from replog.formats.kafka import index_check as ic
from replog.formats.kafka import index_stream as ist
from replog.formats.kafka import offset_index as oi
from replog.formats.kafka import time_index as ti
from replog.formats.kafka.blocks import FIELDS, ROW, BatchBlock
from replog.formats.kafka.offset_index import OffsetIndexEntry
from replog.formats.kafka.segment import BatchInfo, SegmentWalk
from replog.formats.kafka.time_index import TimeIndexEntry
from tests.formats.kafka import index_oracle as oracle
from tests.formats.kafka.segments import TS

INT64_MAX = 2**63 - 1
STAMPS = [0, -1, TS, TS + 5, TS + 9, TS - 3, TS + 20]


# --- inputs -------------------------------------------------------------------------------------


@st.composite
def segments(draw, *, go_back: bool = False) -> tuple[bytes, int, list[BatchInfo]]:
    """A segment of v2 batches: some with a bad CRC, timestamps up and down (some 0), maybe a damaged
    tail; with `go_back`, base offsets drawn at random (offsets not in order)."""
    base = draw(st.sampled_from([0, 0, 7, 2**40]))
    out, offset = b"", base
    for _ in range(draw(st.integers(0, 14))):
        count = draw(st.integers(1, 3))
        first = draw(st.integers(base, base + 40)) if go_back else offset
        stamps = draw(st.lists(st.sampled_from(STAMPS), min_size=count, max_size=count))
        data = bytearray(v2.build_batch([v2.Record(first + k, stamps[k], b"k", b"v" * k) for k in range(count)],
                                        base_offset=first))
        if draw(st.integers(0, 5)) == 0:
            data[v2.CRC_START - 1] ^= 0x5A  # stored CRC no longer matches
        out += bytes(data)
        offset = first + count
    tail = draw(st.sampled_from(["", "", "torn", "zeros"]))
    if tail == "torn":
        out += v2.build_batch([v2.Record(offset, TS, b"k", b"v")], base_offset=offset)[:-7]
    elif tail == "zeros":
        out += bytes(40)
    return out, base, list(SegmentWalk(out, "s.log", base).batches())


@st.composite
def offset_entries(draw, base: int, size: int, infos: list[BatchInfo]) -> list[OffsetIndexEntry]:
    """Entries right and wrong: ends of one- or multi-batch appends, off by one, the lookup default,
    positions inside batches, past the log, in the tail, duplicates, any order."""
    top = max([b.last_offset for b in infos], default=base) + 3
    out: list[OffsetIndexEntry] = []
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(st.integers(0, 6 if infos else 2))
        if kind == 0:
            out.append(OffsetIndexEntry(base, 0))
        elif kind == 1:
            out.append(OffsetIndexEntry(draw(st.integers(base - 2, top)), draw(st.integers(-2, size + 9))))
        elif kind == 2 and out:
            out.append(draw(st.sampled_from(out)))
        elif kind in (3, 4, 5):
            k = draw(st.integers(0, len(infos) - 1))
            j = draw(st.integers(k, min(len(infos) - 1, k + 3)))
            delta = draw(st.sampled_from([0, 0, 0, -1, 1])) if kind == 5 else 0
            out.append(OffsetIndexEntry(infos[j].last_offset + delta, infos[k].position))
        elif infos:
            b = draw(st.sampled_from(infos))
            out.append(OffsetIndexEntry(b.last_offset, b.position + draw(st.integers(1, b.size))))
    return sorted(out, key=lambda e: e.position) if draw(st.booleans()) else out


@st.composite
def time_entries(draw, base: int, infos: list[BatchInfo]) -> list[TimeIndexEntry]:
    """Entries right and wrong: (running max, last offset) of a batch, other timestamps, offsets
    before, between and past the batches, a zero slot 0, duplicates, any order."""
    top, running, out = -1, [], []
    for b in infos:
        top = max(top, b.max_timestamp) if b.crc_valid else top
        running.append(top)
    offsets = [base - 1, base, max([b.last_offset for b in infos], default=base) + 1]
    offsets += [b.base_offset for b in infos] + [b.last_offset for b in infos]
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(st.integers(0, 3 if infos else 1))
        if kind == 0:
            out.append(TimeIndexEntry(draw(st.sampled_from(STAMPS)), draw(st.sampled_from(offsets))))
        elif kind == 1 and out:
            out.append(draw(st.sampled_from(out)))
        elif infos:
            i = draw(st.integers(0, len(infos) - 1))
            out.append(TimeIndexEntry(running[i], infos[i].last_offset))
    if draw(st.booleans()):
        out.insert(0, TimeIndexEntry(0, base))
    return sorted(out, key=lambda e: e.offset) if draw(st.booleans()) else out


@st.composite
def splits(draw, n: int) -> list[int]:
    """Block sizes covering n rows (1..n+1 each), so entries meet their batches across blocks."""
    sizes, left = [], n
    while left > 0:
        sizes.append(draw(st.integers(1, left + 1)))
        left -= sizes[-1]
    return sizes


def blocks_of(infos: list[BatchInfo], sizes: list[int]) -> list[BatchBlock]:
    """The batches as consecutive blocks, each a view into one reused buffer (as `FastWalk` gives them)."""
    shared = np.empty((len(FIELDS), max(sizes, default=1)), dtype=np.int64)
    start = 0
    for size in sizes:
        chunk = BatchBlock.from_infos(infos[start:start + size])
        shared[:, :len(chunk)] = chunk.cols
        yield BatchBlock(shared[:, :len(chunk)])
        start += size


# --- helpers ------------------------------------------------------------------------------------


def dicts(findings) -> list[dict]:
    return [f.to_dict() for f in findings]  # `Finding` equality leaves out the details


def stream_offset(infos, entries, sizes, **kw):
    check = ist.OffsetIndexCheck(entries, **kw)
    for block in blocks_of(infos, sizes):
        check.feed(block)
    return check.finish()


def stream_time(infos, entries, sizes, **kw):
    check = ist.TimeIndexCheck(entries, **kw)
    for block in blocks_of(infos, sizes):
        check.feed(block)
    return check.finish()


def ascending(values: list[int]) -> bool:
    return all(a <= b for a, b in zip(values, values[1:], strict=False))


# --- the streaming checks against the list forms -----------------------------------------------

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# per index: its entries, the list check (oracle), the streaming form, the linear stand-in, its writer and its two
# readers, the keywords beyond the base offset, and which entries the writer can hold
KINDS = {
    "offset": (lambda base, buf, infos: offset_entries(base, len(buf), infos), oracle.check_offset_index, stream_offset,
               oracle.linear_offset_check, oi.write_offset_index, oi.read_offset_index, oi.read_offset_index_columns,
               lambda buf: {"log_size": len(buf), "path": "s.index"}, lambda e: e.position >= 0),
    "time": (lambda base, buf, infos: time_entries(base, infos), oracle.check_time_index, stream_time,
             oracle.linear_time_check, ti.write_time_index, ti.read_time_index, ti.read_time_index_columns,
             lambda buf: {"path": "s.timeindex"}, lambda e: True),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
@SETTINGS
@given(data=st.data())
def test_index_stream_is_the_list_check(kind: str, data) -> None:
    draw_entries, check, stream, linear, write, read, read_columns, more_kw, holdable = KINDS[kind]
    buf, base, infos = data.draw(segments())
    entries = data.draw(draw_entries(base, buf, infos))
    sizes = data.draw(splits(len(infos)))
    kw = dict(base_offset=base, **more_kw(buf))
    want = dicts(check(infos, entries, **kw))
    assert dicts(stream(infos, entries, sizes, **kw)) == want, "the streaming check"
    assert dicts(linear(infos, entries, **kw)) == want, "the stand-in agrees where both apply"
    if all(0 <= e.offset - base <= oi.INT32_MAX and holdable(e) for e in entries):
        # the same entries written, read back as columns (trailing zero slots become padding)
        raw = write(entries, base)
        listed, cols = read(raw, base).entries, read_columns(raw, base)
        assert list(cols.entries()) == listed, "the column reader"
        assert dicts(stream(infos, cols, sizes, **kw)) == dicts(check(infos, listed, **kw)), "fed from columns"


@SETTINGS
@given(st.data())
def test_offsets_out_of_order_follow_file_order(data) -> None:
    """A damaged log whose offsets go back: the list forms' `bisect` over unsorted offsets is
    arbitrary; the streaming checks answer as the linear oracle, and as the list forms when sorted."""
    buf, base, infos = data.draw(segments(go_back=True))
    sizes = data.draw(splits(len(infos)))
    o_entries = data.draw(offset_entries(base, len(buf), infos))
    t_entries = data.draw(time_entries(base, infos))
    okw = dict(base_offset=base, log_size=len(buf), path="s.index")
    tkw = dict(base_offset=base, path="s.timeindex")
    got_o = dicts(stream_offset(infos, o_entries, sizes, **okw))
    got_t = dicts(stream_time(infos, t_entries, sizes, **tkw))
    assert got_o == dicts(oracle.linear_offset_check(infos, o_entries, **okw))
    assert got_t == dicts(oracle.linear_time_check(infos, t_entries, **tkw))
    if ascending([b.last_offset for b in infos]):
        assert got_o == dicts(oracle.check_offset_index(infos, o_entries, **okw))
    if ascending([b.base_offset for b in infos]):
        assert got_t == dicts(oracle.check_time_index(infos, t_entries, **tkw))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_cap_on_findings_is_the_same(data) -> None:
    """A garbage index: far more findings than `MAX_FINDINGS`; the kept ones and the count left out agree."""
    buf, base, infos = data.draw(segments())
    n = data.draw(st.integers(ic.MAX_FINDINGS - 2, 3 * ic.MAX_FINDINGS))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    o_entries = [OffsetIndexEntry(int(o), int(p)) for o, p in
                 zip(rng.integers(base - 2, base + 60, n), rng.integers(0, len(buf) + 20, n), strict=True)]
    t_entries = [TimeIndexEntry(int(t), int(o)) for t, o in
                 zip(rng.choice(STAMPS, n), rng.integers(base - 2, base + 60, n), strict=True)]
    sizes = data.draw(splits(len(infos)))
    okw = dict(base_offset=base, log_size=len(buf), path="s.index")
    tkw = dict(base_offset=base, path="s.timeindex")
    want_o = dicts(oracle.check_offset_index(infos, o_entries, **okw))
    assert dicts(stream_offset(infos, o_entries, sizes, **okw)) == want_o
    assert dicts(stream_time(infos, t_entries, sizes, **tkw)) == dicts(oracle.check_time_index(infos, t_entries, **tkw))


@pytest.mark.skipif(not fastwalk.HAVE_NUMBA, reason="numba not installed")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fed_from_the_fast_walk(data) -> None:
    """Blocks straight from `FastWalk.blocks` (views into its reused buffer), any chunk size."""
    buf, base, infos = data.draw(segments())
    chunk = data.draw(st.integers(1, len(infos) + 1))
    o_entries = data.draw(offset_entries(base, len(buf), infos))
    t_entries = data.draw(time_entries(base, infos))
    okw = dict(base_offset=base, log_size=len(buf), path="s.index")
    tkw = dict(base_offset=base, path="s.timeindex")
    o_check, t_check = ist.OffsetIndexCheck(o_entries, **okw), ist.TimeIndexCheck(t_entries, **tkw)
    for block in fastwalk.FastWalk(buf, "s.log", base).blocks(chunk):
        o_check.feed(block)
        t_check.feed(block)
    assert dicts(o_check.finish()) == dicts(oracle.check_offset_index(infos, o_entries, **okw))
    assert dicts(t_check.finish()) == dicts(oracle.check_time_index(infos, t_entries, **tkw))


# --- the columnar readers ----------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"\0" * 4, b"\0\0\0\1", b"\0\0\0\2", b"\xff" * 4, b"\x80\0\0\0", b"\0\0\1\0"]),
                max_size=40), st.binary(max_size=3),
       st.sampled_from([0, 5, 2**40, INT64_MAX - 2**31, INT64_MAX]))
def test_column_readers_are_the_list_readers(words, extra, base) -> None:
    buf = b"".join(words) + extra  # 4-byte words: entries that are zero, small, negative, large
    for read, read_columns in ((oi.read_offset_index, oi.read_offset_index_columns),
                               (ti.read_time_index, ti.read_time_index_columns)):
        want, got = read(buf, base, path="x"), read_columns(buf, base, path="x")
        assert list(got.entries()) == want.entries and len(got) == len(want.entries)
        assert got.zero_tail_entries == want.zero_tail_entries
        assert dicts(got.findings) == dicts(want.findings)
        assert got.offsets.tolist() == [min(e[0 if read is oi.read_offset_index else 1], INT64_MAX)
                                        for e in want.entries]


def test_column_readers_cap_their_findings_like_the_list_readers() -> None:
    data = b"".join(oi.ENTRY_STRUCT.pack(100 - i, 100 - i) for i in range(1, 99)) * 30
    assert dicts(oi.read_offset_index_columns(data, 0).findings) == dicts(oi.read_offset_index(data, 0).findings)
    data = b"".join(ti.ENTRY_STRUCT.pack(100 - i, 100 - i) for i in range(1, 99)) * 30
    assert dicts(ti.read_time_index_columns(data, 0).findings) == dicts(ti.read_time_index(data, 0).findings)


def test_offsets_above_int64_are_in_no_batch() -> None:
    """A base offset within 2^31 of INT64_MAX: entries past INT64_MAX reach no batch (columns saturate)."""
    base = INT64_MAX - 10
    buf = v2.build_batch([v2.Record(base + k, TS, b"k", b"v") for k in range(3)], base_offset=base)
    buf += v2.build_batch([v2.Record(INT64_MAX, TS + 1, b"k", b"v")], base_offset=INT64_MAX)
    infos = list(SegmentWalk(buf, "s.log", base).batches())
    o_list = [OffsetIndexEntry(base + 2, 0), OffsetIndexEntry(INT64_MAX, infos[1].position),
              OffsetIndexEntry(INT64_MAX + 5, infos[1].position), OffsetIndexEntry(INT64_MAX + 6, 0)]
    t_list = [TimeIndexEntry(TS, base + 2), TimeIndexEntry(TS + 1, INT64_MAX), TimeIndexEntry(TS + 1, INT64_MAX + 1)]
    okw = dict(base_offset=base, log_size=len(buf), path="s.index")
    tkw = dict(base_offset=base, path="s.timeindex")
    want_o = dicts(oracle.check_offset_index(infos, o_list, **okw))
    want_t = dicts(oracle.check_time_index(infos, t_list, **tkw))
    assert [f["offset"] for f in want_o] == [INT64_MAX + 5, INT64_MAX + 6]
    assert [f["code"] for f in want_t] == ["KAFKA_INDEX_OUT_OF_RANGE"]
    o_cols = oi.read_offset_index_columns(oi.write_offset_index(o_list, base), base)
    t_cols = ti.read_time_index_columns(ti.write_time_index(t_list, base), base)
    assert o_cols.offsets[-1] == INT64_MAX
    for sizes in ([1, 1], [2]):
        for entries in (o_list, o_cols):
            assert dicts(stream_offset(infos, entries, sizes, **okw)) == want_o
        for entries in (t_list, t_cols):
            assert dicts(stream_time(infos, entries, sizes, **tkw)) == want_t


# --- the carry, case by case --------------------------------------------------------------------


def _infos(*specs: tuple[int, int, int, bool]) -> list[BatchInfo]:
    """Batches of 100 bytes from (base offset, last offset, max timestamp, crc_valid)."""
    return [BatchInfo(100 * k, 100, 2, base, last, last - base + 1, 0, 0, ok, 0, 0, 0, ts, ts, -1, -1, -1,
                      False, False, False)
            for k, (base, last, ts, ok) in enumerate(specs)]


def test_an_append_ending_in_a_later_block_is_carried() -> None:
    infos = _infos((0, 1, 5, True), (2, 3, 6, True), (4, 5, 7, True), (6, 7, 8, True), (8, 9, 9, True))
    entries = [OffsetIndexEntry(7, 100), OffsetIndexEntry(8, 200), OffsetIndexEntry(11, 300)]
    kw = dict(base_offset=0, log_size=500, path="i")
    want = dicts(oracle.check_offset_index(infos, entries, **kw))
    assert [f["offset"] for f in want] == [8, 11]  # 7 ends batch 3, two batches on; 8 and 11 end no batch
    for sizes in ([1] * 5, [2, 2, 1], [5], [3, 2]):
        assert dicts(stream_offset(infos, entries, sizes, **kw)) == want


def test_the_tail_message_waits_for_the_last_batch() -> None:
    infos = _infos((0, 1, 5, True), (2, 3, 6, True), (4, 5, 7, True))
    entries = [OffsetIndexEntry(3, 150), OffsetIndexEntry(5, 320), OffsetIndexEntry(5, 0)]
    kw = dict(base_offset=0, log_size=400, path="i")
    want = dicts(oracle.check_offset_index(infos, entries, **kw))
    assert [f["message"] for f in want] == ["slot 0: position 150 is not at a batch start",
                                            "slot 1: position 320 is inside the damaged tail"]
    check = ist.OffsetIndexCheck(entries, **kw)
    check.feed(BatchBlock.from_infos(infos[:1]))  # 320 is past this block: undecided until finish
    check.feed(BatchBlock.from_infos(infos[1:]))
    assert dicts(check.finish()) == want
    assert dicts(check.finish()) == want  # finish can be asked again
    with pytest.raises(RuntimeError):
        check.feed(BatchBlock.from_infos(infos[:1]))


def test_time_index_batch_and_running_max_carried_across_blocks() -> None:
    infos = _infos((0, 1, 50, True), (2, 3, 90, False), (4, 5, 20, True), (6, 7, 60, True))
    entries = [TimeIndexEntry(0, 0), TimeIndexEntry(50, 1), TimeIndexEntry(50, 5), TimeIndexEntry(90, 3),
               TimeIndexEntry(60, 7), TimeIndexEntry(60, 8), TimeIndexEntry(50, -1)]
    kw = dict(base_offset=0, path="t")
    want = dicts(oracle.check_time_index(infos, entries, **kw))
    assert [(f["code"], f["offset"]) for f in want] == [  # slot 0 (0, 0) is padding: no max timestamp 0
        ("KAFKA_TIMEINDEX_MISMATCH", 5),
        ("KAFKA_INDEX_OUT_OF_RANGE", 8), ("KAFKA_TIMEINDEX_MISMATCH", -1)]
    for sizes in ([1] * 4, [2, 2], [3, 1], [4]):
        assert dicts(stream_time(infos, entries, sizes, **kw)) == want
    zero = _infos((0, 1, 0, True), (2, 3, 6, True))  # a batch with max timestamp 0: slot 0 is an entry
    assert dicts(stream_time(zero, [TimeIndexEntry(0, 0)], [1, 1], **kw)) == dicts(
        oracle.check_time_index(zero, [TimeIndexEntry(0, 0)], **kw)) == []
    assert dicts(stream_time(zero, [TimeIndexEntry(0, 2)], [1, 1], **kw)) == dicts(
        oracle.check_time_index(zero, [TimeIndexEntry(0, 2)], **kw)) != []


def test_no_batches() -> None:
    o = [OffsetIndexEntry(0, 0), OffsetIndexEntry(3, 10), OffsetIndexEntry(4, 90)]
    t = [TimeIndexEntry(0, 0), TimeIndexEntry(5, 3)]
    check = ist.TimeIndexCheck(t, base_offset=0)
    check.feed(BatchBlock.empty())
    assert dicts(check.finish()) == dicts(oracle.check_time_index([], t, base_offset=0))
    with pytest.raises(RuntimeError):
        check.feed(BatchBlock.empty())
    with pytest.raises(ValueError):
        ist.TimeIndexCheck(ti.read_time_index_columns(b"", 5), base_offset=0)
    assert dicts(stream_offset([], o, [], base_offset=0, log_size=50)) == dicts(
        oracle.check_offset_index([], o, base_offset=0, log_size=50))
    assert dicts(stream_time([], t, [], base_offset=0)) == dicts(oracle.check_time_index([], t, base_offset=0))


def test_unsorted_last_offsets_where_bisect_and_file_order_differ() -> None:
    """Reported, not changed: on offsets that go back, `check_offset_index`'s `bisect_left` jumps over
    the batch a broker's lookup from position P would stop at; the streaming check stops there."""
    lasts = [0, 1, 50, 3, 4, 5, 6, 7, 8]
    infos = _infos(*[(last, last, 1, True) for last in lasts])
    entries = [OffsetIndexEntry(7, 100)]
    kw = dict(base_offset=0, log_size=900, path="i")
    assert oracle.check_offset_index(infos, entries, **kw) == []
    [f] = stream_offset(infos, entries, [9], **kw)
    assert "no batch at or after position 100 ends at offset 7" in f.message
    assert dicts([f]) == dicts(oracle.linear_offset_check(infos, entries, **kw))


# --- memory shape -------------------------------------------------------------------------------


def _synthetic(first: int, n: int, cols: np.ndarray) -> BatchBlock:
    """Rows first..first+n of a log of 70-byte one-record batches, written into the reused `cols`."""
    k = np.arange(first, first + n, dtype=np.int64)
    view = cols[:, :n]
    view[:] = 0
    view[ROW["position"]], view[ROW["size"]], view[ROW["magic"]] = 70 * k, 70, 2
    view[ROW["base_offset"]] = view[ROW["last_offset"]] = k
    view[ROW["count"]] = view[ROW["crc_valid"]] = 1
    view[ROW["max_timestamp"]] = view[ROW["first_timestamp"]] = TS + k
    return BatchBlock(view)


def _arrays(obj, seen=None) -> int:
    """Bytes of every numpy array an object holds (through its attributes), to check `nbytes` owns up."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    if isinstance(obj, (list, tuple)):
        return sum(_arrays(o, seen) for o in obj)
    if isinstance(obj, dict):
        return sum(_arrays(o, seen) for o in obj.values())
    if hasattr(obj, "__dict__"):
        return sum(_arrays(o, seen) for o in vars(obj).values())
    return 0


def test_memory_does_not_grow_with_the_log() -> None:
    """2 M batches in blocks of 64 Ki rows: what the checks keep is the entries, the same after the
    first block as after the last, never a block (the blocks are views into one reused buffer)."""
    rows, chunk, every = 2_000_000, 65_536, 58  # an entry per ~4 KiB of 70-byte batches
    k = np.arange(every, rows, every, dtype=np.int64)
    o_cols = oi.read_offset_index_columns(oi.write_offset_index(zip(k.tolist(), (70 * k).tolist(), strict=True), 0), 0)
    o_cols_far = [OffsetIndexEntry(rows + 5, 70 * int(p)) for p in k[:1000]]  # wait for a batch till the end
    t_cols = ti.read_time_index_columns(ti.write_time_index(zip((TS + k).tolist(), k.tolist(), strict=True), 0), 0)
    checks = [ist.OffsetIndexCheck(o_cols, base_offset=0, log_size=70 * rows),
              ist.OffsetIndexCheck(o_cols_far, base_offset=0, log_size=70 * rows),
              ist.TimeIndexCheck(t_cols, base_offset=0)]
    cols = np.empty((len(FIELDS), chunk), dtype=np.int64)
    sizes = []
    for first in range(0, rows, chunk):
        block = _synthetic(first, min(chunk, rows - first), cols)
        for check in checks:
            check.feed(block)
            assert _arrays(check) == check.nbytes
        sizes.append([check.nbytes for check in checks])
    entries = [len(o_cols), len(o_cols_far), len(t_cols)]
    assert all(s <= 64 * e for s, e in zip(sizes[0], entries, strict=True))  # O(entries), nothing per batch
    assert max(sizes) == sizes[0] and sizes[-1] <= sizes[0]
    assert checks[0].finish() == [] and checks[2].finish() == []
    far = checks[1].finish()
    assert len(far) == ic.MAX_FINDINGS and far[-1].details["suppressed"] == 1000 - ic.MAX_FINDINGS


# --- dump --verify-index-only -------------------------------------------------------------------


@pytest.mark.parametrize("fast", [False, True])
def test_dump_verify_index_streams_the_log(tmp_path, monkeypatch, fast: bool) -> None:
    from replog.formats.kafka import index_verify, names
    from replog.toolkit.dump_kafka import index_entries
    from tests.formats.kafka.segments import simple_segment

    if fast:
        monkeypatch.setattr(index_verify, "FAST_WALK_BYTES", 0)
    monkeypatch.setattr(index_verify, "_BLOCK_ROWS", 3)
    base = 100
    buf, positions = simple_segment(count=12, per=3, start=base)
    log = tmp_path / names.segment_file_name(base, "log")
    log.write_bytes(buf)
    infos = list(SegmentWalk(buf, str(log), base).batches())
    o_list = [OffsetIndexEntry(b.last_offset, b.position) for b in infos[1::2]]
    o_list[2] = OffsetIndexEntry(o_list[2].offset, o_list[2].position + 4)  # not a batch start
    o_list.append(OffsetIndexEntry(base + 500, len(buf) + 9))                # past the log
    t_list = [TimeIndexEntry(b.max_timestamp, b.last_offset) for b in infos[::3]]
    t_list[1] = TimeIndexEntry(t_list[1].timestamp - 1, t_list[1].offset)
    for kind, raw, listed, ref in (
            ("index", oi.write_offset_index(o_list, base), o_list, oracle.check_offset_index),
            ("timeindex", ti.write_time_index(t_list, base), t_list, oracle.check_time_index)):
        path = tmp_path / names.segment_file_name(base, kind)
        path.write_bytes(raw)
        kw = dict(base_offset=base, path=str(path)) | ({"log_size": len(buf)} if kind == "index" else {})
        want = dicts(ref(infos, listed, **kw))
        assert want and dicts(index_verify.verify_index(path, base, listed)) == want
        got = [e for e in index_entries(path, True, False) if e["kind"] == "finding"]
        assert [{k: v for k, v in e.items() if k != "kind"} for e in got] == want
