from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replog.formats.errors import FormatError
from replog.formats.findings import Finding
from replog.formats.rocketmq.commitlog import (
    BLANK,
    MAGIC_BLANK,
    MAGIC_V1,
    MAGIC_V2,
    MESSAGE,
    CommitLogWriter,
    Message,
    build_blank,
    build_message,
    encode_message,
    java_crc32,
    java_string_hash,
    parse_properties,
    read_message,
)
from replog.formats.rocketmq.commitlog_walk import walk_commitlog
from tests.realdata import REALDATA

REAL = REALDATA
REAL_COMMITLOGS = [REAL / "rocketmq-shaoxubao/store/unit_test_store/commitlog/00000000000000000000",
                   REAL / "rocketmq-apache-pr-unit-store/commitlog/00000000000000000000"]

EXAMPLE = dict(topic="FooBar", body=b"Once, there was a chance for me!",
               properties={"KEYS": "1700000000000", "TAGS": "TAG1"}, born_timestamp=1700000000000,
               born_host="127.0.0.1:0", store_timestamp=1700000000001, store_host="10.0.0.1:8123")


# --- reference vectors (docs/reference/rocketmq.md §0, §2.2, §2.6, §2.8) --------------------------------------

def test_worked_example_bytes() -> None:
    raw = build_message(**EXAMPLE)
    assert len(raw) == 158
    assert raw[:88].hex() == (
        "0000009edaa320a70902156000000000000000000000000000000000000000000000000000000000"
        "0000018bcfe568007f000001000000000000018bcfe568010a00000100001fbb0000000000000000"
        "0000000000000020")
    msg = read_message(raw, 0)
    assert msg.body_crc == 151131488 and msg.crc_valid
    assert msg.msg_id == "0A00000100001FBB0000000000000000"
    assert msg.tags_code == 2567159


def test_property_crc_example() -> None:
    raw = build_message(**EXAMPLE, prop_crc=True)
    assert len(raw) == 178
    assert raw.endswith(b"__CRC32#\x013012139421\x02")
    msg = read_message(raw, 0)
    assert msg.prop_crc == 1249312103 and msg.prop_crc_valid is True
    bad = bytearray(raw)
    bad[60] ^= 1  # store timestamp: covered by the record CRC, not by the body CRC
    msg = read_message(bytes(bad), 0)
    assert msg.crc_valid and msg.prop_crc_valid is False


def test_java_helpers() -> None:
    assert [java_string_hash(s) for s in ("TAG1", "TagA", "abc", "FooBar#KEY1")] == \
        [2567159, 2598919, 96354, -2081429752]
    assert java_string_hash("\U0001F600") == (31 * 0xD83D + 0xDE00)  # UTF-16 surrogates
    data = b"x" * 100
    assert java_crc32(data) == zlib.crc32(data) & 0x7FFFFFFF


def test_properties_parse_like_java() -> None:
    text = "a\x01b\x02\x01x\x02k\x01\x02kk\x01v\x01w\x02ab\x02K\x01v1\x02K\x01v2\x02"
    assert parse_properties(text) == {"a": "b", "kk": "v\x01w", "K": "v2"}


# --- construct layout vs fast reader, round trips ------------------------------------------------

hosts_v4 = st.tuples(st.integers(0, 255), st.integers(0, 255), st.integers(0, 255), st.integers(0, 255),
                     st.integers(-2**31, 2**31 - 1)).map(lambda t: f"{t[0]}.{t[1]}.{t[2]}.{t[3]}:{t[4]}")
hosts_v6 = st.tuples(st.sampled_from(["::1", "fe80::1", "2001:db8::8:800:200c:417a"]),
                     st.integers(0, 65535)).map(lambda t: f"[{t[0]}]:{t[1]}")
i32 = st.integers(-2**31, 2**31 - 1)
i64 = st.integers(-2**63, 2**63 - 1)
prop_text = st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)),
                    min_size=1, max_size=12)
