"""DLedger entries, index records and peer dirs: bytes laid by hand (struct, as DLedgerEntryCoder writes them), the
writer/parser pair under hypothesis, and each defect the walk reports, located."""
from __future__ import annotations

import struct
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replog.formats.findings import Finding
from replog.formats.layout import field_positions, struct_of
from replog.formats.rocketmq import commitlog as cl
from replog.formats.rocketmq import dledger as dl
from replog.formats.rocketmq.store import detect_store

FILE = 4096


def message(seq: int, body: int = 60) -> bytes:
    return cl.build_message(topic="T", body=f"seq-{seq}-".encode().ljust(body, b"x"), queue_id=seq % 2,
                            queue_offset=seq // 2, store_timestamp=1000 + seq)


def peer_dir(tmp_path: Path, count: int, terms: list[int] | None = None) -> tuple[Path, dl.DLedgerWriter]:
    w = dl.DLedgerWriter(FILE)
    for i in range(count):
        w.append(message(i), terms[i] if terms else 1)
    root = tmp_path / "store" / "dledger-n0"
    w.write_to(root)
    return root, w


def walk(root: Path) -> tuple[list[dl.Entry], list[Finding], dl.Walk]:
    state = dl.Walk()
    entries: list[dl.Entry] = []
    findings: list[Finding] = []
    for item in dl.walk_peer(dl.read_peer(root), state):
        if isinstance(item, Finding):
            findings.append(item)
        else:
            entries.append(item[0])
    return entries, findings, state


def test_layouts_are_the_coder_s() -> None:
    """DLedgerEntryCoder#encode: magic, size, index, term, pos, channel, chainCrc, bodyCrc, body size = 48 bytes;
    encodeIndex: magic, pos, size, index, term = 32 bytes."""
    assert struct_of(dl.ENTRY_HEADER).size == dl.BODY_OFFSET, "entry header is not BODY_OFFSET bytes"
    assert struct_of(dl.INDEX_RECORD).size == dl.INDEX_UNIT_SIZE, "index record is not INDEX_UNIT_SIZE bytes"
    assert field_positions(dl.ENTRY_HEADER)["pos"] == 24, "pos is not at DLedgerEntry.POS_OFFSET"


def test_hand_laid_entry_is_read() -> None:
    """An entry packed field by field (no replog writer): the header reader and the message at pos + 48."""
    body = bytearray(message(0))
    body[dl.PHY_POS_POSITION:dl.PHY_POS_POSITION + 8] = struct.pack(">q", 100 + 48)
    raw = struct.pack(">iiqqqiiii", 1, 48 + len(body), 7, 3, 100, 0, 0, 0, len(body)) + bytes(body)
    buf = bytes(100) + raw
    e = dl.read_header(buf, 100)
    assert e is not None, "no entry read at 100"
    assert (e.index, e.term, e.pos, e.size, e.body_size) == (7, 3, 100, 48 + len(body), len(body)), f"fields {e}"
    parsed = dl.ENTRY_HEADER.parse(raw)
    assert (parsed.index, parsed.term, parsed.pos, parsed.body_size) == (e.index, e.term, e.pos, e.body_size), \
        "the construct layout and the struct fast path disagree"
    msg = cl.read_message(buf, 100 + 48)
    assert msg.physical_offset == msg.commitlog_offset == e.message_offset, "message offset is not pos + 48"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 400), st.integers(0, 2)), min_size=1, max_size=40))
def test_writer_and_walker_agree(tmp_path_factory, spec: list[tuple[int, int]]) -> None:  # type: ignore[no-untyped-def]
    """Whatever the bodies and (non-decreasing) terms, the walk gives back every entry the writer laid, in order,
    BLANKs closing full files, with no finding; each index record repeats its entry."""
    terms = sorted(t for _, t in spec)
    w = dl.DLedgerWriter(FILE)
    for (size, _), term in zip(spec, terms, strict=True):
        w.append(cl.build_message(topic="T", body=bytes(size)), term)
    root = tmp_path_factory.mktemp("p") / "dledger-n0"
    w.write_to(root)
    entries, findings, state = walk(root)
    assert findings == [], f"findings on a clean log: {findings[:3]}"
    assert [(e.index, e.term, e.pos, e.size) for e in entries] == [(e.index, e.term, e.pos, e.size)
                                                                    for e in w.entries], "entries differ"
    assert state.recovered_end == w.entries[-1].end, "recovery end is not the last entry's end"
    assert [e.index for e in entries] == list(range(len(spec))), "indexes not 0.."


