"""Help pages in the words a person types: `PATH...`, `NAME=PATH`, `DIR`, `N`, never a Python type.

typer's help shows an argument's annotation (`<list[Path]>`), marks a required
argument `{paths}` in the usage line and gives every flag a `<bool>`. The
command and group classes below show the metavar given in `cli.py` instead,
nothing after a flag, and a required argument as its plain metavar.
"""
from __future__ import annotations

import contextvars
from typing import Any

from typer import _click
from typer._click.types import ParamType
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption


class _Argument(TyperArgument):
    """An argument shown by its metavar alone: the metavar already says what it takes."""

    def get_usage_pieces(self, ctx: _click.Context) -> list[str]:
        name = self.metavar or (self.name or "").upper()
        return [name if self.required else f"[{name}]"]


class _Untyped(ParamType):
    """An argument's type, parsing as before, whose help names no type: typer's help prints an
    argument's `type.get_metavar()`, or `<name>` when it gives none."""

    def __init__(self, inner: ParamType) -> None:
        self.inner, self.name = inner, inner.name

    def get_metavar(self, param: Any, ctx: Any = None) -> str:
        return ""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        return self.inner.convert(value, param, ctx)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)


def _plain(params: list[Any]) -> None:
    """Give typer's parameters the plain help above (same objects, same parsing)."""
    for p in params:
        if type(p) is TyperArgument:
            p.__class__ = _Argument
            p.type = _Untyped(p.type)


class _PlainHelp:
    """Parameters (and the --help option, made late by click) given the plain help above."""

    params: list[Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _plain(self.params)

    def get_help_option(self, ctx: _click.Context) -> TyperOption | None:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        _plain([option])
        return option


class ReplogCommand(_PlainHelp, TyperCommand):
    """A command whose help shows metavars, not Python types."""


class ReplogGroup(_PlainHelp, TyperGroup):
    """A group (`replog`, `replog fleet`, `replog samples`) whose help shows metavars, not Python types,
    and whose command runs in a context of its own: the read policy it adopts (`fileio.ReadPolicy`)
    ends with it, as a run's process does (in-process runs: tests, a library caller)."""

    def invoke(self, ctx: _click.Context) -> Any:
        return contextvars.copy_context().run(super().invoke, ctx)


def plain_usage_errors() -> None:
    """Usage errors as click's plain text (`Error: ...` on one line) instead of typer's panel, which is
    wrapped at 80 columns: for stderr that is not a terminal (a log, a script reading it)."""
    from typer import rich_utils

    def show(self: _click.ClickException) -> None:
        self.show()

    rich_utils.rich_format_error = show
