"""The one runner of the replica commands (replay, impact, repair, what-if), for Kafka and RocketMQ alike:
parse → open (`recovery.replicas.open_replicas`) → run → render → exit code.

What differs between the systems is the model (`recovery/replicas.py`) and how a replay is drawn (`Views`:
the table and transcript, the page, a repaired replica's line); the order of the steps does not: a page
inside the evidence is refused before any work, the page is written before the document is printed, and the
exit follows the replay (`exit_for_replay`).
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic

from rich.console import Console

from replog.formats.errors import ReplogError
from replog.recovery.replica_outcomes import Compared, Impacted, Outcome, R, Repaired
from replog.recovery.replicas import KafkaReplicas, ReplicaOptions, ReplicaSet, RocketStores, open_replicas
from replog.toolkit.documents import JsonObject, ReplayDoc, typed
from replog.toolkit.output import Format, exit_for_replay, print_repaired, resolve, write_json
from replog.toolkit.progress import work_progress
from replog.toolkit.render import render


class Command(StrEnum):
    REPLAY = "replay"
    IMPACT = "impact"
    REPAIR = "repair"
    WHAT_IF = "what-if"


@dataclass(frozen=True)
class ReplicaRequest:
    """One replica command as the command line gave it: the replicas, the options of the model, and where
    the results go (`fmt`, `html`; `out` for repair, `export_lost` for replay)."""

    command: Command
    specs: Sequence[str]
    options: ReplicaOptions = ReplicaOptions()
    fmt: Format | None = None
    html: str | os.PathLike[str] | None = None
    out: str | os.PathLike[str] | None = None
    force: bool = False
    export_lost: str | os.PathLike[str] | None = None

    def __post_init__(self) -> None:
        """Options that contradict the command are usage errors before anything is opened."""
        if self.command is Command.REPAIR:
            self.repair_out()
        if self.command is Command.WHAT_IF and (self.options.leader is not None or self.export_lost is not None):
            raise ReplogError("--what-if replays behind every replica: it takes no --leader or --export-lost")

    def repair_out(self) -> str | os.PathLike[str]:
        if self.out is None:
            raise ReplogError("--out DIR is required (or --in-place --backup DIR)")
        return self.out


@dataclass(frozen=True)
class Views(Generic[R]):
    """How one system's replay is drawn: the text (`show`), the page (`page`, from the JSON document the
    command prints) and one repaired replica's line (`written`: whether it equals the leader, and its figures)."""

    show: Callable[[R, Console], None]
    page: Callable[[R, ReplayDoc], str]
    written: Callable[[Any], tuple[bool, str]]


def _kafka_views() -> Views[Any]:
    from replog.toolkit.replay_view import print_replay, replay_html
    return Views(print_replay, replay_html,
                 lambda r: (r.identical_to_leader, f"LEO {r.log_end_offset} HW {r.high_watermark}"))


def _rocketmq_views() -> Views[Any]:
    from replog.toolkit.rocketmq_views import print_replay, replay_html
    return Views(print_replay, replay_html,
                 lambda r: (r.identical_to_master, f"({r.role}) commitlog {r.log_start_offset}..{r.log_end_offset}"))


def run_replicas(request: ReplicaRequest) -> int:
    """Open the replicas, run the command, write its page and print its document; the exit code (1 when a
    replica loses records or would fail, or what repair wrote did not verify)."""
    replicas = open_replicas(request.specs, request.options)
    if isinstance(replicas, RocketStores):
        return _run(replicas, _rocketmq_views(), request)
    return _run(replicas, _kafka_views(), request)


def _run(replicas: ReplicaSet[R], views: Views[R], request: ReplicaRequest) -> int:
    from replog.recovery.outputs import prepare_file_output

    report = None if request.html is None else prepare_file_output(request.html, replicas.evidence_roots())
    outcome = _outcome(replicas, request)
    doc = outcome.to_dict()
    if report is not None:
        from replog.toolkit.pages import write_page
        write_page(report, views.page(outcome.page_result, typed(ReplayDoc, outcome.page_doc(doc))), outcome.roots)
    render(resolve(request.fmt), doc, lambda console: _show(outcome, doc, views, console))
    return exit_for_replay(outcome, outcome.verified)


def _outcome(replicas: ReplicaSet[R], request: ReplicaRequest) -> Outcome[R]:
    """The command's result; the progress line stands while the replicas are read (and, for what-if,
    replayed behind every choice)."""
    with work_progress(replicas.loading) as progress:
        if request.command is Command.WHAT_IF:
            return replicas.what_if(progress)
        replicas.load(progress)
    if request.command is Command.IMPACT:
        return replicas.impact()
    if request.command is Command.REPAIR:
        return replicas.repair(request.repair_out(), request.force)
    replayed = replicas.replay(_exporter(request))
    if replayed.exported is not None:
        from replog.toolkit.commands import stderr_note
        stderr_note(f"saved {len(replayed.exported)} files of records that would be lost under {request.export_lost}")
    return replayed


def _exporter(request: ReplicaRequest) -> Callable[[Any], list[str]] | None:
    """`--export-lost`: the writer of what would be lost (toolkit/export_lost.py), run on the replay first."""
    out = request.export_lost
    if out is None:
        return None
    from replog.toolkit.export_lost import export_lost
    return lambda result: export_lost(result, out, force=request.force)


def _show(outcome: Outcome[R], doc: JsonObject, views: Views[R], console: Console) -> None:
    """The command's result for a person. `doc` is the document the command printed: an impact, a what-if or
    a replay (repair's adds what was written) by the outcome, each read through its declaration."""
    from replog.toolkit.impact_view import print_impact, print_with_impact

    if isinstance(outcome, Impacted):
        print_impact(doc, console)
    elif isinstance(outcome, Compared):
        from replog.toolkit.what_if_view import print_what_if
        print_what_if(doc, console)
    else:
        print_with_impact(lambda: views.show(outcome.result, console), typed(ReplayDoc, doc).get("impact"), console)
        if isinstance(outcome, Repaired):
            print_repaired(outcome.repaired, console, views.written)


def run_repair_in_place(specs: Sequence[str], backup: str | os.PathLike[str], options: ReplicaOptions,
                        fmt: Format | None) -> int:
    """`repair --in-place --backup DIR` (Kafka): the replicas read and swapped for their repaired selves while
    their log dirs and the backup are held (`inplace.holding`)."""
    from replog.recovery.kafka.inplace import repair_in_place

    replicas = open_replicas(specs, options)
    if not isinstance(replicas, KafkaReplicas):
        raise ReplogError("--in-place repairs Kafka replicas; RocketMQ stores are repaired with --out DIR")
    with replicas.holding(backup):   # read and written under the same locks
        with work_progress(replicas.loading) as progress:
            result = replicas.load(progress)
        repaired = repair_in_place(result, backup)
    payload = result.to_dict() | {"backup": str(backup), "repaired": [r.to_dict() for r in repaired]}
    # one line per replica for a person; --format jsonl has always written the indented document here
    if resolve(fmt) is Format.table:
        from replog.toolkit.premise_view import print_premise

        console = Console(highlight=False)
        print_premise(payload["premise"], console)
        for r in repaired:
            console.print(f"repaired in place [bold]{r.name}[/] {r.path}  LEO {r.log_end_offset}  "
                          + ("[green]identical to the leader[/]" if r.identical_to_leader else "[red]differs[/]"))
    else:
        write_json(payload)
    return exit_for_replay(result, all(r.identical_to_leader for r in repaired))
