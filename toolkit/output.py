"""Output plumbing shared by commands: format choice, JSON streams, exit codes, errors."""
from __future__ import annotations

import functools
import json
import os
import re
import sys
from collections.abc import Callable, Iterable
from enum import Enum, StrEnum
from typing import Any, Protocol, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from replog.formats.errors import ReplogError, UnreadableInput, UnsafeOutput
from replog.formats.fileio import SYSTEM_ERRNOS

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2



def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


# On a terminal, messages wrap at its width; in a pipe or a log file (no width to honour) a message
# stays one line, so `grep` and log collectors see it whole.
stderr = Console(stderr=True, highlight=False, soft_wrap=not _is_terminal(sys.stderr))


class Format(StrEnum):
    table = "table"
    json = "json"
    jsonl = "jsonl"


def resolve(fmt: Format | None) -> Format:
    """Tables for a person at a terminal, JSON lines for a pipe."""
    if fmt is not None:
        return fmt
    return Format.table if sys.stdout.isatty() else Format.jsonl


def _default(o: Any) -> Any:
    if isinstance(o, (bytes, bytearray, memoryview)):
        return bytes(o).hex()
    if isinstance(o, Enum):
        return o.value
    if hasattr(o, "to_dict"):
        return o.to_dict()
    if isinstance(o, os.PathLike):
        return os.fspath(o)
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    raise TypeError(f"cannot encode {type(o).__name__}")


# what `json.dumps` builds on every call, built once: a dump encodes millions of entries
_ENCODERS = {indent: json.JSONEncoder(default=_default, indent=indent, ensure_ascii=False) for indent in (None, 2)}


# a lone surrogate: how Python's surrogateescape holds a byte of a file name that is not UTF-8
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_surrogate(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"


def dumps(obj: Any, indent: int | None = None) -> str:
    """JSON text of `obj`; the one home of replog's JSON rule: valid UTF-8 whatever the input.

    Text stays unescaped (`ensure_ascii=False`: readable names and values) except lone
    surrogates, which no UTF-8 can hold: each is written as its JSON escape `\\udcXX`.
    A surrogate can only sit inside a JSON string, where that escape means the same
    character, so `json.loads` gives back the same str and `os.fsencode` of it the
    file name's original bytes.
    """
    encoder = _ENCODERS.get(indent)
    text = (json.dumps(obj, default=_default, indent=indent, ensure_ascii=False) if encoder is None
            else encoder.encode(obj))
    return text if text.isascii() else _LONE_SURROGATE.sub(_escape_surrogate, text)


def write_jsonl(entries: Iterable[Any]) -> None:
    out = sys.stdout
    for e in entries:
        out.write(dumps(e))
        out.write("\n")
    out.flush()


def write_json_array(entries: Iterable[Any]) -> None:
    """`write_json(list(entries))`, byte for byte, written as the entries come: none is held.

    An item of an indented array is the item indented on its own, one level
    deeper; JSON text has no raw newline inside a string, so every newline of
    it starts a line to indent.
    """
    out = sys.stdout
    sep = "[\n  "
    for e in entries:
        out.write(sep)
        out.write(dumps(e, indent=2).replace("\n", "\n  "))
        sep = ",\n  "
    out.write("[]\n" if sep == "[\n  " else "\n]\n")
    out.flush()


def write_json(obj: Any) -> None:
    sys.stdout.write(dumps(obj, indent=2))
    sys.stdout.write("\n")
    sys.stdout.flush()


F = TypeVar("F", bound=Callable[..., Any])
# usage errors raised by a command itself: typer reports them as usage errors (exit 2)
_USAGE_ERRORS = tuple(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
_PASS_THROUGH: tuple[type[Exception], ...] = (typer.Exit, *_USAGE_ERRORS)


def guarded(fn: F) -> F:
    """Turn replog's errors into one clear line and exit 2; never show a traceback.

    `REPLOG_DEBUG=1` lets unexpected exceptions through for debugging.
    """
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except _PASS_THROUGH:
            raise
        except (UnreadableInput, UnsafeOutput, ReplogError) as e:
            stderr.print(f"[bold red]replog:[/] {escape(str(e))}")   # a path with [brackets] is no markup
            raise typer.Exit(EXIT_USAGE) from None
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(EXIT_CLEAN) from None
        except KeyboardInterrupt:
            stderr.print("[bold red]replog:[/] interrupted")
            raise typer.Exit(130) from None
        except Exception as e:  # noqa: BLE001 - the last line of defence for the user
            if isinstance(e, OSError) and e.errno in SYSTEM_ERRNOS:   # the machine's refusal, not a bug
                stderr.print(f"[bold red]replog:[/] {escape(system_error(e))}")
                raise typer.Exit(EXIT_USAGE) from None
            if os.environ.get("REPLOG_DEBUG"):
                raise
            stderr.print(f"[bold red]replog: internal error:[/] {type(e).__name__}: {e} "
                         "(set REPLOG_DEBUG=1 for a traceback, and please report it)")
            raise typer.Exit(EXIT_USAGE) from None
    return wrapper  # type: ignore[return-value]


def system_error(e: OSError) -> str:
    """An OSError of `SYSTEM_ERRNOS` in words: what the system said, and the path(s) it said it of."""
    where = [os.fsdecode(f) for f in (e.filename, e.filename2) if f is not None]
    return f"{e.strerror}: {' -> '.join(where)}" if where else str(e.strerror or e)


def print_repaired(repaired: Iterable[Any], console: Console, describe: Callable[[Any], tuple[bool, str]]) -> bool:
    """One line per repaired replica or store; True when every one verified clean."""
    clean = True
    for r in repaired:
        ok, text = describe(r)
        problems = "; ".join(r.problems)
        state = "[green]verified[/]" if ok and not r.problems else f"[red]{problems or 'differs from the leader'}[/]"
        console.print(f"wrote [bold]{r.name}[/] → {r.path}  {text}  {state}")
        clean = clean and ok and not r.problems
    return clean


def exit_for(severities: Iterable[str]) -> int:
    return EXIT_FINDINGS if any(s == "error" for s in severities) else EXIT_CLEAN


class ReplayOutcome(Protocol):
    """A replay's result, Kafka or RocketMQ: it knows whether a replica loses records or would fail."""

    @property
    def loses_or_fails(self) -> bool: ...


def exit_for_replay(result: ReplayOutcome, verified: bool = True) -> int:
    """The one rule for every command that reports a replay (replay, repair, impact): exit 1 when a
    replica loses records or would fail, or when what was written did not verify, else 0.

    A script running `replog replay` before restarting brokers must be able to tell from the exit
    code alone that restarting them as they are loses data."""
    return EXIT_FINDINGS if result.loses_or_fails or not verified else EXIT_CLEAN
