"""Broker metadata `config/*.json` as fastjson 1.x writes it.

fastjson writes `Map<Integer, ...>` keys without quotes (`{0:250,1:250}`), which
Python's `json` rejects (docs/reference/rocketmq.md §6.2). `loads` is a small JSON parser that
also accepts bare keys: integer keys become `int`, bare identifiers `str`.
`dumps` writes the same dialect (pretty, tab-indented, int keys bare), so
`loads(dumps(x)) == x`. Loading falls back to `<name>.bak` like `ConfigManager`.
"""
from __future__ import annotations

import json
import math
import os
import re
from json.decoder import scanstring  # type: ignore[attr-defined]  # in the module, not in its stubs
from pathlib import Path
from typing import Any

from replog.formats.errors import FormatError
from replog.formats.fileio import atomic_write, read_with_backup

_CODE = "ROCKETMQ_CONFIG_INVALID"
_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_BARE_KEY = re.compile(r"-?[0-9]+|[A-Za-z_$][A-Za-z0-9_$]*")
_INT_KEY = re.compile(r"^-?[0-9]+$")
_LITERALS = {"true": True, "false": False, "null": None}
MAX_DEPTH = 256


class _Parser:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0

    def fail(self, what: str) -> FormatError:
        line = self.s.count("\n", 0, self.i) + 1
        return FormatError(_CODE, f"{what} at line {line} (character {self.i})", position=self.i)

    def ws(self) -> None:
        self.i = _WS.match(self.s, self.i).end()  # type: ignore[union-attr]

    def value(self, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise self.fail("nesting too deep")
        self.ws()
        c = self.s[self.i:self.i + 1]
        if c == "{":
            return self.obj(depth)
        if c == "[":
            return self.arr(depth)
        if c == '"':
            return self.string()
        m = _NUMBER.match(self.s, self.i)
        if m:
            self.i = m.end()
            t = m.group()
            return int(t) if t.lstrip("-").isdigit() else float(t)
        for word, val in _LITERALS.items():
            if self.s.startswith(word, self.i):
                self.i += len(word)
                return val
        raise self.fail("expected a value")

    def string(self) -> str:
        try:
            text, self.i = scanstring(self.s, self.i + 1, True)
        except json.JSONDecodeError as e:
            raise self.fail(f"bad string ({e.msg})") from None
        return text

    def key(self) -> str | int:
        if self.s.startswith('"', self.i):
            return self.string()
        m = _BARE_KEY.match(self.s, self.i)
        if not m:
            raise self.fail("expected a key")
        self.i = m.end()
        return int(m.group()) if _INT_KEY.match(m.group()) else m.group()

    def obj(self, depth: int) -> dict[Any, Any]:
        self.i += 1
        out: dict[Any, Any] = {}
        self.ws()
        if self.s.startswith("}", self.i):
            self.i += 1
            return out
        while True:
            self.ws()
            k = self.key()
            self.ws()
            if not self.s.startswith(":", self.i):
                raise self.fail("expected ':'")
            self.i += 1
            out[k] = self.value(depth + 1)
            if self.closed("}"):
                return out

    def arr(self, depth: int) -> list[Any]:
        self.i += 1
        out: list[Any] = []
        self.ws()
        if self.s.startswith("]", self.i):
            self.i += 1
            return out
        while True:
            out.append(self.value(depth + 1))
            if self.closed("]"):
                return out

    def closed(self, close: str) -> bool:
        """After a member or element: True at `close` (consumed), False at ',' (consumed), else an error."""
        self.ws()
        c = self.s[self.i:self.i + 1]
        self.i += 1
        if c == close:
            return True
        if c != ",":
            raise self.fail(f"expected ',' or '{close}'")
        return False


def loads(text: str | bytes) -> Any:
    """Parse fastjson text (bare integer keys allowed); `FormatError` when malformed."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    p = _Parser(text.lstrip("\ufeff"))
    v = p.value(0)
    p.ws()
    if p.i != len(p.s):
        raise p.fail("trailing characters")
    return v


def _dump(v: Any, indent: int, out: list[str]) -> None:
    if isinstance(v, dict):
        if not v:
            out.append("{}")
            return
        pad = "\t" * (indent + 1)
        items = []
        for k, val in v.items():
            part: list[str] = []
            _dump(val, indent + 1, part)
            key = str(k) if isinstance(k, int) and not isinstance(k, bool) else json.dumps(str(k), ensure_ascii=False)
            items.append(f"{pad}{key}:{''.join(part)}")
        out.append("{\n" + ",\n".join(items) + "\n" + "\t" * indent + "}")
    elif isinstance(v, (list, tuple)):
        parts = []
        for item in v:
            part = []
            _dump(item, indent + 1, part)
            parts.append("".join(part))
        out.append("[" + ",".join(parts) + "]")
    elif isinstance(v, float) and not math.isfinite(v):
        raise ValueError("fastjson JSON has no NaN/Infinity")
    else:
        out.append(json.dumps(v, ensure_ascii=False))


def dumps(value: Any) -> str:
    """fastjson-style pretty text: tab indents, `"key":value`, int keys bare."""
    out: list[str] = []
    _dump(value, 0, out)
    return "".join(out)


def load_config(path: str | os.PathLike[str]) -> tuple[Any, Path]:
    """Parse a config file, falling back to `<path>.bak` when it is missing, empty or bad."""
    return read_with_backup(path, lambda data: loads(data) if data.strip() else None)


def write_config(path: str | os.PathLike[str], value: Any) -> None:
    atomic_write(path, dumps(value).encode("utf-8"))
