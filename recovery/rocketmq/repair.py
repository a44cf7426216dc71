"""Applying an HA replay: every store written under DIR/NAME/ as a broker could start from it.

A slave becomes its own commitlog bytes below its cut (a record boundary) plus
the master's bytes from there to the master's end, copied byte-for-byte from
the input files (read-only), then consume queues and index files rebuilt, the
checkpoint and the epoch file written. The master is written as recovered.
Every written store is checked with `diagnose_store` and each slave's
commitlog is compared byte-for-byte with the master's over the slave's range.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from replog.formats.fileio import mapped
from replog.formats.findings import Severity
from replog.formats.rocketmq.broker_identity import IDENTITY_FILE
from replog.recovery.outputs import claimed_output, mark_complete
from replog.recovery.rocketmq.dledger_replay import DLEDGER
from replog.recovery.rocketmq.doctor import diagnose_store
from replog.recovery.rocketmq.ha_result import HAReplayResult, Plan, ReplicaOutcome
from replog.recovery.rocketmq.recover import Piece, prefix_pieces, write_store
from replog.recovery.rocketmq.store_model import StoreModel, load_store

_CHUNK = 8 << 20


@dataclass
class RepairedStore:
    name: str
    path: str
    role: str
    log_start_offset: int
    log_end_offset: int
    identical_to_master: bool
    problems: list[str] = field(default_factory=list)
    findings: dict[str, int] = field(default_factory=dict)
    assumes: list[str] = field(default_factory=list)    # what the output needs beside itself to serve as written

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def controller_assumption(dest: Path) -> list[str]:
    """A controller-mode output keeps `brokerIdentity` (the broker id the old controller granted): it comes up only
    under that controller's store. A fresh controller knows no broker set, so `ReplicasInfoManager#registerBroker`
    answers "Broker-set: <name> hasn't been registered in controller" (CONTROLLER_BROKER_NEED_TO_BE_REGISTERED) to a
    broker whose `ReplicasManager#register` starts past CREATE_METADATA_FILE_DONE, forever: no master is elected
    (seen in the lab, 5.3.3: tests/brokers/test_rocketmq_lab5.py). Without the file the broker applies for an id
    again (`getNextBrokerId`, `applyBrokerId`)."""
    if not (dest / IDENTITY_FILE).is_file():
        return []
    return [(f"controller: the controller's store as copied with this group (its broker-set and broker ids); under a "
            f"new controller the broker cannot register with {IDENTITY_FILE} kept (ReplicasInfoManager#registerBroker:"
            f" broker-set not registered): remove the output's {IDENTITY_FILE} so it applies for a new broker id")]


def master_pieces(master: StoreModel, start: int, end: int) -> list[Piece]:
    """The master's bytes in [start, end), one piece per segment (as the frames carry them)."""
    out = []
    for fstart, path in master.files:
        lo, hi = max(start, fstart), min(end, fstart + master.file_size)
        if lo < hi:
            out.append(Piece(str(path), lo - fstart, hi - lo, lo))
    return out


def plan_pieces(slave: StoreModel, master: StoreModel, plan: Plan) -> list[Piece]:
    own = prefix_pieces(slave, plan.keep_to) if plan.keep_to > 0 else []
    return own + master_pieces(master, plan.fetch_from, plan.fetch_to)


def same_bytes(a: StoreModel, b: StoreModel, start: int, end: int) -> bool:
    """Whether commitlog bytes [start, end) are identical in two stores."""
    for fstart, path in a.files:
        lo, hi = max(start, fstart), min(end, fstart + a.file_size)
        if lo >= hi:
            continue
        other = b.file_at(lo)
        if other is None or other[0] != fstart:
            return False
        with mapped(path) as x, mapped(other[1]) as y:
            for i in range(lo - fstart, hi - fstart, _CHUNK):
                j = min(i + _CHUNK, hi - fstart)
                if x[i:j] != y[i:j]:
                    return False
    return True


