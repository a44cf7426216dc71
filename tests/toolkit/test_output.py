"""JSON writers: the streamed array is the indented document byte for byte; the cached encoder is `json.dumps`."""
from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.toolkit import output

SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                    max_leaves=20)


def captured(monkeypatch: pytest.MonkeyPatch, write: Any, arg: Any) -> str:
    buf = io.StringIO()
    with monkeypatch.context() as m:
        m.setattr("sys.stdout", buf)
        write(arg)
    return buf.getvalue()


@given(st.lists(JSON, max_size=6))
def test_streamed_array_is_the_indented_document(items: list[Any]) -> None:
    with pytest.MonkeyPatch.context() as mp:
        streamed = captured(mp, output.write_json_array, iter(items))
        whole = captured(mp, output.write_json, items)
    assert streamed == whole
    assert json.loads(streamed) == items


@given(JSON)
def test_dumps_is_json_dumps(value: Any) -> None:
    assert output.dumps(value) == json.dumps(value, ensure_ascii=False)
    assert output.dumps(value, indent=2) == json.dumps(value, indent=2, ensure_ascii=False)
    assert output.dumps(value, indent=4) == json.dumps(value, indent=4, ensure_ascii=False)
    assert output.dumps({"b": b"\x01", "v": value}) == json.dumps({"b": "01", "v": value}, ensure_ascii=False)
