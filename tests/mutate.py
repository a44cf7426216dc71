"""Damage for property tests: a drawn truncation and a few drawn byte overwrites, in place."""
from __future__ import annotations

from hypothesis import strategies as st


def damage(buf: bytearray, data: st.DataObject) -> bytearray:
    """Maybe cut `buf` short, then overwrite up to four of its bytes; returns `buf`."""
    if data.draw(st.booleans()):
        del buf[data.draw(st.integers(0, len(buf))):]
    for _ in range(data.draw(st.integers(0, 4))):
        if buf:
            buf[data.draw(st.integers(0, len(buf) - 1))] = data.draw(st.integers(0, 255))
    return buf


def rejected_mutations(parse, good: bytes, *, seed: int, rounds: int, flips: int = 4,  # noqa: ANN001
                       alphabet: bytes | None = None) -> int:
    """Parse `rounds` random mutations of `good` (byte overwrites, then a random cut); returns how many
    were rejected with a `FormatError`. Any other exception escapes and fails the calling test."""
    import random

    from replog.formats.errors import FormatError
    rng, rejected = random.Random(seed), 0
    for _ in range(rounds):
        data = bytearray(good)
        for _ in range(rng.randint(1, flips)):
            data[rng.randrange(len(data))] = rng.choice(alphabet) if alphabet else rng.randrange(256)
        try:
            parse(bytes(data[: rng.randint(0, len(data))]))
        except FormatError:
            rejected += 1
    return rejected