fields = st.fixed_dictionaries({
    "topic": st.one_of(st.text(min_size=0, max_size=20).filter(lambda t: len(t.encode()) <= 127),
                       st.text(alphabet="abc", min_size=128, max_size=300)),
    "body": st.binary(max_size=200),
    "properties": st.dictionaries(prop_text, prop_text, max_size=5),
    "queue_id": i32, "flag": i32, "queue_offset": i64, "physical_offset": i64,
    "sys_flag": st.integers(0, 0x7FF).map(lambda f: f & ~0x30), "born_timestamp": i64,
    "born_host": st.one_of(hosts_v4, hosts_v6), "store_timestamp": i64,
    "store_host": st.one_of(hosts_v4, hosts_v6), "reconsume_times": i32,
    "prepared_transaction_offset": i64,
})


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(fields)
def test_round_trip_and_construct_agreement(f: dict) -> None:
    raw = build_message(**f)
    msg = read_message(raw, 0, file_start=0)
    assert msg.kind == "message" and msg.size == len(raw) and msg.crc_valid
    for k, v in f.items():
        if k != "sys_flag":
            assert getattr(msg, k) == v, k
    assert msg.sys_flag & ~0x30 == f["sys_flag"]
    assert msg.magic == (MAGIC_V2 if len(f["topic"]) > 127 else MAGIC_V1)
    assert encode_message(msg) == raw
    c = MESSAGE.parse(raw)
    assert (c.total_size, c.magic, c.body_crc, c.queue_id, c.flag, c.queue_offset, c.physical_offset,
            c.sys_flag, c.born_timestamp, c.store_timestamp, c.reconsume_times,
            c.prepared_transaction_offset, c.body, c.topic.decode(), c.properties) == \
        (msg.size, msg.magic, msg.body_crc, msg.queue_id, msg.flag, msg.queue_offset, msg.physical_offset,
         msg.sys_flag, msg.born_timestamp, msg.store_timestamp, msg.reconsume_times,
         msg.prepared_transaction_offset, msg.body, msg.topic, msg.properties_raw)
    assert MESSAGE.build(c) == raw
    assert len(c.born_host) == (20 if msg.sys_flag & 0x10 else 8)
    assert len(c.store_host) == (20 if msg.sys_flag & 0x20 else 8)


def test_blank_layout_and_reader() -> None:
    raw = build_blank(108) + bytes(100)
    assert BLANK.parse(raw) == BLANK.parse(BLANK.build({"total_size": 108}))
    msg = read_message(raw, 0)
    assert (msg.kind, msg.size, msg.magic) == ("blank", 108, MAGIC_BLANK)
    with pytest.raises(FormatError) as e:
        read_message(build_blank(200) + bytes(100), 0)
    assert e.value.code == "ROCKETMQ_BLANK_INVALID"
    with pytest.raises(ValueError):
        build_blank(7)


@pytest.mark.parametrize("damage, code", [
    (lambda b: b[:4] + b"\0\0\0\0" + b[8:], "ROCKETMQ_MESSAGE_BAD_MAGIC"),
    (lambda b: struct.pack(">i", 50) + b[4:], "ROCKETMQ_MESSAGE_BAD_SIZE"),
    (lambda b: struct.pack(">i", len(b) + 1) + b[4:] + b"\0", "ROCKETMQ_MESSAGE_BAD_SIZE"),
    (lambda b: b[:-1], "ROCKETMQ_MESSAGE_BAD_SIZE"),
    (lambda b: b[:84] + struct.pack(">i", -1) + b[88:], "ROCKETMQ_MESSAGE_BAD_SIZE"),
])
def test_reader_rejects(damage, code) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(FormatError) as e:
        read_message(damage(build_message(**EXAMPLE)), 0, file_start=4096)
    assert e.value.code == code and e.value.position == 0 and e.value.offset == 4096


# --- writer ----------------------------------------------------------------------------------

def _store(n: int = 30, file_size: int = 1024, **kw: object) -> CommitLogWriter:
    w = CommitLogWriter(file_size, store_host="10.0.0.1:8123", **kw)  # type: ignore[arg-type]
    for i in range(n):
        w.append(topic="T", body=b"m%03d" % i + b"x" * 40, queue_id=i % 2, born_timestamp=1000 + i,
                 store_timestamp=2000 + i, properties={"KEYS": f"k{i:03d}", "TAGS": "A"})
    return w


def test_writer_lays_files_like_the_broker() -> None:
    w = _store()
    files = w.files()
    size = len(build_message(topic="T", body=b"m000" + b"x" * 40, properties={"KEYS": "k000", "TAGS": "A"}))
    per_file = (1024 - 8) // size  # a message needs 8 spare bytes for the BLANK
    assert sorted(files) == [i * 1024 for i in range(len(files))]
    assert all(len(b) == 1024 for b in files.values())
    first = files[0]
    blank_at = per_file * size
    assert struct.unpack_from(">ii", first, blank_at) == (1024 - blank_at, MAGIC_BLANK)
    assert not any(first[blank_at + 8:])
    assert struct.unpack_from(">q", files[1024], 28)[0] == 1024
    assert w.max_offset == 1024 * (len(files) - 1) + (30 - per_file * (len(files) - 1)) * size


