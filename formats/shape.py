"""`Shape`: a result's JSON form declared as a list of named fields, beside the result.

Commands print results as JSON and fleet jobs write them, so the JSON shape of
a result belongs to the result, not to a command. A shape names the members in
the order the contract shows them and says where each value comes from; it is
data, so it can be listed (`names`) and checked: the table columns a person
sees are tested against the shape that declares the fields they show.

Plain Python, no rendering: it sits at the bottom of `formats` so that every
layer can describe its results with it (`formats` never prints, `recovery`
never prints, only `toolkit` turns shapes into tables).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Getter = str | Callable[[Any], Any]


@dataclass(frozen=True)
class Field:
    """One member of a JSON object.

    `get` is a dotted attribute path from the result (default: the member's
    own name; a None met on the way gives None, as an absent part has no
    value) or a function of the result. `shape` describes a nested result, or
    each item of a list of them. `omit_empty` leaves the member out when its
    value is empty (a finding's `details`).
    """

    name: str
    get: Getter | None = None
    shape: Shape | None = None
    omit_empty: bool = False

    def value(self, obj: Any) -> Any:
        get = self.name if self.get is None else self.get
        value = _follow(obj, get) if isinstance(get, str) else get(obj)
        return value if self.shape is None else self.shape.dump_each(value)


def _follow(obj: Any, path: str) -> Any:
    for attr in path.split("."):
        if obj is None:
            return None
        obj = getattr(obj, attr)
    return obj


class Shape:
    """The ordered members of one kind of result's JSON object."""

    def __init__(self, *fields: Field | str) -> None:
        self.fields: tuple[Field, ...] = tuple(Field(f) if isinstance(f, str) else f for f in fields)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def dump(self, obj: Any) -> dict[str, Any]:
        """The JSON-ready dict of `obj`: one member per field, in order."""
        out: dict[str, Any] = {}
        for f in self.fields:
            value = f.value(obj)
            if not (f.omit_empty and not value):
                out[f.name] = value
        return out

    def dump_each(self, value: Any) -> Any:
        """A nested value: None stays None, a list is dumped item by item, anything else as one result."""
        if value is None:
            return None
        if isinstance(value, (list, tuple)):
            return [self.dump(v) for v in value]
        return self.dump(value)

    def without(self, *names: str) -> Shape:
        """The same shape less some members (a finding listed without its details)."""
        return Shape(*(f for f in self.fields if f.name not in names))
