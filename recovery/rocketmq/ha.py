"""Offline replay of RocketMQ HA between on-disk stores: classic and auto-switch (docs/reference/rocketmq.md §8-§10).

A deterministic state machine over `StoreModel`s, no writes: each slave
reports its max physical offset; the master picks the first transfer position;
frames are cut at `haTransferBatchSize`, segment ends and (auto-switch) epoch
ends; the slave checks each frame's offset against its own end. Classic HA
never truncates and never compares content: a slave ahead of the master stalls
(reported with its cause, the slave left as it is), and one whose bytes diverged
gets the master's bytes appended onto its own history (a mixed history, flagged);
either way repair writes the plan an operator would apply (truncate to the common
prefix, then fetch). Auto-switch HA searches the consistent point over the two
epoch lists, truncates the slave there, then transfers. Every step is an event.
Outcomes and their JSON shapes live in `ha_result`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replog.formats.errors import FormatError, ReplogError, UnreadableInput
from replog.formats.fileio import mapped, read_small
from replog.formats.findings import finding
from replog.formats.rocketmq import commitlog as cl
from replog.formats.rocketmq.epoch_file import EpochEntry, EpochRange, with_end_offsets
from replog.recovery.naming import parse_named, replica_names
from replog.recovery.progress import Progress, Tally
from replog.recovery.rocketmq.dledger_replay import DLEDGER, replay_dledger
from replog.recovery.rocketmq.ha_result import HAReplayResult, Plan, ReplicaOutcome, Stall
from replog.recovery.rocketmq.recovery_rule import rule_for, version_tuple
from replog.recovery.rocketmq.store_model import MessageRef, StoreModel, load_store
from replog.recovery.transcript import Transcript

CLASSIC, AUTOSWITCH = "classic", "autoswitch"
HA_TRANSFER_BATCH_SIZE = 32768        # haTransferBatchSize
FRAME_EVENTS = 16                     # frames shown one by one; the rest are summed up

# --- comparison -------------------------------------------------------------------------------

def compare_logs(slave: StoreModel, master: StoreModel) -> tuple[int | None, int]:
    """(first physical offset where the overlapping ranges differ, end of their common prefix).

    RocketMQ itself never compares (§10.2 step 4): this is the forensic check.
    Records are the same when their metadata and CRCs agree at the same offset.
    """
    lo, hi = max(slave.min_offset, master.min_offset), min(slave.max_offset, master.max_offset)
    s_by = {m.physical_offset: m for m in slave.messages if m.physical_offset >= lo}
    m_by = {m.physical_offset: m for m in master.messages if lo <= m.physical_offset < hi}
    bad = [off for off, m in s_by.items() if off < hi and (m.end > hi or off not in m_by
                                                           or m_by[off].signature != m.signature)]
    bad += [off for off in m_by if off not in s_by]
    diverged = min(bad) if bad else None
    limit = diverged if diverged is not None else hi
    prefix = max([lo] + [m.end for off, m in s_by.items() if off < limit and m.end <= limit])
    if diverged is None:
        prefix = max(prefix, hi) if hi >= lo else prefix
    return diverged, prefix


def is_offset_aligned(store: StoreModel, offset: int) -> bool:
    """`DefaultMessageStore#isOffsetAligned`: the record at `offset` validates with CRC (a BLANK does)."""
    where = store.file_at(offset)
    if where is None:
        return True
    try:
        with mapped(where[1]) as buf:
            msg = cl.read_message(buf, offset - where[0], file_start=where[0], check_crc=True)
    except (FormatError, UnreadableInput):
        return False
    return msg.kind == "blank" or msg.crc_valid


def find_consistent_point(local: list[EpochRange], master: list[EpochRange]) -> int:
    """`EpochFileCache#findConsistentPoint`: highest local epoch also on the master with the same start."""
    by_epoch = {e.epoch: e for e in master}
    for e in reversed(local):
        m = by_epoch.get(e.epoch)
        if m is not None and m.start_offset == e.start_offset:
            return min(e.end_offset, m.end_offset)
    return -1


def same_epoch_point(master: StoreModel, slave: StoreModel) -> tuple[int, list[MessageRef]] | None:
    """Where `slave` truncates if `master` comes back as master under its own last epoch, and the slave's
    messages below that point whose bytes differ from the master's (kept, unflagged); None when nothing changes.

    A controller that still names the old master when it re-registers answers "The old master .. is still
    alive" and keeps the epoch (`ReplicasInfoManager#electMaster`, 5.3.3); `AutoSwitchHAService#changeToMaster`
    then drops that epoch's entry (`truncateSuffixByEpoch`) and appends it again at the master's current end, so
    the epoch's earlier bytes count as the previous epoch's. Seen in the broker lab: a controller restarted with
    the group, the old master heartbeating before the controller's election (tests/brokers/rocketmq_ha_scenarios)."""
    if not master.epochs or not slave.epochs or master.epochs[-1].start_offset >= master.max_offset:
        return None
    moved = [e for e in master.epochs if e.epoch < master.epochs[-1].epoch]
    moved.append(EpochEntry(master.epochs[-1].epoch, master.max_offset))
    ranges = with_end_offsets(moved, master.max_offset)
    local = with_end_offsets(slave.epochs, slave.max_offset)
    normal = find_consistent_point(local, with_end_offsets(master.epochs, master.max_offset))
    point = find_consistent_point(local, ranges)
    if point < 0 or point == normal:
        return None
    m_by = master.by_offset()
    kept = [m for m in slave.messages if m.end <= point
            and (m.physical_offset not in m_by or m_by[m.physical_offset].signature != m.signature)]
    return point, kept


