"""The timer wheel file `timerwheel` (RocketMQ 5.x timer messages, `timerWheelEnable`).

`SLOT` (construct) is the source of truth for the 32-byte slot (`store/timer/Slot.java`, tag
rocketmq-all-5.3.3; docs/reference/rocketmq.md §16.1); the struct and the numpy dtype the wheel is viewed through
derive from it (`formats/layout.py`). `TimerWheel` maps `slotsTotal * 2 * Slot.SIZE` bytes, `slotsTotal = 7 days
of seconds` (`TimerMessageStore.TIMER_WHEEL_TTL_DAY * DAY_SECS`), and refuses to start on a file of any other
non-zero length. A slot stores `timeMs / precisionMs` (not the time: `TimerWheel#putSlot`), the timer-log
positions of the first and last unit of its chain, the count of pending messages and an unused magic; it sits at
index `timeMs / precisionMs % (slotsTotal * 2)` (`getSlotIndex`). A never-written slot is all zeros.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import construct as cs

from replog.formats.layout import dtype_of, struct_of

if TYPE_CHECKING:
    import numpy as np

SLOT = cs.Struct(
    "time_slot" / cs.Int64sb,     # timeMs / precisionMs
    "first_pos" / cs.Int64sb,     # timer-log position of the chain's first unit
    "last_pos" / cs.Int64sb,      # ... and of its last (the chain is walked back through prevPos)
    "num" / cs.Int32sb,           # pending messages (+1 per unit, -1 per delete unit)
    "magic" / cs.Int32sb,         # "no use now, just keep it"
)
SLOT_STRUCT = struct_of(SLOT)
SLOT_SIZE = SLOT_STRUCT.size       # 32 (Slot.SIZE)
SLOTS_TOTAL = 7 * 24 * 3600        # TIMER_WHEEL_TTL_DAY * DAY_SECS
WHEEL_SIZE = SLOTS_TOTAL * 2 * SLOT_SIZE
PRECISIONS_MS = (100, 200, 500, 1000)   # MessageStoreConfig#setTimerPrecisionMs rounds to one of these
DEFAULT_PRECISION_MS = 1000
FILE_NAME = "timerwheel"


@dataclass(frozen=True, slots=True)
class Slot:
    """One written slot; `index` is its place in the file (byte position `index * 32`)."""

    index: int
    time_slot: int
    first_pos: int
    last_pos: int
    num: int
    magic: int

    @property
    def position(self) -> int:
        return self.index * SLOT_SIZE

    def time_ms(self, precision_ms: int) -> int:
        """`getRawSlot`: the stored value times the precision."""
        return self.time_slot * precision_ms


def slot_count(size: int) -> int:
    return size // SLOT_SIZE


def slot_index(time_ms: int, precision_ms: int, slots: int = SLOTS_TOTAL * 2) -> int:
    """`TimerWheel#getSlotIndex`."""
    return time_ms // precision_ms % slots


def view(buf: bytes | memoryview) -> np.ndarray:
    """The whole wheel as one numpy record per slot (no copy)."""
    import numpy as np
    whole = len(buf) - len(buf) % SLOT_SIZE
    return np.frombuffer(buf, dtype=dtype_of(SLOT), count=whole // SLOT_SIZE)


def written_slots(buf: bytes | memoryview) -> Iterator[Slot]:
    """Every slot with a non-zero time (the rest were never written), in file order."""
    import numpy as np
    table = view(buf)
    for i in np.flatnonzero(table["time_slot"] != 0):
        r = table[i]
        yield Slot(int(i), int(r["time_slot"]), int(r["first_pos"]), int(r["last_pos"]), int(r["num"]),
                   int(r["magic"]))


def all_num(buf: bytes | memoryview, start_time_ms: int, precision_ms: int) -> int:
    """`TimerWheel#getAllNum(timeStartMs)`: the `num` of every slot whose stored time is the one its place
    holds in the round starting at `start_time_ms` (what the broker reports as `timerCongestNum`)."""
    import numpy as np
    table = view(buf)
    n = len(table)
    if not n:
        return 0
    start = start_time_ms // precision_ms
    expected = start + (np.arange(n, dtype=np.int64) - start % n) % n
    return int(table["num"][table["time_slot"] == expected].sum())


def build_slot(time_slot: int, first_pos: int, last_pos: int, num: int = 0, magic: int = 0) -> bytes:
    return SLOT_STRUCT.pack(time_slot, first_pos, last_pos, num, magic)


def build_wheel(slots: dict[int, tuple[int, int, int, int]], *, precision_ms: int = DEFAULT_PRECISION_MS,
                slots_total: int = SLOTS_TOTAL) -> bytes:
    """A wheel file with `{delivery time ms: (first_pos, last_pos, num, magic)}` put as `putSlot` puts them."""
    out = bytearray(slots_total * 2 * SLOT_SIZE)
    for time_ms, (first, last, num, magic) in slots.items():
        pos = slot_index(time_ms, precision_ms, slots_total * 2) * SLOT_SIZE
        out[pos:pos + SLOT_SIZE] = build_slot(time_ms // precision_ms, first, last, num, magic)
    return bytes(out)
