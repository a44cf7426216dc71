"""Rendering a replay: summary table, epoch timeline (terminal and SVG), transcript."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from replog.recovery.kafka.replay import ReplayResult
from replog.recovery.kafka.replica import Replica
from replog.toolkit.documents import ElectionRow, Lost, Profile, Quorum, ReplayDoc, ReplicaRow, typed
from replog.toolkit.premise_view import print_premise
from replog.toolkit.render import Column, Columns

PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#bab0ac"]
WIDTH = 64


def epoch_runs(rep: Replica) -> list[tuple[int, int, int]]:
    """(first offset, end offset exclusive, epoch) runs of consecutive batches with one epoch."""
    runs = rep.log.epoch_runs()
    return list(zip(runs[0].tolist(), runs[1].tolist(), runs[2].tolist(), strict=True))


def _span(result: ReplayResult) -> tuple[int, int]:
    reps = [r.replica for r in result.replicas] + [r.final for r in result.replicas]
    lo = min(r.log_start_offset for r in reps)
    hi = max(r.log_end_offset for r in reps)
    return lo, max(hi, lo + 1)


def _bar(rep: Replica, lo: int, hi: int, width: int = WIDTH) -> Text:
    scale = (hi - lo) / width
    text = Text()
    runs = epoch_runs(rep)
    for col in range(width):
        at = lo + int(col * scale)
        run = next((r for r in runs if r[0] <= at < r[1]), None)
        if run is None:
            text.append("·", style="dim")
        else:
            text.append("█", style=PALETTE[run[2] % len(PALETTE)] if run[2] >= 0 else "white")
    return text


def _lost(lost: Lost) -> str:
    return f"{lost['records']} ({lost['first_offset']}..{lost['last_offset']})" if lost["records"] else "0"


REPLICA_COLUMNS = Columns(
    Column("replica", "name", key=True),
    Column("LEO→", "log_end_offset_before", justify="right"),
    Column("HW→", "high_watermark_before", justify="right", drop=1),
    Column("diverged at", "diverged_at", justify="right", style="yellow", drop=2),
    Column("truncated to", "truncated_to", justify="right"),
    Column("lost", "lost", _lost, justify="right", style=lambda r: "bold red" if r["lost"]["records"] else None),
    Column("fetched", "fetched.records", justify="right", drop=3),
    Column("→LEO", "log_end_offset_after", justify="right"),
    Column("→HW", "high_watermark_after", justify="right"),
)


def _print_quorum(q: Quorum, console: Console) -> None:
    """The KRaft quorum's commit points, and the metadata records each voter loses."""
    console.print(f"KRaft quorum of {q['voters']} voters: leader's epoch starts at {q['epoch_start_offset']}"
                  + (" (its LeaderChangeMessage still to be appended there)" if q["start_of_epoch_pending"] else "")
                  + f"; committed below {q['high_watermark_before']} as the copies stand, "
                  f"{q['high_watermark_after']} once every voter fetched")
    for v in q["voter_states"]:
        lost = v["lost_records"]
        if lost:
            kinds = ", ".join(f"{n} {k}" for k, n in lost["types"].items())
            topics = f"; topics created: {', '.join(lost['topics_created'])}" if lost["topics_created"] else ""
            console.print(f"[red]{escape(v['name'])} loses uncommitted metadata records: {escape(kinds)}"
                          f"{escape(topics)}[/]")


def print_replay(result: ReplayResult, console: Console) -> None:
    """The replicas' table, then what is not tabular: the cross-check warnings, the epoch timeline
    (a picture of each log by offset) and the transcript (one line per protocol step)."""
    d = typed(ReplayDoc, result.to_dict())
    source = {"metadata": "the controller's metadata log", "partition_state": "the partition state",
              "option": "--leader", "rule": "the election rule"}.get(result.leader.source, result.leader.source)
    epoch = "" if result.leader.leader_epoch is None else f" in epoch {result.leader.leader_epoch}"
    console.print(f"[bold]Kafka replay[/] ({result.protocol} protocol), leader [bold]{result.leader.name}[/]{epoch}"
                  f" [dim](from {source})[/]"
                  + ("  [bold red]UNCLEAN ELECTION[/]" if result.leader.unclean else ""))
    for r in result.replicas:  # what the leader choice rests on: contradicted epoch histories first
        for f in r.replica.findings:
            if f.code == "KAFKA_EPOCH_CHECKPOINT_MISMATCH":
                console.print(f"[yellow]{escape(r.replica.name)}: {escape(f.message)}[/]")
    console.print(f"[dim]{result.leader.explanation}[/]")
    print_premise(d["premise"], console)
    if profile := d.get("profile"):
        console.print(f"[dim]{escape(profile_line(profile))}[/]")
    console.print(REPLICA_COLUMNS.table(d["replicas"]))
    if quorum := d.get("quorum"):
        _print_quorum(quorum, console)
    for e in result.transcript.events:
        if e["kind"] == "cross_check" and not e["agree"]:
            console.print(f"[yellow]{e['replica']}: the OffsetsForLeaderEpoch path ends at "
                          f"{e['offsets_for_leader_epoch']} but the Fetch/DivergingEpoch path at "
                          f"{e['truncate_on_fetch']}: the leader's epoch history is older than this follower's, "
                          "which no real election produces[/]")
    _print_hazards(d["replicas"], console)
    _print_timeline(result, console)
    _print_elections(result, d, console)
    console.print("[bold]Transcript[/]")
    for e in result.transcript.events:
        rest = " ".join(f"{k}={v}" for k, v in e.items() if k not in ("step", "kind", "replica"))
        console.print(f"[dim]{e['step']:>3}[/] [cyan]{e['kind']:<14}[/] {e['replica']:<12} {rest}", highlight=False)