def test_writer_exact_fit_and_queue_offsets() -> None:
    size = len(build_message(topic="T", body=b"b"))
    w = CommitLogWriter(size * 2 + 8)
    a, b, c = (w.append(topic="T", body=b"b") for _ in range(3))
    assert (a.physical_offset, b.physical_offset, c.physical_offset) == (0, size, size * 2 + 8)
    assert [x.queue_offset for x in (a, b, c)] == [0, 1, 2]
    p = w.append(topic="T", body=b"b", sys_flag=0x4)  # PREPARED: queue offset 0, not counted
    assert p.queue_offset == 0 and w.append(topic="T", body=b"b").queue_offset == 3
    with pytest.raises(ValueError):
        w.append(topic="T", body=b"x" * (size * 2))


def test_write_to_dir(tmp_path: Path) -> None:
    paths = _store().write_to(tmp_path / "commitlog")
    assert [p.name for p in paths][:2] == ["00000000000000000000", "00000000000000001024"]
    out = list(walk_commitlog(tmp_path))
    assert not [x for x in out if isinstance(x, Finding)]
    msgs = [x for x in out if isinstance(x, Message)]
    assert len(msgs) == 30 and [m.body[:4] for m in msgs] == [b"m%03d" % i for i in range(30)]
    assert [m.queue_offset for m in msgs if m.queue_id == 1] == list(range(15))
    assert all(m.physical_offset == m.commitlog_offset for m in msgs)


# --- walker damage ---------------------------------------------------------------------------

def _write(tmp_path: Path, files: dict[int, bytes]) -> Path:
    d = tmp_path / "commitlog"
    d.mkdir()
    for start, data in files.items():
        (d / f"{start:020d}").write_bytes(data)
    return d


def _walk(d: Path, **kw: object) -> tuple[list[Message], list[Finding]]:
    out = list(walk_commitlog(d, **kw))  # type: ignore[arg-type]
    return [x for x in out if isinstance(x, Message)], [x for x in out if isinstance(x, Finding)]


def _codes(findings: list[Finding]) -> list[tuple[str, str, int | None]]:
    return [(f.code, Path(f.path).name[-4:], f.position) for f in findings]


def test_flipped_body_byte(tmp_path: Path) -> None:
    files = {k: bytearray(v) for k, v in _store().files().items()}
    victim = read_message(bytes(files[1024]), 0, file_start=1024)
    second = victim.size
    files[1024][second + 100] ^= 0xFF  # body of the 2nd message of file 1024
    msgs, findings = _walk(_write(tmp_path, {k: bytes(v) for k, v in files.items()}))
    assert _codes(findings) == [("ROCKETMQ_BODY_CRC_MISMATCH", "1024", second)]
    assert findings[0].offset == 1024 + second
    assert len(msgs) == 30 and sum(not m.crc_valid for m in msgs) == 1


def test_truncated_tail(tmp_path: Path) -> None:
    files = _store().files()
    last = max(files)
    end = _store().max_offset - last
    files[last] = files[last][:end - 10]
    msgs, findings = _walk(_write(tmp_path, files), file_size=1024)
    size = read_message(files[last], 0).size
    assert _codes(findings) == [("ROCKETMQ_FILE_NAME_MISMATCH", f"{last:020d}"[-4:], None),
                                ("ROCKETMQ_DIRTY_TAIL", f"{last:020d}"[-4:], end - size)]
    assert findings[1].details["cause"] == "ROCKETMQ_MESSAGE_BAD_SIZE"
    assert len(msgs) == 29


def test_wrong_physical_offset(tmp_path: Path) -> None:
    files = _store().files()
    data = bytearray(files[0])
    size = read_message(bytes(data), 0).size
    struct.pack_into(">q", data, size + 28, 99)
    files[0] = bytes(data)
    msgs, findings = _walk(_write(tmp_path, files))
    assert _codes(findings) == [("ROCKETMQ_PHYSICAL_OFFSET_MISMATCH", "0000", size)]
    assert findings[0].details["physical_offset"] == 99 and len(msgs) == 30


def test_bad_magic_resyncs(tmp_path: Path) -> None:
    files = _store().files()
    data = bytearray(files[0])
    size = read_message(bytes(data), 0).size
    data[size + 4:size + 8] = b"\x12\x34\x56\x78"
    files[0] = bytes(data)
    msgs, findings = _walk(_write(tmp_path, files))
    assert _codes(findings) == [("ROCKETMQ_MESSAGE_BAD_MAGIC", "0000", size)]
    assert findings[0].details["skipped_bytes"] == size
    assert len(msgs) == 29 and msgs[1].position == 2 * size


