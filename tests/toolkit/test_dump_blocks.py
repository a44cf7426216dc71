"""`dump` written a block at a time (toolkit/dump_blocks, dump_kernel) gives the bytes of the entry-by-entry
writers: JSON lines (`output.dumps` per entry) and kafka-dump-log text (`dump_log.dump_log_lines`), on generated
segments (clean, damaged, control batches, legacy messages, any bytes in keys, values and headers) and on the
real segments of the broker lab's corpus."""
from __future__ import annotations

import io
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replog.formats.kafka import batch as v2
from replog.formats.kafka import fastwalk
from replog.toolkit import dump_blocks, dump_segment
from replog.toolkit.commands import write_lines
from replog.toolkit.dump import DumpOptions, dump_items, dump_paths
from replog.toolkit.dump_log import Gaps, Style, dump_log_lines
from replog.toolkit.output import dumps
from tests.formats.kafka.test_fastwalk import segments

SEG = "00000000000000000000.log"
CORPUS = Path.home() / ".cache" / "replog" / "corpus"
OPTIONS = [DumpOptions(), DumpOptions(deep=True), DumpOptions(deep=True, key_decoder="hex"),
           DumpOptions(deep=True, from_offset=3, to_offset=9), DumpOptions(print_data=True)]
STYLES = [Style(), Style(print_data=True), Style(skip_record_metadata=True)]


@pytest.fixture(autouse=True)
def small_runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The compiled walk for every size (runs are made only there), runs of a few batches so that run and
    fallback boundaries fall inside small segments; yields [runs written by the kernel]."""
    if not fastwalk.HAVE_NUMBA:
        pytest.skip("numba not installed")
    monkeypatch.setattr(dump_segment, "FAST_WALK_BYTES", 0)
    monkeypatch.setattr(dump_segment, "BLOCK_ROWS", 9)
    monkeypatch.setattr(dump_segment, "RUN_ROWS", 4)
    monkeypatch.setattr(dump_blocks.k, "TILE", 1)  # runs of 2 batches and more are made in two halves
    written = [0]
    text = dump_blocks.RunText.text

    def counted(self: dump_blocks.RunText, run: dump_segment.EntryRun) -> tuple[memoryview, ...] | None:
        out = text(self, run)
        written[0] += out is not None
        return out
    monkeypatch.setattr(dump_blocks.RunText, "text", counted)
    yield written


def jsonl_ways(path: Path, opts: DumpOptions) -> tuple[bytes, bytes]:
    """(entry by entry, block at a time) JSON lines of one file."""
    slow = "".join(dumps(e) + "\n" for e in dump_paths([path], opts)).encode()
    sink = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    dump_blocks.write_jsonl_items(dump_items([path], opts), sink)
    return slow, _written(sink)


def dump_log_ways(path: Path, opts: DumpOptions, style: Style) -> tuple[bytes, bytes]:
    """(entry by entry, block at a time) kafka-dump-log text of one file, the stderr gaps report after it."""
    gaps = Gaps()
    slow = "".join(line + "\n" for line in dump_log_lines(dump_paths([path], opts), style, gaps))
    slow += "".join(line + "\n" for line in gaps.lines())
    sink, gaps = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), Gaps()
    write_lines(dump_log_lines(dump_blocks.formatted(dump_items([path], opts), dump_blocks.RunText("dump-log", style)),
                               style, gaps), sink)
    write_lines(gaps.lines(), sink)
    return slow.encode(), _written(sink)


def _written(sink: io.TextIOWrapper) -> bytes:
    sink.flush()
    raw = sink.buffer
    assert isinstance(raw, io.BytesIO)
    return raw.getvalue()


def assert_same_bytes(path: Path, opts: DumpOptions, style: Style) -> None:
    slow, fast = jsonl_ways(path, opts)
    assert fast == slow, f"JSON lines differ at byte {_first_difference(slow, fast)}"
    slow, fast = dump_log_ways(path, opts, style)
    assert fast == slow, f"dump-log text differs at byte {_first_difference(slow, fast)}"


def _first_difference(a: bytes, b: bytes) -> str:
    at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return f"{at}: {a[max(at - 60, 0):at + 60]!r} vs {b[max(at - 60, 0):at + 60]!r}"


# --- generated segments --------------------------------------------------------------------

# ASCII only (with what JSON escapes): one byte outside ASCII sends its whole run entry by entry, which the
# damaged segments and test_non_ascii_runs_fall_back cover
ascii_bytes = st.text(alphabet='ab ,"\\\n\r\t\b\f\x00\x01\x1f\x7f', max_size=8).map(str.encode)
text_bytes = st.one_of(st.none(), ascii_bytes)
header_lists = st.lists(st.tuples(st.sampled_from(["h", "trace", "", "a,b", 'q"', "t\\"]), text_bytes), max_size=3)
BIG = st.sampled_from([-1, 0, 1, 9, 10, 99, 100, 2**31 - 1, 2**62, 2**63 - 1])


@st.composite
def clean_batch(draw: st.DrawFn, offset: int) -> tuple[bytes, int]:
    """A v2 data batch of any field values the writers print (no damage)."""
    n = draw(st.integers(0, 4))
    ts = draw(st.sampled_from([-1, 0, 1_700_000_000_000, 2**62]))
    recs = [v2.Record(offset + i, ts + i, draw(text_bytes), draw(text_bytes), tuple(draw(header_lists)))
            for i in range(n)]
    raw = v2.build_batch(recs, base_offset=offset, codec=draw(st.sampled_from([0, 0, 1, 4])),
                         base_sequence=draw(st.sampled_from([-1, 0, 2**31 - 2, 2**31 - 1])),
                         producer_id=draw(BIG), producer_epoch=draw(st.sampled_from([-1, 0, 32767])),
                         timestamp_type=draw(st.sampled_from([v2.CREATE_TIME, v2.LOG_APPEND_TIME])),
                         partition_leader_epoch=draw(st.sampled_from([-1, 0, 2**31 - 1])),
                         transactional=draw(st.booleans()),
                         delete_horizon=draw(st.sampled_from([None, None, 1_700_000_000_000])))
    return raw, offset + max(n, 1) + draw(st.sampled_from([0, 0, 5]))


@st.composite
def clean_segments(draw: st.DrawFn) -> bytes:
    parts, offset = [], draw(st.sampled_from([0, 1000, 2**40]))
    for _ in range(draw(st.integers(1, 12))):
        raw, offset = draw(clean_batch(offset))
        parts.append(raw)
    return b"".join(parts)


SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@SETTINGS
@given(clean_segments(), st.sampled_from(OPTIONS), st.sampled_from(STYLES))
def test_clean_segments_same_bytes(buf: bytes, opts: DumpOptions, style: Style) -> None:
    assert_segment_same_bytes(buf, opts, style)


@SETTINGS
@given(segments(), st.sampled_from(OPTIONS), st.sampled_from(STYLES))
def test_damaged_segments_same_bytes(buf: bytes, opts: DumpOptions, style: Style) -> None:
    """Findings, control markers, legacy messages, torn tails: what a run cannot hold goes entry by entry."""
    assert_segment_same_bytes(buf, opts, style)


def assert_segment_same_bytes(buf: bytes, opts: DumpOptions, style: Style) -> None:
    """`assert_same_bytes` on `buf` written as a segment file (hypothesis examples share no pytest tmp_path)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / SEG
        path.write_bytes(buf)
        assert_same_bytes(path, opts, style)