def profile_line(profile: Profile) -> str:
    """The settings the rules used, read ones first: `profile: read min.insync.replicas=2, ...; assumed ...`."""
    settings = profile["settings"]

    def words(keys: list[str]) -> str:
        return ", ".join(f"{k}={settings[k]['value']}" + (" (option)" if settings[k]["source"] == "option" else "")
                         for k in keys) or "nothing"
    return f"profile: read {words(profile['read'])}; assumed {words(profile['assumed'])}"


def _print_hazards(replicas: list[ReplicaRow], console: Console) -> None:
    """What the broker's own code does wrong to a replica: a failed fetcher, holes left by its truncation;
    and where a replica's batches differ from the leader's only as the log cleaners left them."""
    for r in replicas:
        if c := r.get("compaction_difference"):
            console.print(f"[dim]{escape(r['name'])}: batches differ from the leader's from {c['first_offset']} "
                          f"below the cleaner point {c['up_to']}, the records the cleaner keeps agree: a "
                          "compaction difference, not a divergence[/]")
        if failed := r["failed"]:
            console.print(f"[bold red]{escape(r['name'])} would FAIL ({failed['error']}):[/] "
                          f"{escape(failed['reason'])}")
        for h in r["holes"]:
            console.print(f"[yellow]{escape(r['name'])}: offsets {h['first_offset']}..{h['last_offset']} are a hole "
                          "the broker's own truncation leaves: a silent divergence from the leader[/]")


def _diverges(diverged_at: int | None) -> str:
    return "" if diverged_at is None else f"  ✗ diverges at {diverged_at}"


def _print_timeline(result: ReplayResult, console: Console) -> None:
    """One bar per replica before and after, as wide as the console allows (at most `WIDTH`), so a
    bar is never wrapped away from the replica it belongs to."""
    lo, hi = _span(result)
    label = max(12, *(len(r.replica.name) for r in result.replicas)) + 8
    width = max(16, min(WIDTH, console.width - label - max(len(_diverges(r.diverged_at)) for r in result.replicas)))
    console.print(f"[bold]Epochs by offset[/] [dim]({lo} .. {hi}, one column ≈ {(hi - lo) / width:.1f} offsets)[/]")
    for r in result.replicas:
        for when, rep in (("before", r.replica), ("after", r.final)):
            line = Text(f"{r.replica.name:>12} {when:<6} ")
            line.append_text(_bar(rep, lo, hi, width))
            if when == "before" and r.diverged_at is not None:
                line.append(_diverges(r.diverged_at), style="yellow")
            console.print(line)
    epochs = sorted({e for r in result.replicas for e in r.replica.log.epoch_runs()[2].tolist()})
    legend = Text("             epochs ")
    for e in epochs:
        legend.append("█", style=PALETTE[e % len(PALETTE)] if e >= 0 else "white")
        legend.append(f" {e}  ")
    console.print(legend)


def _ids(ids: list[int]) -> str:
    return ",".join(map(str, ids)) or "-"


ELECTION_COLUMNS = Columns(
    Column("offset", "offset", lambda v: "-" if v is None else str(v), justify="right", key=True),
    Column("leader", lambda e: (f"{e['leader']} ({e['leader_replica']})" if e["leader_replica"]
                                else str(e["leader"]) if e["leader"] >= 0 else "none")),
    Column("epoch", "leader_epoch", justify="right"),
    Column("ISR", "isr", _ids),
    Column("ELR", "elr", _ids, drop=2),
    Column("election", "unclean", lambda u: "UNCLEAN" if u else "",
           style=lambda e: "bold red" if e["unclean"] else None),
    Column("epoch starts on the replicas", "starts", drop=1),
)


def _print_elections(result: ReplayResult, d: ReplayDoc, console: Console) -> None:
    """The controller's record beside the epochs: each change, and where each replica's epoch cache
    starts that leader epoch (nothing when the replica never saw it)."""
    if result.controller is None:
        return
    starts = {e: [f"{r.replica.name}@{x.start_offset}" for r in result.replicas
                  for x in r.replica.epochs.entries if x.epoch == e]
              for e in {x["leader_epoch"] for x in d["elections"]}}
    rows = [ElectionRow(**x, starts=" ".join(starts[x["leader_epoch"]])) for x in d["elections"]]
    c = result.controller
    title = (f"Controller's record ({'KRaft metadata log' if c.source == 'metadata' else 'partition state'} "
             f"{c.path}{', topic id ' + c.topic_id if c.topic_id else ''})")
    console.print(ELECTION_COLUMNS.table(rows, title))


def replay_html(result: ReplayResult, doc: Mapping[str, Any] | None = None) -> str:
    """The self-contained report page (`replay_page`), drawn from the JSON document the command prints
    (`doc`: repair's, which adds what was written; by default the replay's)."""
    from replog.toolkit.replay_logs import kafka_views
    from replog.toolkit.replay_page import render_replay

    d = typed(ReplayDoc, result.to_dict() if doc is None else doc)
    protocol = "leader-epoch protocol" if result.protocol == "epoch" else "high-watermark protocol (pre KIP-101)"
    return render_replay(d, kafka_views(result), REPLICA_COLUMNS,
                         title=f"Kafka replay of {d['topic']}-{d['partition']}, {protocol}",
                         unit_name="batches", offset_name="offset")