# --- leader -------------------------------------------------------------------------------------

def broker_id(model: StoreModel) -> int | None:
    """brokerId from `brokerIdentity` (`cluster#broker#id[#code]`), None if absent or unreadable."""
    p = model.layout.broker_identity
    if p is None:
        return None
    try:
        parts = read_small(p, limit=4096).decode("utf-8", "replace").strip().split("#")
        return int(parts[2]) if len(parts) >= 3 else None
    except (UnreadableInput, ValueError):
        return None


def choose_master(stores: Sequence[StoreModel], protocol: str, leader: str | None) -> tuple[StoreModel, str]:
    names = [s.name for s in stores]
    if leader is not None:
        if leader not in names:
            raise ReplogError(f"--leader {leader!r} is not one of {', '.join(names)}")
        return next(s for s in stores if s.name == leader), f"{leader} chosen by the user"
    if protocol == AUTOSWITCH:
        best = max(stores, key=lambda s: (s.last_epoch if s.last_epoch is not None else -1, s.max_offset,
                                          -stores.index(s)))
        return best, (f"{best.name} has the highest (epoch, max offset) = ({best.last_epoch}, {best.max_offset}), "
                      "the controller's preference among in-sync replicas")
    for s in stores:
        if s.name.lower() == "master":
            return s, f"{s.name} is named master"
    for s in stores:
        if broker_id(s) == 0:
            return s, f"{s.name} has brokerId 0 in its brokerIdentity"
    return stores[0], f"{stores[0].name} is the first store given (classic HA has no election; use --leader)"


# --- transfer -----------------------------------------------------------------------------------

@dataclass
class _Slave:
    """Mutable replay state of one slave."""

    name: str
    min_offset: int
    max_offset: int
    epochs: list[EpochEntry]


def _frame_sizes(master: StoreModel, start: int, epochs: list[EpochRange] | None
                 ) -> list[tuple[int, int, EpochRange | None]]:
    """(offset, size, header epoch) of each frame from `start` to the master's max offset.

    A frame stops at the batch size, at the end of the master's segment and at the
    end of the current epoch; a frame that reaches an epoch's end already carries
    the next epoch in its header (§9.5).
    """
    out: list[tuple[int, int, EpochRange | None]] = []
    nxt, fs = start, master.file_size
    i = next((k for k, e in enumerate(epochs) if e.start_offset <= nxt < e.end_offset), None) if epochs else None
    while nxt < master.max_offset:
        size = min(HA_TRANSFER_BATCH_SIZE, fs - nxt % fs, master.max_offset - nxt)
        cur = None
        if epochs and i is not None:
            while nxt >= epochs[i].end_offset and i + 1 < len(epochs):
                i += 1
            if nxt < epochs[i].end_offset:
                size = min(size, epochs[i].end_offset - nxt)
            if nxt + size == epochs[i].end_offset and i + 1 < len(epochs):
                i += 1
            cur = epochs[i]
        out.append((nxt, size, cur))
        nxt += size
    return out


