"""Fast forms derived from the construct layouts, so each binary structure is declared once.

A fixed-size layout (big-endian integers and fixed byte strings) is the one source of truth; the
`struct.Struct` the hot paths unpack with, the numpy dtype the column readers view a file through and
each field's byte position all come from it here, so they cannot drift apart from the layout the
parsers, writers and property tests use.
"""
from __future__ import annotations

import dataclasses
import os
import struct
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Generic, TypeVar

import construct as cs

from replog.formats.errors import FormatError
from replog.formats.fileio import read_small
from replog.formats.findings import Finding, Severity, finding

if TYPE_CHECKING:
    import numpy as np
    from _typeshed import DataclassInstance

P = TypeVar("P", bound="DataclassInstance")   # a page's fields as a dataclass, in layout order


def _codes(layout: cs.Struct) -> list[tuple[str, str]]:
    """(name, struct code with its byte order) of each field of a fixed-size layout."""
    out = []
    for sub in layout.subcons:
        field = sub.subcon if isinstance(sub, cs.Renamed) else sub
        if isinstance(field, cs.FormatField):
            out.append((sub.name, field.fmtstr))
        elif isinstance(field, cs.Bytes) and isinstance(field.length, int):
            out.append((sub.name, f">{field.length}s"))
        else:
            raise TypeError(f"{sub.name}: not a fixed-size field ({type(field).__name__})")
    return out


def struct_of(layout: cs.Struct) -> struct.Struct:
    """The `struct.Struct` reading a fixed-size big-endian layout's fields in order."""
    codes = _codes(layout)
    if any(code[0] != ">" for _, code in codes):
        raise TypeError("only big-endian layouts have one struct format")
    return struct.Struct(">" + "".join(code[1:] for _, code in codes))


def dtype_of(layout: cs.Struct) -> np.dtype:
    """The numpy structured dtype of a fixed-size layout (one record per entry, byte order as on disk).
    By size, not by struct code: numpy reads "l" as a C long (8 bytes) where struct's ">l" is 4.
    numpy is imported here, not with the module: a layout's struct form must not cost a command numpy's import."""
    import numpy as np
    return np.dtype([(name, _numpy_code(code)) for name, code in _codes(layout)])


def _numpy_code(code: str) -> str:
    if code.endswith("s"):
        return f"S{code[1:-1]}"
    return f"{code[0]}{'u' if code[1].isupper() else 'i'}{struct.calcsize(code)}"


def field_positions(layout: cs.Struct) -> dict[str, int]:
    """Byte position of each field of a fixed-size construct layout, from the layout itself."""
    positions, at = {}, 0
    for sub in layout.subcons:
        positions[sub.name] = at
        at += sub.sizeof()
    return positions


class FixedPage(Generic[P]):
    """A file that is one mapped page: a fixed-size big-endian `layout` at its start, zeros up to `size`, read as
    a `record` (the dataclass of the layout's fields, in its order).

    RocketMQ's store checkpoints (`StoreCheckpoint`, `TimerCheckpoint`) map an OS page and write their fields at its
    start; fields a later release added sit past an older file's, so a file of at least `min_size` bytes reads with
    the fields past its end as 0. `code` and `what` name the file in errors and findings."""

    def __init__(self, layout: cs.Struct, record: Callable[..., P], size: int, min_size: int, code: str,
                 what: str) -> None:
        self.fields = struct_of(layout)
        self.record = record
        self.size, self.min_size, self.code, self.what = size, min_size, code, what

    def parse(self, data: bytes | memoryview) -> P:
        """The page's `record`; FormatError for a file shorter than `min_size`."""
        return self.record(*self.unpack(data))

    def build(self, value: P) -> bytes:
        """The page the broker writes for `value`."""
        return self.pack(dataclasses.astuple(value))

    def read(self, path: str | os.PathLike[str]) -> P:
        """`parse` of the file at `path` (a page: anything past 1 MiB is not one)."""
        return self.parse(read_small(path, limit=1 << 20))

    def unpack(self, data: bytes | memoryview) -> tuple[int, ...]:
        """The field values; FormatError for a file shorter than `min_size`."""
        if len(data) < self.min_size:
            raise FormatError(self.code, f"{self.what} of {len(data)} bytes is shorter than {self.min_size}",
                              position=0)
        return self.fields.unpack(bytes(data[:self.fields.size]).ljust(self.fields.size, b"\0"))

    def pack(self, values: tuple[int, ...]) -> bytes:
        """The whole page the broker leaves."""
        return self.fields.pack(*values).ljust(self.size, b"\0")

    def check(self, data: bytes | memoryview, path: str, names: tuple[str, ...]) -> Iterator[Finding]:
        """A size other than the page (an error below `min_size`, else a warning) and a negative value among the
        first `len(names)` fields (named so)."""
        if len(data) != self.size:
            yield finding(self.code, path, message=f"{self.what} is {len(data)} bytes, the broker maps {self.size}",
                          severity=None if len(data) < self.min_size else Severity.WARNING)
        if len(data) < self.min_size:
            return
        for i, (name, value) in enumerate(zip(names, self.unpack(data), strict=False)):
            if value < 0:
                yield finding(self.code, path, position=8 * i, message=f"{name} is negative ({value})")
