"""What a replica command found, Kafka or RocketMQ, as typed results: the JSON it prints and the page it draws.

One class per command (`Replayed`, `Impacted`, `Repaired`, `Compared`), generic in the system's replay result
(`recovery.kafka.replay.ReplayResult` or `recovery.rocketmq.ha_result.HAReplayResult`), so the command runner
renders both systems the same way. The documents are the contract's (docs/CLI-CONTRACT.md): built here once,
in the order of their keys there, never by the views.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar


class Documented(Protocol):
    """A result with its contract JSON."""

    def to_dict(self) -> dict[str, Any]: ...


class ReplayDoc(Documented, Protocol):
    """A replay's result: its JSON, and whether a replica loses records or would fail (exit 1)."""

    @property
    def loses_or_fails(self) -> bool: ...


R = TypeVar("R", bound=ReplayDoc)


@dataclass
class OfReplay(Generic[R]):
    """A command's result resting on one replay, `result`, which its page draws: it fails when the replay does
    (`Compared`: when the ranking does) and verifies unless it wrote something that does not (`Repaired`)."""

    result: R

    @property
    def loses_or_fails(self) -> bool:
        return self.result.loses_or_fails

    @property
    def verified(self) -> bool:
        return True

    @property
    def page_result(self) -> R:
        return self.result


@dataclass
class Replayed(OfReplay[R]):
    """`replay`: the replay, and its impact when the disks hold what an impact is read from (consumer offsets;
    for RocketMQ also a transaction or POP checkpoint it affects). `exported`: the files `--export-lost`
    wrote (Kafka), None when not asked."""

    impact: Documented | None
    roots: list[Path]                       # the evidence behind the result: a page never goes there
    exported: list[str] | None = None

    def to_dict(self) -> dict[str, Any]:
        return self.result.to_dict() | ({"impact": self.impact.to_dict()} if self.impact is not None else {})

    def page_doc(self, doc: dict[str, Any]) -> dict[str, Any]:
        """What the page draws, given this command's document `doc`."""
        return doc


@dataclass
class Impacted(OfReplay[R]):
    """`impact`: what the replay's truncation means for consumers, producers and transactions. `premise`:
    the document carries the replay's premise (Kafka: the replay it rests on)."""

    impact: Documented
    roots: list[Path]
    premise: dict[str, Any] | None = None
    with_premise: bool = False

    def to_dict(self) -> dict[str, Any]:
        doc = self.impact.to_dict()
        if self.with_premise:
            doc["premise"] = self.premise
        return doc

    def page_doc(self, doc: dict[str, Any]) -> dict[str, Any]:
        return self.result.to_dict() | {"impact": doc}


class Written(Documented, Protocol):
    """A replica or store written by repair: its JSON and what verifying it found."""

    @property
    def problems(self) -> list[str]: ...


@dataclass
class Repaired(OfReplay[R]):
    """`repair`: the replay, every replica written repaired under `out`, each verified; the impact as replay
    carries it. `identical`: per written replica, whether it equals the leader (master) after writing."""

    impact: Documented | None
    roots: list[Path]
    out: Path
    repaired: Sequence[Any]                 # RepairedReplica | RepairedStore, each a `Written`
    identical: list[bool] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        """Every replica written equals the leader and verified without a problem."""
        return all(same and not r.problems for same, r in zip(self.identical, self.repaired, strict=True))

    def to_dict(self) -> dict[str, Any]:
        doc = self.result.to_dict() | {"output": str(self.out), "repaired": [r.to_dict() for r in self.repaired]}
        if self.impact is not None:
            doc["impact"] = self.impact.to_dict()
        return doc

    def page_doc(self, doc: dict[str, Any]) -> dict[str, Any]:
        return doc


@dataclass
class Compared(OfReplay[R]):
    """`replay --what-if`: every choice of leader (master) ranked; the page is the recommended choice's
    replay (`result`) and its impact, with the choices side by side."""

    ranked: ReplayDoc                       # WhatIf | RocketWhatIf: its exit follows the recommended choice
    best_impact: Callable[[], Documented]   # read only for the page (RocketMQ reads it then)
    roots: list[Path]

    @property
    def loses_or_fails(self) -> bool:
        """As the ranking says: RocketMQ's also counts what the operator's fix of a stalled slave cuts."""
        return self.ranked.loses_or_fails

    def to_dict(self) -> dict[str, Any]:
        return self.ranked.to_dict()

    def page_doc(self, doc: dict[str, Any]) -> dict[str, Any]:
        return self.result.to_dict() | {"impact": self.best_impact().to_dict(), "what_if": doc}


Outcome = Replayed[R] | Impacted[R] | Repaired[R] | Compared[R]