def test_blank_closes_a_file_and_the_next_starts_at_its_name(tmp_path: Path) -> None:
    root, w = peer_dir(tmp_path, 60)
    files = dl.mapped_files(root / dl.DATA)
    assert len(files) > 1, "60 entries should span files"
    raw = files[0][1].read_bytes()
    last = [e for e in w.entries if e.file_start == 0][-1]
    assert struct.unpack_from(">ii", raw, last.position + last.size) == (-1, FILE - last.position - last.size), \
        "no BLANK (magic -1, the rest of the file) after the first file's last entry"
    assert w.entries[len([e for e in w.entries if e.file_start == 0])].pos == FILE, "next file does not start at 4096"


def _poke(path: Path, at: int, fmt: str, value: int) -> None:
    raw = bytearray(path.read_bytes())
    struct.pack_into(fmt, raw, at, value)
    path.write_bytes(bytes(raw))


def test_each_defect_is_located(tmp_path: Path) -> None:
    """pos field, index gap, term going down, index record: each a finding with file, position and index; the
    recovery end stops at the first continuity defect, not at the index record (dledger-all-0.3.1.2
    `DLedgerMmapFileStore#recover`: "Compare data to index failed" truncates the index and rewrites it from the
    data, `needWriteIndex`, and the scan goes on)."""
    root, w = peer_dir(tmp_path, 20, terms=[1] * 10 + [2] * 10)
    data = root / dl.DATA / f"{0:020d}"
    e5, e8, e12 = w.entries[5], w.entries[8], w.entries[12]
    _poke(data, e8.position + 8, ">q", 99)             # index 8 -> 99: a gap (and 9 after 99)
    _poke(data, e12.position + 16, ">q", 1)            # term 2 -> 1: below the previous
    _poke(root / dl.INDEX / f"{0:020d}", 5 * 32 + 4, ">q", 12345)   # index record 5 says another pos
    entries, findings, state = walk(root)
    codes = [(f.code, f.position) for f in findings]
    assert ("ROCKETMQ_DLEDGER_INDEX_MISMATCH", e5.position) in codes, f"index record 5 not reported: {codes}"
    assert ("ROCKETMQ_DLEDGER_CONTINUITY", e8.position) in codes, f"index gap at entry 8 not reported: {codes}"
    assert ("ROCKETMQ_DLEDGER_CONTINUITY", e12.position) in codes, f"term decrease at 12 not reported: {codes}"
    assert all(f.path == str(data) for f in findings if f.code == "ROCKETMQ_DLEDGER_CONTINUITY"), "wrong file"
    assert state.recovered_end == e8.pos, f"recovery end {state.recovered_end}, not entry 8 (e5 at {e5.pos})"
    assert len(entries) == 20, "a continuity defect must not stop the walk"


def test_bad_pos_ends_the_file(tmp_path: Path) -> None:
    root, w = peer_dir(tmp_path, 10)
    data = root / dl.DATA / f"{0:020d}"
    _poke(data, w.entries[3].position + 24, ">q", 7)
    entries, findings, state = walk(root)
    assert [f.code for f in findings] == ["ROCKETMQ_DLEDGER_ENTRY_INVALID"], f"findings {findings}"
    assert findings[0].position == w.entries[3].position, "finding not at entry 3"
    assert len(entries) == 3 and state.recovered_end == w.entries[2].end, "walk did not stop at entry 3"


