"""Timer files (timerwheel, timerlog, timercheck, timermetrics) against bytes packed by hand here, with the field
order of the broker's writers (`TimerWheel#putSlot`, `TimerMessageStore#doEnqueue`, `TimerLog#append`,
`TimerCheckpoint#flush`, tag rocketmq-all-5.3.3), not with the layouts under test."""
from __future__ import annotations

import struct
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from replog.formats.findings import Finding
from replog.formats.rocketmq.timer_check import (
    FILE_SIZE,
    TimerCheckpoint,
    TimerMetrics,
    build_timer_checkpoint,
    build_timer_metrics,
    check_timer_checkpoint,
    parse_timer_checkpoint,
    parse_timer_metrics,
)
from replog.formats.rocketmq.timer_log import (
    BLANK_MAGIC,
    UNIT_SIZE,
    TimerUnit,
    build_files,
    build_unit,
    units_of,
    walk_timerlog,
)
from replog.formats.rocketmq.timer_wheel import SLOT_SIZE, WHEEL_SIZE, all_num, build_wheel, written_slots

I64 = st.integers(-(2**63), 2**63 - 1)
I32 = st.integers(-(2**31), 2**31 - 1)


def java_blank_magic() -> int:
    """`0xBBCCDDEE ^ 1880681586 + 8` with Java's precedence (+ first) and int overflow."""
    v = (0xBBCCDDEE ^ (1880681586 + 8)) & 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def hand_slot(time_slot: int, first: int, last: int, num: int, magic: int) -> bytes:
    return struct.pack(">q", time_slot) + struct.pack(">q", first) + struct.pack(">q", last) + \
        struct.pack(">i", num) + struct.pack(">i", magic)


def hand_unit(prev: int, magic: int, write: int, delay: int, off: int, size: int, topic_hash: int) -> bytes:
    """doEnqueue's putInt/putLong sequence."""
    return (struct.pack(">i", 52) + struct.pack(">q", prev) + struct.pack(">i", magic) + struct.pack(">q", write)
            + struct.pack(">i", delay) + struct.pack(">q", off) + struct.pack(">i", size)
            + struct.pack(">i", topic_hash) + struct.pack(">q", 0))


def brute_all_num(wheel: bytes, start_ms: int, precision: int) -> int:
    """`TimerWheel#getAllNum` as written: walk every slot from the start's index, compare the stored time."""
    n = len(wheel) // 32
    total = 0
    first = start_ms // precision % n
    for i in range(n):
        idx = (first + i) % n
        stored, _, _, num, _ = struct.unpack_from(">qqqii", wheel, idx * 32)
        if (start_ms + i * precision) // precision == stored:
            total += num
    return total


def test_sizes_and_blank_magic() -> None:
    assert (SLOT_SIZE, UNIT_SIZE, WHEEL_SIZE) == (32, 52, 7 * 86400 * 2 * 32), "Slot.SIZE / UNIT_SIZE / wheel length"
    assert BLANK_MAGIC == java_blank_magic(), "TimerLog.BLANK_MAGIC_CODE"


def test_wheel_slot_read_from_hand_bytes() -> None:
    n = 64
    wheel = bytearray(n * 32)
    t = 1_795_828_595           # seconds: precision 1000
    wheel[(t % n) * 32:(t % n) * 32 + 32] = hand_slot(t, 104, 520, 3, 0)
    slots = list(written_slots(bytes(wheel)))
    assert len(slots) == 1, f"one written slot expected, got {slots}"
    s = slots[0]
    assert (s.index, s.time_slot, s.first_pos, s.last_pos, s.num) == (t % n, t, 104, 520, 3), f"slot {s}"
    assert s.time_ms(1000) == t * 1000, "getRawSlot multiplies by the precision"


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.integers(0, 400), st.tuples(st.integers(0, 10**6), st.integers(0, 10**6),
                                                     st.integers(-5, 50)), max_size=30),
       st.integers(0, 400), st.sampled_from([100, 200, 500, 1000]))
