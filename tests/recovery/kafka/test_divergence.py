"""The fingerprint's bucket sums: the compiled kernel and the plain function agree with splitmix64 in Python ints."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.formats.jit import kernel
from replog.recovery.kafka.divergence import BUCKET_BITS, bucket_sums

MASK = (1 << 64) - 1


def splitmix(base: int, last: int, crc: int) -> int:
    """The batch hash written out with Python ints (the definition, independent of numpy)."""
    x = ((base & MASK) * 0x9E3779B97F4A7C15) & MASK
    x ^= ((last & MASK) + (crc << 32)) & MASK
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & MASK
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def expected(rows: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    out: list[list[int]] = []
    for base, last, crc in rows:
        bucket = base >> BUCKET_BITS
        if out and out[-1][0] == bucket:
            out[-1][1] = (out[-1][1] + splitmix(base, last, crc)) & MASK
            out[-1][2] += 1
        else:
            out.append([bucket, splitmix(base, last, crc), 1])
    return [tuple(r) for r in out]  # type: ignore[misc]


def run(fn, rows: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:  # type: ignore[no-untyped-def]
    base, last, crc = (np.array(c, dtype=np.int64) for c in zip(*rows, strict=True))
    n = len(rows)
    ids, counts, sums = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.uint64)
    with np.errstate(over="ignore"):
        k = fn(base, base.view(np.uint64), last.view(np.uint64), crc.view(np.uint64), ids, sums, counts)
    return [(int(i), int(s), int(c)) for i, s, c in zip(ids[:k], sums[:k], counts[:k], strict=True)]


offsets = st.integers(-2**63, 2**63 - 1)
rows = st.lists(st.tuples(offsets, offsets, st.integers(0, 2**32 - 1)), min_size=1, max_size=40)
near = st.lists(st.tuples(st.integers(0, 5 << BUCKET_BITS), st.integers(0, 2**40), st.integers(0, 2**32 - 1)),
                min_size=1, max_size=40).map(sorted)


@settings(max_examples=150, deadline=None)
@given(st.one_of(rows, near))
def test_bucket_sums_compiled_and_plain_match_the_definition(batch_rows: list[tuple[int, int, int]]) -> None:
    want = expected(batch_rows)
    assert run(kernel(bucket_sums, compiled=False), batch_rows) == want
    assert run(kernel(bucket_sums, compiled=True), batch_rows) == want