def test_index_record_past_the_data(tmp_path: Path) -> None:
    root, w = peer_dir(tmp_path, 10)
    data = root / dl.DATA / f"{0:020d}"
    raw = bytearray(data.read_bytes())
    raw[w.entries[9].position:] = bytes(len(raw) - w.entries[9].position)     # entry 9 lost, its index record kept
    data.write_bytes(bytes(raw))
    tail = dl.index_tail(dl.read_peer(root), 8)
    assert tail is not None and tail.details["index"] == 9, f"index tail not reported: {tail}"


def test_store_root_detection(tmp_path: Path) -> None:
    """`<storePathRootDir>/dledger-<selfId>/data` (DLedgerConfig#getDefaultPath) and the commitlog/ variant."""
    peer_dir(tmp_path, 3)
    layout = detect_store(tmp_path / "store")
    assert layout is not None and layout.dledger, "dledger-n0/ beside nothing else is not detected as a store"
    assert layout.dledger_dirs == [tmp_path / "store" / "dledger-n0"], f"dirs {layout.dledger_dirs}"
    other = tmp_path / "other"
    w = dl.DLedgerWriter(FILE)
    w.append(message(0), 1)
    w.write_to(other / "commitlog" / "dledger-n1")
    layout = detect_store(other)
    assert layout is not None and layout.dledger_dirs == [other / "commitlog" / "dledger-n1"], "commitlog variant"


def test_checkpoint_and_term_files(tmp_path: Path) -> None:
    root, w = peer_dir(tmp_path, 4)
    (root / dl.CURRTERM).write_text("#comment\ncurrTerm=5\nvoteLeader=n2\n")
    peer = dl.read_peer(root)
    assert (peer.committed_index, peer.current_term, peer.currterm["voteLeader"]) == (3, 5, "n2"), "small files"
    assert dl.read_properties(root / "missing") == {}, "an absent file is empty"


def test_dump_reads_each_dledger_file(tmp_path: Path) -> None:
    """`dump` of a data file: each entry header then its message at pos + 48; of an index file: its records; of
    `checkpoint`: its properties (not the 4 KiB store checkpoint)."""
    from replog.toolkit.dump import DumpOptions, dump_file

    root, w = peer_dir(tmp_path, 5)
    data = [e for e in dump_file(root / dl.DATA / f"{0:020d}", DumpOptions()) if e["kind"] != "file"]
    assert [e["kind"] for e in data] == ["dledger_entry", "message"] * 5, f"kinds {[e['kind'] for e in data]}"
    assert [e["physical_offset"] for e in data[1::2]] == [e.pos + 48 for e in w.entries], "message offsets"
    index = [e for e in dump_file(root / dl.INDEX / f"{0:020d}", DumpOptions()) if e["kind"] == "dledger_index"]
    assert [(e["index"], e["pos"]) for e in index] == [(e.index, e.pos) for e in w.entries], "index records"
    cp = [e for e in dump_file(root / dl.CHECKPOINT, DumpOptions()) if e["kind"] == "dledger_properties"]
    assert cp and cp[0]["properties"]["committedIndex"] == "4", f"checkpoint {cp}"


def test_a_file_ending_in_zeros_before_the_last_stops_the_recovery(tmp_path: Path) -> None:
    """`recover` goes to the next file only past a BLANK; a zero size ends its scan, whatever follows."""
    root, w = peer_dir(tmp_path, 60)
    first = root / dl.DATA / f"{0:020d}"
    last_in_first = [e for e in w.entries if e.file_start == 0][-1]
    _poke(first, last_in_first.position, ">i", 0)        # the last entry of file 0 wiped: magic ...
    _poke(first, last_in_first.position + 4, ">i", 0)    # ... and size
    _poke(first, last_in_first.end, ">i", 0)             # and the BLANK after it
    entries, findings, state = walk(root)
    assert [f.code for f in findings] == ["ROCKETMQ_DLEDGER_ENTRY_INVALID", "ROCKETMQ_DLEDGER_CONTINUITY"], findings
    assert findings[0].position == last_in_first.position, "finding not where file 0's entries end"
    assert state.recovered_end == w.entries[last_in_first.index - 1].end, f"recovery end {state.recovered_end}"