def _transfer(master: StoreModel, s: _Slave, start: int, out: ReplicaOutcome, log: Transcript,
              epochs: list[EpochRange] | None) -> None:
    """Master frames from `start`; the slave checks each offset and appends (§8.3-§8.4, §9.5)."""
    frames = _frame_sizes(master, start, epochs)
    last_epoch = s.epochs[-1].epoch if s.epochs else None
    for n, (off, size, ep) in enumerate(frames):
        if s.max_offset != 0 and s.max_offset != off:   # never true by construction; kept as the broker's check
            log.add("offset_check", s.name, ok=False, slave_max_offset=s.max_offset, frame_offset=off)
            return
        if s.max_offset == 0:
            s.min_offset = off - off % master.file_size
        detail: dict[str, Any] = {"offset": off, "size": size}
        if ep is not None:
            detail |= {"epoch": ep.epoch, "epoch_start_offset": ep.start_offset}
        if n < FRAME_EVENTS:
            log.add("transfer", master.name, to=s.name, **detail)
        if ep is not None and ep.epoch != last_epoch:
            last_epoch = ep.epoch
            if not s.epochs or (ep.epoch > s.epochs[-1].epoch and ep.start_offset > s.epochs[-1].start_offset):
                s.epochs.append(EpochEntry(ep.epoch, ep.start_offset))
                log.add("epoch_append", s.name, epoch=ep.epoch, start_offset=ep.start_offset)
        s.max_offset = off + size
        out.frames += 1
        out.fetched_bytes += size
    if frames:
        log.add("append", s.name, first_offset=frames[0][0], end_offset=s.max_offset, frames=len(frames),
                bytes=out.fetched_bytes, frames_not_shown=max(0, len(frames) - FRAME_EVENTS))
    log.add("report", s.name, slave_max_offset=s.max_offset)


def _lost(slave: StoreModel, master: StoreModel, point: int) -> list[MessageRef]:
    """Slave messages at or past `point` that the master does not hold identically at the same offset."""
    m_by = master.by_offset()
    return [m for m in slave.messages if m.physical_offset >= point
            and (m.physical_offset not in m_by or m_by[m.physical_offset].signature != m.signature)]


def replay_classic(master: StoreModel, slave: StoreModel, log: Transcript) -> ReplicaOutcome:
    """§8 and §10.2: report, first transfer position, frames; a stall when offsets cannot meet."""
    out = ReplicaOutcome(slave, "slave", "in_sync")
    out.diverged_at, prefix = compare_logs(slave, master)
    s = _Slave(slave.name, slave.min_offset if slave.max_offset else 0, slave.max_offset, list(slave.epochs))
    log.add("report", s.name, slave_max_offset=s.max_offset)
    fs = master.file_size
    start = s.max_offset if s.max_offset != 0 else master.max_offset - master.max_offset % fs
    rule = "the slave's reported offset" if s.max_offset else "slave empty: start of the master's last file"
    log.add("decide", master.name, to=s.name, transfer_from=start, rule=rule)
    stall: Stall | None = None
    if s.max_offset > master.max_offset:
        stall = _slave_ahead(master, s.max_offset, out.diverged_at, log)
    elif s.max_offset and s.max_offset < master.min_offset:
        stall = Stall("slave_behind_master_min_offset", (
            f"the slave's max offset {s.max_offset} is below the master's first file ({master.min_offset}): "
            "the master has nothing to send"))
    if stall is not None:
        out.status, out.stall = "stalled", stall
        log.add("stall", s.name, **stall.to_dict(), diverged_at=out.diverged_at)
        _keep_as_is(out)
        _operator_fix(out, master, slave, prefix, log)
        return out
    _transfer(master, s, start, out, log, None)
    out.status = "fetched" if out.frames else "in_sync"
    out.plan = out.repair_plan = Plan(slave.max_offset if slave.max_offset else 0, start, s.max_offset,
                                      list(slave.epochs), slave.confirm_offset)
    out.max_offset_after, out.min_offset_after = s.max_offset, s.min_offset
    out.confirm_after, out.epochs_after = slave.confirm_offset, s.epochs
    if out.diverged_at is not None:
        _mixed_content(out, master, slave, start, log)
        _operator_fix(out, master, slave, prefix, log)
    return out


# `HAConnection.ReadSocketService#processReadEvent` closes the connection of a slave that reports an offset past the
# master's end from rocketmq-all-4.9.3 (#3016) through the 4.9 line; 5.x's `DefaultHAConnection` has no such check.
CLOSES_SLAVE_AHEAD = ((4, 9, 3), (5, 0, 0))
CLOSED_EACH_REPORT, HEARTBEATS_ONLY, UNKNOWN = "closed_at_each_report", "heartbeats_only", "unknown"


