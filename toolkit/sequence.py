"""A replay's transcript as a sequence diagram: one lane per replica, messages as arrows between lanes,
what a replica does to its own log (truncate, append, HW update) as a mark on its lane.

Works on the transcript's JSON events for Kafka and RocketMQ alike, and for kinds
added later: an event naming a peer (`to`) is an arrow to it; a request or a
slave's report goes to the leader; anything else is a mark on the replica's lane,
coloured by what it does to the log. Text is built from the event's own members
(`describe`), so a new member shows up without a change here.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from replog.toolkit.documents import Event
from replog.toolkit.pages import label, value

MAX_STEPS = 400                   # events drawn; the transcript table below the diagram lists every one
STEP_H, TOP, LANE_W_MIN, LANE_W_MAX = 30, 46, 150, 280
TO_LEADER = frozenset({"request", "report", "handshake"})
HARMFUL = frozenset({"truncate", "truncate_fully", "failed", "stall", "hole", "mixed_content", "isr_shrink",
                     "warning"})
GROWING = frozenset({"append", "epoch_append", "hw_update", "confirm_update", "leader", "master"})
_QUIET = frozenset({"step", "kind", "replica", "to", "api"})
PROSE = ("reason", "rule", "why", "explanation", "cause")


def describe(e: Mapping[str, object]) -> tuple[str, str]:
    """(headline, prose) of one event, read as the open object it is (each kind has its own members):
    `Fetch request: fetch offset 1,308, last fetched epoch 5` and the
    broker rule or reason it gives, if any."""
    name = f"{e['api']} {e['kind']}" if e.get("api") else label(e["kind"])
    facts = [f"{label(k)} {value(v)}" for k, v in e.items() if k not in _QUIET and k not in PROSE]
    prose = " ".join(str(e[k]) for k in PROSE if e.get(k))
    return name + (": " + ", ".join(facts) if facts else ""), prose


@dataclass(frozen=True)
class Lane:
    name: str
    x: float
    leader: bool


@dataclass(frozen=True)
class Step:
    """One event drawn: an arrow (x1 != x2) or a mark on a lane (x1 == x2)."""

    step: int
    y: float
    x1: float
    x2: float
    kind: str
    tone: str            # message | harm | growth | note
    text: str
    prose: str

    @property
    def arrow(self) -> bool:
        return self.x1 != self.x2


@dataclass
class Diagram:
    lanes: list[Lane]
    steps: list[Step]
    width: float
    height: float
    notes_x: float       # where the text of lane marks starts: right of the last lane, clear of every arrow
    elided: int          # events not drawn (see the transcript table)


def _tone(e: Event, arrow: bool) -> str:
    if arrow:
        return "harm" if e.get("error") else "message"
    kind = e["kind"]
    return "harm" if kind in HARMFUL else "growth" if kind in GROWING else "note"


def diagram(events: Sequence[Event], replicas: list[str], leader: str, width: float = 1100) -> Diagram:
    """The diagram of `events` with the leader's lane first, then the other replicas in order."""
    names = [leader] + [r for r in replicas if r != leader]
    for e in events:                        # a party the replica list does not name (a controller, say)
        for who in (e["replica"], e.get("to")):
            if isinstance(who, str) and who not in names:
                names.append(who)
    gap = min(LANE_W_MAX, max(LANE_W_MIN, width * 0.5 / max(len(names), 1)))
    lanes = [Lane(n, 70 + gap * (i + 0.5), n == leader) for i, n in enumerate(names)]
    at = {lane.name: lane.x for lane in lanes}
    steps = []
    for i, e in enumerate(events[:MAX_STEPS]):
        src = at[e["replica"]]
        target = e.get("to") if isinstance(e.get("to"), str) else (
            leader if e["kind"] in TO_LEADER and e["replica"] != leader else None)
        dst = at[target] if target is not None else src
        text, prose = describe(e)
        steps.append(Step(e["step"], TOP + i * STEP_H, src, dst, e["kind"], _tone(e, dst != src), text, prose))
    notes_x = lanes[-1].x + 40
    right = max(width, notes_x + 420)
    return Diagram(lanes, steps, right, TOP + len(steps) * STEP_H + 20, notes_x, max(0, len(events) - MAX_STEPS))