def test_clobbered_header_resyncs_on_next_message(tmp_path: Path) -> None:
    files = _store().files()
    data = bytearray(files[0])
    size = read_message(bytes(data), 0).size
    data[size:size + 8] = b"\xff" * 8  # 2nd message header gone
    files[0] = bytes(data)
    msgs, findings = _walk(_write(tmp_path, files))
    assert _codes(findings) == [("ROCKETMQ_MESSAGE_BAD_MAGIC", "0000", size)]


def test_file_gap_and_missing_blank(tmp_path: Path) -> None:
    files = _store(60).files()
    assert len(files) >= 4
    del files[1024]
    f2 = bytearray(files[2048])
    blank_pos = f2.rfind(struct.pack(">i", MAGIC_BLANK)) - 4
    f2[blank_pos:blank_pos + 8] = bytes(8)
    files[2048] = bytes(f2)
    msgs, findings = _walk(_write(tmp_path, files))
    assert _codes(findings) == [("ROCKETMQ_FILE_GAP", "2048", None),
                                ("ROCKETMQ_BLANK_INVALID", "2048", blank_pos)]
    assert findings[0].offset == 1024


def test_bad_blank_size_and_name(tmp_path: Path) -> None:
    files = _store().files()
    f0 = bytearray(files[0])
    blank_pos = f0.rfind(struct.pack(">i", MAGIC_BLANK)) - 4
    struct.pack_into(">i", f0, blank_pos, 9)
    files[0] = bytes(f0)
    d = _write(tmp_path, files)
    (d / "junk").write_bytes(b"x")
    msgs, findings = _walk(d)
    assert _codes(findings) == [("ROCKETMQ_BLANK_INVALID", "0000", blank_pos)]
    assert len(msgs) == 30
    _, findings = _walk([d / "junk"])
    assert [f.code for f in findings] == ["ROCKETMQ_FILE_NAME_MISMATCH"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 2047), st.integers(1, 255)), min_size=1, max_size=8),
       st.integers(1, 2048))
def test_mutations_only_give_findings(tmp_path: Path, flips: list[tuple[int, int]], cut: int) -> None:
    blob = bytearray(b"".join(_store(20).files().values()))
    for pos, x in flips:
        blob[pos % len(blob)] ^= x
    d = tmp_path / f"m{abs(hash((tuple(flips), cut)))}"
    d.mkdir()
    (d / "00000000000000000000").write_bytes(bytes(blob[:1024]))
    (d / "00000000000000001024").write_bytes(bytes(blob[1024:1024 + cut]))
    out = list(walk_commitlog(d, file_size=1024))
    assert all(isinstance(x, (Message, Finding)) for x in out)
    for pos in range(0, len(blob), 37):
        try:
            read_message(bytes(blob), pos)
        except FormatError:
            pass


# --- real broker files -----------------------------------------------------------------------

def _independent_count(data: bytes) -> list[tuple[int, int]]:
    """(position, queue offset) of V1 records, read with plain struct, stopping at BLANK."""
    out, pos = [], 0
    while pos + 8 <= len(data):
        size, magic = struct.unpack_from(">ii", data, pos)
        if magic != -626843481:
            break
        out.append((pos, struct.unpack_from(">q", data, pos + 20)[0]))
        pos += size
    return out


@pytest.mark.realdata
@pytest.mark.parametrize("path", REAL_COMMITLOGS, ids=["shaoxubao", "apache-pr"])
def test_real_unit_test_commitlog(path: Path) -> None:
    if not path.exists():
        pytest.skip("real data absent")
    data = path.read_bytes()
    expected = _independent_count(data)
    assert len(expected) == 47  # ../shared/realdata/PROVENANCE.md: 47 messages x 172 B + BLANK of 108 B
    out = list(walk_commitlog(path.parent))
    msgs = [x for x in out if isinstance(x, Message)]
    assert [x for x in out if isinstance(x, Finding)] == []
    assert [(m.position, m.queue_offset) for m in msgs] == expected
    assert {m.topic for m in msgs} == {"abc"} and {m.size for m in msgs} == {172}
    assert all(m.crc_valid and m.physical_offset == m.position and m.queue_id == 0 for m in msgs)
    assert msgs[0].body == b"Once, there was a chance for me!"
    assert msgs[0].born_host == "127.0.0.1:0"
    assert struct.unpack_from(">ii", data, 47 * 172) == (108, MAGIC_BLANK)
    for m in msgs:
        assert encode_message(m) == data[m.position:m.position + m.size]