def slave_ahead_connection(master: StoreModel) -> str:
    """What the master's broker version does with a slave whose reported offset is past its end.

    Either way the first report is taken unchecked as the transfer position ("master transfer data from S",
    `WriteSocketService#run`), and the master sends heartbeats whose header offset is S, the slave's own end, so
    the slave's "offset not equal" check (`HAClient#dispatchReadRequest`) passes. 4.9.3-4.9.x: the slave's next
    report (`haSendHeartbeatInterval`) is checked, "slave[..] request offset=S greater than local commitLog
    offset=M" is logged, the connection closed, and the slave reconnects: a loop, one connection per ~two heartbeat
    intervals. 5.x (`DefaultHAConnection`, rocketmq-all-5.3.3) and before 4.9.3: the connection stays open,
    heartbeats only. Unknown without the broker version (`--broker-version`)."""
    if master.rule.version is None:
        return UNKNOWN
    low, high = CLOSES_SLAVE_AHEAD
    return CLOSED_EACH_REPORT if low <= version_tuple(master.rule.version) < high else HEARTBEATS_ONLY


def _slave_ahead(master: StoreModel, reported: int, diverged_at: int | None, log: Transcript) -> Stall:
    """The stall of a classic slave whose max offset is past the master's: nothing is sent, nothing truncated."""
    connection = slave_ahead_connection(master)
    how = {CLOSED_EACH_REPORT: (f"the master logs \"request offset={reported} greater than local commitLog offset="
                                f"{master.max_offset}\" at the slave's next report and closes the connection; the "
                                "slave reconnects and the loop repeats"),
           HEARTBEATS_ONLY: "the master sends heartbeats only and the connection stays open",
           UNKNOWN: ("the master sends heartbeats only (4.9.3-4.9.x also closes the connection at each report; "
                     "give --broker-version)")}[connection]
    if connection == CLOSED_EACH_REPORT:
        log.add("disconnect", master.name, reported_offset=reported, master_max_offset=master.max_offset,
                repeats=True, rule="4.9.3+ HAConnection: a reported offset past the master's end closes the link")
    return Stall("slave_ahead", (
        f"the slave's max offset {reported} is past the master's {master.max_offset}: the master starts at "
        f"{reported} and has nothing to send; {how}; classic HA never truncates"
        + (f"; the logs also differ from {diverged_at}" if diverged_at is not None else "")
        + f"; should the master's log grow past {reported}, it streams from there onto the slave's bytes"),
        connection)


def _mixed_content(out: ReplicaOutcome, master: StoreModel, slave: StoreModel, joined_at: int,
                   log: Transcript) -> None:
    """`HAConnection`/`HAClient` (classic): the slave reports only its max offset and the master streams
    from there, whatever the bytes below it are, so the slave keeps its own diverged history and
    appends the master's after it: mixed content nobody flags (the broker's own hazard)."""
    inside = not any(m.physical_offset == joined_at for m in master.messages) and joined_at < master.max_offset
    message = (f"the slave's bytes differ from the master's from {out.diverged_at}, yet classic HA checks only "
               f"the offset: the master streams its bytes from {joined_at} onto the slave's own history"
               + (", starting inside one of its messages (the slave's dispatch stops there)" if inside else ""))
    out.findings.append(finding("ROCKETMQ_HA_MIXED_CONTENT", slave.path, offset=out.diverged_at, message=message))
    log.add("mixed_content", slave.name, diverged_at=out.diverged_at, joined_at=joined_at, inside_message=inside)


def _operator_fix(out: ReplicaOutcome, master: StoreModel, slave: StoreModel, prefix: int, log: Transcript) -> None:
    """What `repair` writes for a slave the broker leaves stalled or mixed: its bytes cut at the common
    prefix, then the master's fetched as a fresh report would."""
    fs = master.file_size
    keep = prefix if slave.max_offset and slave.max_offset >= master.min_offset else 0
    keep = keep if keep >= master.min_offset else 0
    fetch_from = keep if keep else master.max_offset - master.max_offset % fs
    out.repair_plan = Plan(keep, fetch_from, master.max_offset, list(slave.epochs), slave.confirm_offset)
    out.repair_lost = _lost(slave, master, keep) if keep else list(slave.messages)
    log.add("repair_plan", slave.name, truncate_to=keep, fetch_from=fetch_from, fetch_to=master.max_offset,
            rule="operator fix: cut at the common prefix, then fetch as a fresh report would")


