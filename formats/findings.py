"""`Finding`: one located defect or observation, the unit of every report."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from replog.formats import codes
from replog.formats.errors import FormatError, NotRegularFile, OutsideInputs, UnreadableInput, VanishedInput
from replog.formats.shape import Field, Shape


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True, slots=True)
class Finding:
    """What is wrong (or notable), exactly where.

    `position` is a byte position in `path`; `offset` a Kafka logical offset
    (or a RocketMQ physical/queue offset, as the code's explanation says).
    """

    code: str
    path: str
    position: int | None = None
    offset: int | None = None
    message: str = ""
    severity: Severity = field(default=Severity.ERROR)
    details: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return FINDING.dump(self)


FINDING = Shape("code", Field("severity", "severity.value"), "path", "position", "offset", "message",
                Field("details", lambda f: dict(f.details), omit_empty=True))


def finding(code: str, path: str, *, position: int | None = None,
            offset: int | None = None, message: str = "",
            severity: Severity | None = None, **details: Any) -> Finding:
    """Build a finding whose severity defaults to the one its code declares."""
    sev = severity if severity is not None else Severity(codes.severity_of(code))
    return Finding(code, str(path), position, offset, message or codes.explain(code),
                   sev, details)


def from_error(err: FormatError, path: str, **details: Any) -> Finding:
    """Turn a strict parser's `FormatError` into a finding at the same place."""
    return finding(err.code, path, position=err.position, offset=err.offset,
                   message=err.message, **details)


def from_unreadable(err: UnreadableInput, path: str, *, offset: int | None = None, **details: Any) -> Finding:
    """The finding for an input that could not be read: `WRONG_FILE_TYPE` when it is not a regular
    file (the message names what it is), `INPUT_VANISHED` when it was gone, `SYMLINK_OUTSIDE_INPUTS`
    when a symlink leads out of the inputs, else `UNREADABLE_FILE`."""
    code = ("WRONG_FILE_TYPE" if isinstance(err, NotRegularFile) else
            "INPUT_VANISHED" if isinstance(err, VanishedInput) else
            "SYMLINK_OUTSIDE_INPUTS" if isinstance(err, OutsideInputs) else "UNREADABLE_FILE")
    return finding(code, path, offset=offset, message=str(err), **details)


class FindingSink:
    """Collects findings up to `limit`, then only counts: one garbage 10 MiB index
    would otherwise give a million findings. The last kept one says how many were left out."""

    def __init__(self, path: str, limit: int = 1000) -> None:
        self.path, self.limit = path, limit
        self.items: list[Finding] = []
        self.dropped = 0

    def add(self, code: str, position: int | None = None, offset: int | None = None, message: str = "",
            **details: Any) -> None:
        if len(self.items) < self.limit:
            self.items.append(finding(code, self.path, position=position, offset=offset, message=message,
                                      **details))
        else:
            self.dropped += 1

    def result(self) -> list[Finding]:
        if self.dropped:
            last = self.items[-1]
            self.items[-1] = finding(last.code, last.path, position=last.position, offset=last.offset,
                                     message=f"{last.message} ({self.dropped} more findings not listed)",
                                     severity=last.severity, **last.details, suppressed=self.dropped)
        return self.items
