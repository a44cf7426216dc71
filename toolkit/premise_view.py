"""The premise of a Kafka replay in words: for the table of replay, repair and impact, and the report page.

Everything here reads the premise's JSON (`Premise.to_dict`), so the terminal, the JSON and the page say
the same thing.
"""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from replog.recovery.kafka.replica import CHECKPOINT_INTERVALS
from replog.toolkit.documents import Premise


def follower_notes(premise: Premise) -> list[str]:
    """Why each running follower's fetcher restarts or keeps running (nothing to say when none runs)."""
    return [f"{f['name']}: {f['why']}" for f in premise["followers"] if f["running"]]


def _figure(name: str) -> str:
    file, setting, ms = CHECKPOINT_INTERVALS[name]
    return f"{name} ({file}, written every {ms // 1000} s by {setting})"


def lag_notes(premise: Premise) -> list[str]:
    """One sentence per set of figures that may lag, naming the replicas whose log dir has no clean-shutdown
    marker: a running or crashed broker's memory can be ahead of its checkpoints."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for name, listed in premise["from_checkpoints"].items():
        if listed:
            groups.setdefault(tuple(listed), []).append(name)
    out = []
    for figures, names in groups.items():
        running = [n for n in names if n in premise["running"]]
        still = f" ({', '.join(running)} still running)" if running else ""
        out.append(f"{', '.join(names)}: no .kafka_cleanshutdown marker{still}, so "
                   + ", ".join(_figure(f) for f in figures)
                   + " come from checkpoints that may lag what the broker held in memory")
    return out


def print_premise(premise: Premise | None, console: Console) -> None:
    """The premise's one line, then why each running follower does what it does, then the lagging figures."""
    if premise is None:
        return
    console.print(escape(premise["sentence"]), style="bold")
    for line in follower_notes(premise) + lag_notes(premise):
        console.print(escape(line), style="dim")