def _keep_as_is(out: ReplicaOutcome) -> None:
    m = out.model
    out.max_offset_after, out.min_offset_after = m.max_offset, m.min_offset
    out.confirm_after, out.epochs_after = m.confirm_offset, list(m.epochs)


def _master_confirm(master: StoreModel) -> int:
    return master.confirm_offset if master.confirm_offset is not None else master.max_offset


def replay_autoswitch(master: StoreModel, slave: StoreModel, log: Transcript, *,
                      sync_from_last_file: bool = False) -> ReplicaOutcome:
    """§9.4-§9.5 and §10.3: handshake, consistent point, truncation, transfer with epoch frames."""
    out = ReplicaOutcome(slave, "slave", "in_sync")
    out.diverged_at, _ = compare_logs(slave, master)
    s = _Slave(slave.name, slave.min_offset if slave.max_offset else 0, slave.max_offset, list(slave.epochs))
    log.add("handshake", s.name, slave_max_offset=s.max_offset,
            local_epochs=[[e.epoch, e.start_offset] for e in s.epochs])
    m_ranges = with_end_offsets(master.epochs, master.max_offset)
    log.add("handshake", master.name, to=s.name, master_max_offset=master.max_offset,
            epochs=[[e.epoch, e.start_offset] for e in master.epochs])
    if not s.epochs:
        point = s.max_offset
        log.add("consistent_point", s.name, point=point, rule="no local epochs: no truncation and no content check")
    else:
        point = find_consistent_point(with_end_offsets(s.epochs, s.max_offset), m_ranges)
        log.add("consistent_point", s.name, point=point,
                rule="highest local epoch the master has with the same start offset; min of the two ends")
    if point < 0:
        out.status, out.stall = "manual", Stall("no_consistent_point", (
            "no local epoch appears on the master with the same start offset: the handshake fails and the "
            "slave retries forever; an operator must intervene"))
        return _autoswitch_stall(out, master, slave, log)
    if point < s.max_offset:
        if not is_offset_aligned(slave, point):
            out.status, out.stall = "manual", Stall("offset_not_aligned", (
                f"no valid record starts at {point} on the slave: \"offset is not align, truncate failed, "
                "need manual fix\""))
            return _autoswitch_stall(out, master, slave, log)
        out.lost = _lost(slave, master, point)
        removed = [m for m in slave.messages if m.physical_offset >= point]
        s.max_offset, out.truncated_to = point, point
        s.epochs = [e for e in s.epochs if e.start_offset < point]
        log.add("truncate", s.name, offset=point, messages_removed=len(removed),
                bytes_removed=slave.max_offset - point, lost=len(out.lost),
                epochs_after=[[e.epoch, e.start_offset] for e in s.epochs])
        if point < slave.min_offset:
            s.max_offset = s.min_offset = 0
    fs = master.file_size
    if s.max_offset:
        start, rule = s.max_offset, "the slave's reported offset"
    elif sync_from_last_file:
        start, rule = master.max_offset - master.max_offset % fs, "slave empty, syncFromLastFile: master's last file"
    else:
        start, rule = master.min_offset, "slave empty: the master's min offset"
    log.add("decide", master.name, to=s.name, transfer_from=start, rule=rule)
    if start > master.max_offset or start < master.min_offset:
        out.status, out.stall = "stalled", Stall(
            "slave_ahead" if start > master.max_offset else "slave_behind_master_min_offset",
            f"transfer position {start} is outside the master's [{master.min_offset}, {master.max_offset}]: "
            "heartbeats only")
        return _autoswitch_stall(out, master, slave, log)
    if out.diverged_at is not None and out.truncated_to is None and out.diverged_at < s.max_offset:
        log.add("warning", s.name, diverged_at=out.diverged_at,
                note="the slave's own bytes differ from the master's and no truncation removes them")
    _transfer(master, s, start, out, log, m_ranges or None)
    confirm = min(_master_confirm(master), s.max_offset)
    log.add("confirm_update", s.name, confirm_offset=confirm)
    out.status = "truncated" if out.truncated_to is not None else ("fetched" if out.frames else "in_sync")
    keep = out.truncated_to if out.truncated_to is not None else slave.max_offset
    out.plan = out.repair_plan = Plan(keep if keep > slave.min_offset else 0, start, s.max_offset, s.epochs,
                                      confirm)
    out.max_offset_after, out.min_offset_after = s.max_offset, s.min_offset
    out.confirm_after, out.epochs_after = confirm, s.epochs
    return out


