"""Rendering bytes for machine-readable output: the `--key-decoder`/`--value-decoder` choices."""
from __future__ import annotations

import base64
import json
from typing import Any

DECODERS = ("utf8", "hex", "base64", "json", "none")


def render_bytes(data: bytes | None, decoder: str) -> Any:
    """`data` as the chosen decoder shows it; None stays None (a null key or value).

    `json` falls back to the UTF-8 text when the bytes are not a JSON document,
    so one odd record never aborts a dump.
    """
    if data is None or decoder == "none":
        return None
    if decoder == "hex":
        return data.hex()
    if decoder == "base64":
        return base64.b64encode(data).decode("ascii")
    text = data.decode("utf-8", "replace")
    if decoder == "json":
        try:
            return json.loads(text)
        except ValueError:
            return text
    if decoder == "utf8":
        return text
    raise ValueError(f"unknown decoder {decoder!r}; choose one of {', '.join(DECODERS)}")
