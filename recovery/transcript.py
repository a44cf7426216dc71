"""The transcript of a replay: every step a broker takes, numbered, for any protocol."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Transcript:
    events: list[dict[str, Any]] = field(default_factory=list)

    def add(self, kind: str, replica: str, **details: Any) -> None:
        self.events.append({"step": len(self.events) + 1, "kind": kind, "replica": replica, **details})