def test_clean_ascii_segment_is_written_by_the_kernel(tmp_path: Path, small_runs: list[int]) -> None:
    """The property tests above would pass with no run ever written: here runs must be (both formats, deep)."""
    value, heads = b'v"\\\n\t\x01\x7f\x1f', (("h", b"x"), ("g", None))
    path = tmp_path / SEG
    path.write_bytes(b"".join(v2.build_batch([v2.Record(o + i, 1_700_000_000_000 + i, b"k%d" % i, value, heads)
                                              for i in range(3)], base_offset=o, base_sequence=2**31 - 2, producer_id=7)
                              for o in range(0, 60, 3)))
    assert_same_bytes(path, DumpOptions(deep=True), Style())
    assert small_runs[0] >= 10, f"only {small_runs[0]} runs went through the kernel"


@pytest.mark.parametrize("value", [b"caf\xc3\xa9", b"\xff\xfe", "é".encode()], ids=["utf8", "not-utf8", "e-acute"])
def test_non_ascii_runs_fall_back(tmp_path: Path, small_runs: list[int], value: bytes) -> None:
    """A byte outside ASCII (a value, or a header key with --deep) is refused by the kernel: the run is written
    entry by entry, with the same bytes (text as UTF-8, bytes that are not as the undecodable marker)."""
    path = tmp_path / SEG
    heads = ((value.decode("utf-8", "replace"), None),)
    path.write_bytes(b"".join(v2.build_batch([v2.Record(o, 5, b"k", value, heads)], base_offset=o) for o in range(8)))
    assert_same_bytes(path, DumpOptions(deep=True), Style())
    assert small_runs[0] == 0, f"{small_runs[0]} runs written by the kernel: each holds a byte outside ASCII"


def test_runs_expand_to_the_entries(tmp_path: Path) -> None:
    """`dump_items` with each run expanded is `dump_paths`: the library's entries do not depend on runs."""
    path = tmp_path / SEG
    path.write_bytes(b"".join(v2.build_batch([v2.Record(o, 5, b"k", None, ())], base_offset=o) for o in range(20)))
    for opts in OPTIONS:
        expanded = [e for item in dump_items([path], opts)
                    for e in (item.entries() if isinstance(item, dump_segment.EntryRun) else [item])]
        assert expanded == list(dump_paths([path], opts)), f"runs expand differently with {opts}"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-1, 30) | st.sampled_from([2**63 - 1, -2**63]), max_size=30), st.integers(-1, 5))
def test_gaps_see_all_is_see_of_each(offsets: list[int], last: int) -> None:
    one, bulk = Gaps(), Gaps()
    for g in (one, bulk):
        g.start("seg.log")
        g.see(last)
    for o in offsets:
        one.see(o)
    bulk.see_all(np.array(offsets, dtype=np.int64))
    assert list(bulk.lines()) == list(one.lines()), "the bulk gap report differs"
    assert bulk._last == one._last, "the offset the next run compares with differs"


# --- real segments ---------------------------------------------------------------------------


def corpus_segments() -> list[Path]:
    return sorted(CORPUS.glob("**/*.log")) if CORPUS.is_dir() else []


@pytest.mark.parametrize("opts", [DumpOptions(), DumpOptions(deep=True)], ids=["batches", "deep"])
def test_real_segments_same_bytes(opts: DumpOptions) -> None:
    """Every segment the broker lab's brokers wrote (codecs, transactions, compaction, KRaft metadata)."""
    found = corpus_segments()
    if not found:
        pytest.skip(f"no broker lab corpus under {CORPUS}")
    for path in found:
        assert_same_bytes(path, opts, Style())
