"""What an operator is told to do: the recommended choice of a what-if, the commands that make it so, and why.

Shared by Kafka (`recovery/kafka/what_if_commands.py`) and RocketMQ (`recovery/rocketmq/what_if.py`); the
text is built from the cluster's mode as the inputs show it, never assumed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar


class _Outcome(Protocol):
    @property
    def loses_or_fails(self) -> bool: ...


C = TypeVar("C", bound=_Outcome)


class Ranked(Generic[C]):
    """A what-if's choices, best first (Kafka leaders, RocketMQ masters): the first is the recommendation,
    and replay's exit 1 follows it (even the best choice loses or fails)."""

    choices: list[C]

    @property
    def recommended(self) -> C:
        return self.choices[0]

    @property
    def loses_or_fails(self) -> bool:
        return self.recommended.loses_or_fails


@dataclass(frozen=True)
class Recommendation:
    leader: str
    broker: int | None
    how: str
    mode: str
    command: str                                  # the one command (or action) that makes the choice happen
    steps: list[str] = field(default_factory=list)   # in order, the command among them
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"leader": self.leader, "broker": self.broker, "how": self.how, "mode": self.mode,
                "command": self.command, "steps": list(self.steps), "why": self.why}


def compare_words(figures: list[tuple[str, int, int]]) -> str:
    """`label best (vs next)` phrases for the figures where the recommended choice and the runner-up differ."""
    return "; ".join(f"{label} {a:,} against {b:,}" for label, a, b in figures if a != b)
