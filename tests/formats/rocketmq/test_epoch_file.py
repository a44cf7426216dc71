from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.formats.codes import CODES
from replog.formats.errors import FormatError, UnreadableInput
from replog.formats.rocketmq.epoch_file import (
    LONG_MAX,
    EpochEntry,
    EpochRange,
    build_epoch_file,
    parse_epoch_file,
    read_epoch_file,
    with_end_offsets,
    write_epoch_file,
)


def test_reference_vectors() -> None:
    assert build_epoch_file([EpochEntry(7, 7000), EpochEntry(8, 8000)]) == "2\n773307083\n7-7000\n8-8000\n"
    assert build_epoch_file([EpochEntry(1, 100), EpochEntry(2, 300), EpochEntry(3, 500)]).split("\n")[1] \
        == "453994644"


@st.composite
def epoch_lists(draw: st.DrawFn) -> list[EpochEntry]:
    epochs = sorted(draw(st.sets(st.integers(0, 2**31 - 1), min_size=1, max_size=10)))
    starts = sorted(draw(st.sets(st.integers(0, 2**63 - 1), min_size=len(epochs), max_size=len(epochs))))
    return [EpochEntry(e, s) for e, s in zip(epochs, starts, strict=True)]


@given(epoch_lists())
def test_round_trip(entries: list[EpochEntry]) -> None:
    text = build_epoch_file(entries)
    assert parse_epoch_file(text) == entries
    assert parse_epoch_file(text.replace("\n", "\r\n")) == entries


def test_crc_zero_means_unchecked_and_errors() -> None:
    assert parse_epoch_file("1\n0\n5-10\n") == [EpochEntry(5, 10)]
    cases = ["1\n12345\n5-10\n",          # CRC mismatch
             "2\n0\n5-10\n",              # count mismatch
             "1\n0\n5-1x\n",              # Integer.parseInt fails
             "x\n0\n",                    # bad count
             "",                           # empty
             "2\n0\n5-10\n4-20\n"]        # epochs not increasing
    for text in cases:
        with pytest.raises(FormatError) as e:
            parse_epoch_file(text)
        assert e.value.code == "ROCKETMQ_EPOCH_FILE_INVALID"
    # a line that does not split in two is skipped, like fromLine returning null
    assert parse_epoch_file("1\n0\n5-10\nnot an entry\n") == [EpochEntry(5, 10)]
    assert parse_epoch_file("2\n0\n5-10\n4-20\n", check_order=False)[1] == EpochEntry(4, 20)


def test_end_offsets() -> None:
    es = [EpochEntry(1, 0), EpochEntry(3, 500)]
    assert with_end_offsets(es) == [EpochRange(1, 0, 500), EpochRange(3, 500, LONG_MAX)]
    assert with_end_offsets(es, 900)[-1].end_offset == 900


def test_bak_fallback(tmp_path: Path) -> None:
    p = tmp_path / "epochFileCheckpoint"
    with pytest.raises(UnreadableInput):
        read_epoch_file(p)
    write_epoch_file(tmp_path / "epochFileCheckpoint.bak", [EpochEntry(1, 0)])
    p.write_text("1\n99\n2-5\n")  # CRC mismatch -> fall back
    assert read_epoch_file(p) == ([EpochEntry(1, 0)], tmp_path / "epochFileCheckpoint.bak")
    write_epoch_file(p, [EpochEntry(2, 5)])
    assert read_epoch_file(p) == ([EpochEntry(2, 5)], p)
    with pytest.raises(ValueError):
        build_epoch_file([])


@given(st.text(max_size=60))
def test_random_text_only_format_error(text: str) -> None:
    try:
        parse_epoch_file(text)
    except FormatError as e:
        assert e.code in CODES  # only a located, registered format error may come out