def test_all_num_is_get_all_num(slots: dict[int, tuple[int, int, int]], start: int, precision: int) -> None:
    """The vectorised count equals the broker's loop, for wheels built by the writer (build_wheel, putSlot)."""
    base = 1_795_828_000_000
    wheel = build_wheel({base + k * precision: (f, last, num, 0) for k, (f, last, num) in slots.items()},
                        precision_ms=precision, slots_total=64)
    start_ms = base + start * precision
    assert all_num(wheel, start_ms, precision) == brute_all_num(wheel, start_ms, precision), "getAllNum differs"
    back = {s.time_slot * precision: (s.first_pos, s.last_pos, s.num, s.magic) for s in written_slots(wheel)}
    latest = {}
    for k, (f, last, num) in slots.items():   # later keys overwrite a slot sharing the place, as putSlot does
        latest[(base + k * precision) // precision % 128] = (base + k * precision, (f, last, num, 0))
    assert back == dict(latest.values()), "written slots read back"


def write_log(tmp: Path, files: dict[int, bytes]) -> list[tuple[int, Path]]:
    d = tmp / "timerlog"
    d.mkdir(exist_ok=True)
    out = []
    for start, data in files.items():
        p = d / f"{start:020d}"
        p.write_bytes(data)
        out.append((start, p))
    return out


def test_timer_log_units_blank_and_end(tmp_path: Path) -> None:
    file_size = 52 * 3 + 20          # room for 3 units; the 3rd leaves 20 bytes: next unit needs 52 + 16
    u = [hand_unit(-1 if i == 0 else 0, 1, 1000 + i, 5000, 4096 * i, 300 + i, 77) for i in range(4)]
    f0 = u[0] + u[1] + u[2]
    f0 += struct.pack(">iqi", file_size - len(f0), 0, java_blank_magic())
    files = write_log(tmp_path, {0: f0.ljust(file_size, b"\0"), file_size: u[3].ljust(file_size, b"\0")})
    walk = walk_timerlog(files)
    items = []
    while True:
        try:
            items.append(next(walk))
        except StopIteration as stop:
            end = stop.value
            break
    units = [i for i in items if isinstance(i, TimerUnit)]
    assert [x.pos for x in units] == [0, 52, 104, file_size], f"positions {[x.pos for x in units]}"
    assert [x.offset_py for x in units] == [0, 4096, 8192, 12288], "offsetPy"
    assert units[1].delivery_ms == 1001 + 5000, "currWriteTime + delayedTime"
    assert end == file_size + 52, f"the log ends after the last unit, got {end}"
    assert not [i for i in items if isinstance(i, Finding)], f"no findings expected: {items}"


def test_timer_log_bad_unit_ends_the_log(tmp_path: Path) -> None:
    bad = bytearray(hand_unit(0, 1, 1, 1, 1, 1, 1))
    bad[12:16] = struct.pack(">i", 0x10)    # a magic bit above 0xF: isMagicOK fails
    data = (hand_unit(-1, 1, 1, 1, 0, 9, 1) + bytes(bad) + hand_unit(0, 1, 1, 1, 9, 9, 1)).ljust(1024, b"\0")
    files = write_log(tmp_path, {0: data})
    items = list(walk_timerlog(files))
    found = [i for i in items if isinstance(i, Finding)]
    assert [(f.code, f.position) for f in found] == [("ROCKETMQ_TIMER_LOG_INVALID", 52)], f"findings {found}"
    assert len([i for i in items if isinstance(i, TimerUnit)]) == 1, "units after the bad one are not read"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(I64, st.integers(0, 15), I64, I32, I64, I32, I32), max_size=40),
       st.integers(0, 5))
def test_timer_log_writer_and_walker_agree(tmp_path_factory, units, extra: int) -> None:  # noqa: ANN001
    """build_files (TimerLog#append's blank rule) read back by walk_timerlog: the same units in order."""
    tmp = tmp_path_factory.mktemp("tl")
    raw = [build_unit(prev_pos=p, magic=m or 1, curr_write_time=w, delayed_time=d, offset_py=o, size_py=s,
                      topic_hash=h) for p, m, w, d, o, s, h in units]
    file_size = 52 * 3 + 16 + extra * 13
    files = write_log(tmp, build_files(raw, file_size=file_size))
    back = list(units_of(files))
    assert [(b.prev_pos, b.magic, b.curr_write_time, b.delayed_time, b.offset_py, b.size_py, b.topic_hash)
            for b in back] == [(p, m or 1, w, d, o, s, h) for p, m, w, d, o, s, h in units], "units differ"
    assert all(b.pos % file_size + 52 + 16 <= file_size for b in back), "a unit left less than 16 bytes"


def test_timer_checkpoint_from_hand_bytes() -> None:
    data = struct.pack(">qqqqqqq", 1795828624000, 2600, 50, 50, 0, 1795828624563, 37).ljust(4096, b"\0")
    cp = parse_timer_checkpoint(data)
    assert cp == TimerCheckpoint(1795828624000, 2600, 50, 50, 0, 1795828624563, 37), f"parsed {cp}"
    assert list(check_timer_checkpoint(data, "timercheck")) == [], "a sound checkpoint has no finding"
    short = struct.pack(">qqqq", 1, 2, 3, 4)
    assert parse_timer_checkpoint(short).last_timer_queue_offset == 3, "the four offsets alone (no dataVersion)"
    negative = struct.pack(">qqqq", 1, -2, 3, 4).ljust(4096, b"\0")
    assert [f.position for f in check_timer_checkpoint(negative, "x")] == [8], "negative flush pos located"


@given(st.tuples(I64, I64, I64, I64, I64, I64, I64))
def test_timer_checkpoint_round_trip(fields: tuple[int, ...]) -> None:
    cp = TimerCheckpoint(*fields)
    data = build_timer_checkpoint(cp)
    assert len(data) == FILE_SIZE, "the mapped page"
    assert data[:56] == struct.pack(">7q", *fields), "flush's putLong order"
    assert parse_timer_checkpoint(data) == cp, "round trip"


def test_timer_metrics_as_the_broker_writes_them() -> None:
    text = (b'{"dataVersion":{"counter":70,"stateVersion":0,"timestamp":1795828595134},'
            b'"timingCount":{"TimerTopic":{"count":30,"timeStamp":1795828595134}}}')
    m = parse_timer_metrics(text)
    assert m.timing_count == {"TimerTopic": (30, 1795828595134)}, f"timingCount {m.timing_count}"
    assert m.pending == 30, "pending total"


@given(st.dictionaries(st.text(st.characters(min_codepoint=33, max_codepoint=126, exclude_characters='"\\'),
                               min_size=1, max_size=20), st.tuples(st.integers(-10, 10**6), st.integers(0, 2**62)),
                       max_size=5))
def test_timer_metrics_round_trip(table: dict[str, tuple[int, int]]) -> None:
    m = TimerMetrics(table, {"counter": 1, "stateVersion": 0, "timestamp": 5})
    assert parse_timer_metrics(build_timer_metrics(m)) == m, "round trip"