def _autoswitch_stall(out: ReplicaOutcome, master: StoreModel, slave: StoreModel, log: Transcript) -> ReplicaOutcome:
    log.add("stall", slave.name, **(out.stall.to_dict() if out.stall is not None else {}))
    _keep_as_is(out)
    _, prefix = compare_logs(slave, master)
    keep = prefix if prefix >= master.min_offset and slave.max_offset else 0
    fetch_from = keep if keep else master.min_offset
    epochs = [e for e in master.epochs if e.start_offset < master.max_offset]
    out.repair_plan = Plan(keep, fetch_from, master.max_offset, epochs, _master_confirm(master))
    out.repair_lost = _lost(slave, master, keep) if keep else list(slave.messages)
    log.add("repair_plan", slave.name, truncate_to=keep, fetch_from=fetch_from, fetch_to=master.max_offset,
            rule="operator fix: cut at the common prefix, then fetch")
    return out


def replay_stores(stores: Sequence[StoreModel], leader: str | None = None, protocol: str = CLASSIC
                  ) -> HAReplayResult:
    """Replay every slave against the master, in the order given (a DLedger group: `dledger_replay`)."""
    if protocol == DLEDGER:
        return replay_dledger(stores, leader)
    if protocol not in (CLASSIC, AUTOSWITCH):
        raise ReplogError(f"unknown protocol {protocol!r} for RocketMQ: use classic, autoswitch or dledger")
    if any(s.dledger is not None for s in stores):
        raise ReplogError(f"{', '.join(s.name for s in stores if s.dledger is not None)}: DLedger stores replicate "
                          "by Raft, not by classic or auto-switch HA: replay them with --protocol dledger")
    names = [s.name for s in stores]
    if len(set(names)) != len(names):
        raise ReplogError(f"store names must be unique: {names}")
    sizes = {s.file_size for s in stores if s.files}
    if len(sizes) > 1:
        raise ReplogError(f"the stores use different commitlog file sizes {sorted(sizes)}")
    master, why = choose_master(stores, protocol, leader)
    log = Transcript()
    log.add("master", master.name, max_offset=master.max_offset, min_offset=master.min_offset,
            confirm_offset=master.confirm_offset, epochs=[[e.epoch, e.start_offset] for e in master.epochs],
            file_size=master.file_size)
    results = []
    for s in stores:
        if s is master:
            r = ReplicaOutcome(s, "master", "master")
            _keep_as_is(r)
            r.plan = r.repair_plan = Plan(s.max_offset, s.max_offset, s.max_offset, list(s.epochs), s.confirm_offset)
        elif protocol == CLASSIC:
            r = replay_classic(master, s, log)
        else:
            r = replay_autoswitch(master, s, log)
        results.append(r)
    return HAReplayResult(protocol, master.name, why, results, log)


def replay_paths(specs: Sequence[str], leader: str | None = None, protocol: str | None = None,
                 progress: Progress | None = None, broker_version: str | None = None) -> HAReplayResult:
    """Load `[NAME=]PATH` stores and replay them (protocol default: classic); `progress` hears of each
    commit-log file walked. `broker_version` picks the recovery rule each store is loaded by. Without a protocol a
    group of DLedger stores replays by its Raft rules, any other by classic HA."""
    stores = load_stores(specs, progress, broker_version)
    return replay_stores(stores, leader, protocol or default_protocol(stores))


def default_protocol(stores: Sequence[StoreModel]) -> str:
    return DLEDGER if stores and all(s.dledger is not None for s in stores) else CLASSIC


def load_stores(specs: Sequence[str], progress: Progress | None = None,
                broker_version: str | None = None) -> list[StoreModel]:
    """`replay_paths`' reading half (its usage errors), for one replay or one per master (`what_if`)."""
    if len(specs) < 2:
        raise ReplogError("replay needs at least two stores (a master and a slave)")
    named = replica_names([parse_named(spec) for spec in specs], lambda p: p.resolve().name)
    tally = Tally.of(progress, [Path(path) / "commitlog" for _, path in named])
    rule = rule_for(broker_version)
    return [load_store(path, name, tally=tally, rule=rule) for name, path in named]

