"""Rendering bytes for machine-readable output: the `--key-decoder`/`--value-decoder` choices.

A decoder that cannot decode some bytes says so: they are rendered as
`{"undecodable": DECODER, "hex": "..."}` (lowercase hex of every byte), never
as lossy text with U+FFFD in place of what could not be read. An investigator
must be able to tell "the producer wrote this text" from "these bytes are not
text", and get the bytes back exactly.
"""
from __future__ import annotations

import base64
import json
from typing import Any

DECODERS = ("utf8", "hex", "base64", "json", "none")
UNDECODABLE_HELP = ('bytes the decoder cannot decode are shown as hex: {"undecodable": DECODER, "hex": "..."} '
                    "in JSON, <hex:...> in text")


def undecodable(decoder: str, data: bytes) -> dict[str, str]:
    """The marker for bytes `decoder` cannot decode: which decoder failed, and the bytes as hex."""
    return {"undecodable": decoder, "hex": data.hex()}


def is_undecodable(value: Any) -> bool:
    return isinstance(value, dict) and value.keys() == {"undecodable", "hex"}


def render_bytes(data: bytes | None, decoder: str) -> Any:
    """`data` as the chosen decoder shows it; None stays None (a null key or value).

    utf8 on bytes that are not UTF-8, or json on bytes that are not one JSON
    document, give the `undecodable` marker, so one odd record never aborts a
    dump and never prints as something it is not.
    """
    if data is None or decoder == "none":
        return None
    if decoder == "hex":
        return data.hex()
    if decoder == "base64":
        return base64.b64encode(data).decode("ascii")
    if decoder not in ("utf8", "json"):
        raise ValueError(f"unknown decoder {decoder!r}; choose one of {', '.join(DECODERS)}")
    try:
        text = data.decode("utf-8")
        return json.loads(text) if decoder == "json" else text
    except ValueError:  # UnicodeDecodeError and JSONDecodeError are both ValueErrors
        return undecodable(decoder, data)
