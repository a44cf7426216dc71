"""`replog` command line: thin commands that parse options, call one library
function and render its result. Heavy imports happen inside commands so that
`replog --help` starts fast."""
from __future__ import annotations

import typer

app = typer.Typer(
    name="replog",
    help="Forensic and recovery toolkit for Kafka and RocketMQ on-disk logs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def main() -> None:
    app()
