"""Byte-level mutators: the hostile edits a disk, a bug or an attacker can make.

Each mutator takes the input, a second seed (for splicing) and a seeded
`random.Random`, and returns new bytes. `mutate` stacks one to four of them.
Length-field edits write the values that break naive parsers: 2^31-1, -1,
0x80000000, 0 and 0x7f/0x80/0xff bytes.
"""
from __future__ import annotations

import random
import re
import struct
from collections.abc import Callable

MAX_SIZE = 64 << 10
INTERESTING_8 = (0x00, 0x01, 0x7F, 0x80, 0xFF)
INTERESTING_16 = (0, 1, 0x7FFF, 0x8000, 0xFFFF)
INTERESTING_32 = (0, 1, 13, 14, 60, 61, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x3B9ACA00)
INTERESTING_64 = (0, 1, 0x7FFFFFFFFFFFFFFF, 0x8000000000000000, 0xFFFFFFFFFFFFFFFF, 0x7FFFFFFF)
INTERESTING_TEXT = (b"2147483647", b"-1", b"1000000000", b"9223372036854775808", b"0", b"",
                    b"99999999999999999999999", b"-2147483649", b"../../x", b"\x00", b"\n\n", b" ", b"=",
                    b"{", b"[" * 64, b"\xff\xfe", b"1e308", b"NaN")
_NUMBER = re.compile(rb"-?[0-9]+")

Mutator = Callable[[bytes, bytes, random.Random], bytes]


def _pos(data: bytes, rng: random.Random, width: int = 1) -> int:
    return rng.randrange(0, max(1, len(data) - width + 1))


def bit_flip(data: bytes, other: bytes, rng: random.Random) -> bytes:
    if not data:
        return bytes([rng.randrange(256)])
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(out))
        out[i] ^= 1 << rng.randrange(8)
    return bytes(out)


def set_byte(data: bytes, other: bytes, rng: random.Random) -> bytes:
    if not data:
        return bytes([rng.choice(INTERESTING_8)])
    out = bytearray(data)
    out[_pos(data, rng)] = rng.choice(INTERESTING_8)
    return bytes(out)


def set_int(data: bytes, other: bytes, rng: random.Random) -> bytes:
    """Overwrite a 2-, 4- or 8-byte big-endian integer (a length, count or offset field)."""
    fmt, values = rng.choice(((">H", INTERESTING_16), (">I", INTERESTING_32), (">Q", INTERESTING_64)))
    size = struct.calcsize(fmt)
    if len(data) < size:
        return data + struct.pack(fmt, rng.choice(values))
    i = _pos(data, rng, size)
    return data[:i] + struct.pack(fmt, rng.choice(values)) + data[i + size:]


def set_length_field(data: bytes, other: bytes, rng: random.Random) -> bytes:
    """Kafka's batch length at byte 8 and RocketMQ's total size at byte 0, set to a hostile value."""
    at = rng.choice((0, 8, 57, 4, 12))
    if len(data) < at + 4:
        return set_int(data, other, rng)
    return data[:at] + struct.pack(">I", rng.choice(INTERESTING_32)) + data[at + 4:]


def truncate(data: bytes, other: bytes, rng: random.Random) -> bytes:
    return data[:rng.randrange(0, len(data) + 1)]


def duplicate(data: bytes, other: bytes, rng: random.Random) -> bytes:
    if not data:
        return data
    a = _pos(data, rng)
    b = min(len(data), a + rng.randint(1, 256))
    at = rng.randrange(0, len(data) + 1)
    return data[:at] + data[a:b] + data[at:]


def delete(data: bytes, other: bytes, rng: random.Random) -> bytes:
    if not data:
        return data
    a = _pos(data, rng)
    return data[:a] + data[a + rng.randint(1, 64):]


def splice(data: bytes, other: bytes, rng: random.Random) -> bytes:
    """Head of one seed, tail of another (two files glued at a random point)."""
    return data[:rng.randrange(0, len(data) + 1)] + other[rng.randrange(0, len(other) + 1):]


def insert_random(data: bytes, other: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(0, len(data) + 1)
    return data[:at] + rng.randbytes(rng.randint(1, 16)) + data[at:]


def zero_fill(data: bytes, other: bytes, rng: random.Random) -> bytes:
    """A preallocated or torn region: zeros from a point on (or a slice of it)."""
    a = _pos(data, rng)
    b = len(data) if rng.random() < 0.5 else min(len(data), a + rng.randint(1, 512))
    return data[:a] + bytes(b - a) + data[b:]


def text_number(data: bytes, other: bytes, rng: random.Random) -> bytes:
    """In text formats: a number (a count, an offset, an epoch) replaced by a hostile one."""
    found = list(_NUMBER.finditer(data))
    if not found:
        return insert_text(data, other, rng)
    m = rng.choice(found)
    return data[:m.start()] + rng.choice(INTERESTING_TEXT) + data[m.end():]


def insert_text(data: bytes, other: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(0, len(data) + 1)
    return data[:at] + rng.choice(INTERESTING_TEXT) + data[at:]


MUTATORS: tuple[Mutator, ...] = (bit_flip, set_byte, set_int, set_length_field, truncate, duplicate, delete,
                                 splice, insert_random, zero_fill, text_number, insert_text)


def mutate(data: bytes, other: bytes, rng: random.Random) -> bytes:
    """One to four stacked mutations, capped at `MAX_SIZE` bytes."""
    for _ in range(rng.randint(1, 4)):
        data = rng.choice(MUTATORS)(data, other, rng)[:MAX_SIZE]
    return data