def _write_one(root: Path, r: ReplicaOutcome, master: StoreModel) -> tuple[Path, Plan]:
    plan = r.repair_plan or Plan(r.model.max_offset, r.model.max_offset, r.model.max_offset,
                                 list(r.model.epochs), r.model.confirm_offset)
    dest = root / r.model.name
    dest.mkdir(parents=True, exist_ok=True)
    if r.role == "master":
        pieces = prefix_pieces(r.model, r.model.max_offset)
        end = r.model.max_offset
    else:
        pieces = plan_pieces(r.model, master, plan)
        end = plan.end
    write_store(dest, r.model, pieces, end, epochs=plan.epochs,
                confirm_offset=plan.confirm_offset if plan.confirm_offset is not None else 0,
                file_size=master.file_size, like=master, timers_from=timer_source(r, master, end))
    return dest, plan


def timer_source(r: ReplicaOutcome, master: StoreModel, end: int) -> StoreModel | None:
    """The store whose timer files a written slave takes: its master's when the slave is written to the master's
    end (its log is then the master's, byte for byte: `same_bytes`), else its own (None).

    A slave's own timer files describe its own log. Past the cut they describe bytes the repair replaced: units
    for the slave's lost timer messages, and a `timercheck` whose lastTimerQueueOffset counts them. The broker never
    revises them (`DefaultMessageStore#truncateDirtyFiles`, which AutoSwitchHAClient's truncation runs, leaves the
    timer store alone; tag rocketmq-all-5.3.3). A slave enqueues only from its own queue offset up to the master's
    (`TimerMessageStore#isRunningEnqueue`, `recover`: currQueueOffset capped by masterTimerQueueOffset), so the
    master's timer messages at the offsets its stale checkpoint counts are never in its wheel; once it takes over
    (`checkBrokerRole`, `setShouldRunningDequeue`) it never delivers them (lab, 5.3.3: tests/brokers/
    test_rocketmq_timer_group.py). The master's timer files describe the same bytes, and the broker keeps a slave's
    timer checkpoint and metrics in step with its master's (`SlaveSynchronize#syncTimerCheckPoint` every 3 s from
    `ReplicasManager#handleSlaveSynchronize`, `#syncTimerMetrics` in `syncAll`)."""
    if r.role == "master" or end != master.max_offset:
        return None
    return master


def repair_stores(result: HAReplayResult, out: str | os.PathLike[str], *, force: bool = False) -> list[RepairedStore]:
    """Write every store of the replay under `out/NAME/` and prove the result."""
    with claimed_output(out, [r.model.path for r in result.replicas], force) as root:
        if result.protocol == DLEDGER:
            from replog.recovery.rocketmq.dledger_repair import repair_group
            return list(repair_group(result, root))
        return _write_and_prove(result, root)


def _write_and_prove(result: HAReplayResult, root: Path) -> list[RepairedStore]:
    """`repair_stores`' work in its claimed output: write every store, check each against the master."""
    master = next(r.model for r in result.replicas if r.role == "master")
    report = []
    for r in result.replicas:
        dest, plan = _write_one(root, r, master)
        written = load_store(dest, r.model.name, abnormal=False)
        findings, _ = diagnose_store(dest)
        errors = [f for f in findings if f.severity is Severity.ERROR]
        problems = [f"{f.code} at {f.path}:{f.position}" for f in errors]
        same = same_bytes(written, master, written.min_offset, written.max_offset)
        if not same:
            problems.append("commitlog bytes differ from the master's")
        if written.max_offset != (master.max_offset if r.role == "master" else plan.end):
            problems.append(f"log ends at {written.max_offset}, expected {plan.end}")
        counts = {s.value: sum(1 for f in findings if f.severity is s) for s in Severity}
        report.append(RepairedStore(r.model.name, str(dest), r.role, written.min_offset, written.max_offset,
                                    same and written.max_offset == master.max_offset, problems, counts,
                                    controller_assumption(dest)))
    mark_complete(root, f"replog repair: {len(report)} RocketMQ stores")
    return report
