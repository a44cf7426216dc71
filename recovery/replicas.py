"""One way into the replicas of a partition, Kafka or RocketMQ: `open_replicas(specs, options)`.

The replica commands (replay, impact, repair, what-if) all read the same inputs and ask the same model; this
module is the one place that knows which system the inputs are (`formats.discovery.is_rocketmq_store`), which
options apply to it (a usage error, `ReplogError`, before anything is read) and which entry points of
`recovery/kafka` and `recovery/rocketmq` answer each command. Results are the typed `replica_outcomes`.
"""
from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic

from replog.formats.errors import ReplogError
from replog.recovery.naming import parse_named
from replog.recovery.progress import Progress
from replog.recovery.replica_outcomes import Compared, Impacted, R, Repaired, Replayed

if TYPE_CHECKING:
    from replog.recovery.kafka.replay import ReplayResult
    from replog.recovery.rocketmq.ha_result import HAReplayResult

KAFKA, ROCKETMQ = "kafka", "rocketmq"
PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class ReplicaOptions:
    """What a replica command may be told beyond the replicas: whom to follow and by which protocol; for
    Kafka the controller's record of elections (`metadata`, `partition_state`), the replicas whose broker keeps
    running, the topic settings no metadata log states and further log dirs holding consumer offsets
    (`offsets`); for RocketMQ the broker's version (its recovery rule)."""

    leader: str | None = None
    protocol: str | None = None
    metadata: PathLike | None = None
    partition_state: PathLike | None = None
    broker_version: str | None = None
    running: Sequence[str] = ()
    min_insync_replicas: int | None = None
    elr: bool | None = None
    cleanup_policy: str | None = None
    remote_storage: bool | None = None
    offsets: Sequence[PathLike] = ()

    def kafka_only(self) -> bool:
        """Any option that only Kafka replicas take (`offsets` aside: see `RocketStores.what_if`)."""
        return (self.metadata is not None or self.partition_state is not None or bool(self.running)
                or self.min_insync_replicas is not None or self.elr is not None or self.cleanup_policy is not None
                or self.remote_storage is not None)


class ReplicaSet(ABC, Generic[R]):
    """The replicas (partition dirs or stores) named on a command line, checked against the options.

    `load` reads and replays them once (the long part, under `progress`); `replay`, `impact` and `repair`
    build on that replay, `what_if` reads them for every choice of leader itself."""

    system: str
    loading: str                            # what the progress line says while they are read

    def __init__(self, specs: Sequence[str], options: ReplicaOptions) -> None:
        self.specs, self.options = list(specs), options
        self._result: R | None = None

    @abstractmethod
    def evidence_roots(self) -> list[Path]:
        """Where no output may go, known before anything is read (a page inside the evidence is refused
        before any work)."""

    @abstractmethod
    def _replay(self, progress: Progress | None) -> R: ...

    @abstractmethod
    def result_roots(self, result: R) -> list[Path]:
        """The evidence behind a replay's result."""

    @abstractmethod
    def replay(self, export: Callable[[R], list[str]] | None = None) -> Replayed[R]:
        """The replay and its impact; `export` (the command's `--export-lost` writer, Kafka) saves what would be
        lost before anything else happens, and returns the files it wrote."""

    @abstractmethod
    def impact(self) -> Impacted[R]: ...

    @abstractmethod
    def repair(self, out: PathLike, force: bool = False) -> Repaired[R]: ...

    @abstractmethod
    def what_if(self, progress: Progress | None = None) -> Compared[R]: ...

    def load(self, progress: Progress | None = None) -> R:
        """The replay behind `leader` (else the one the rules elect), read once."""
        if self._result is None:
            self._result = self._replay(progress)
        return self._result


class KafkaReplicas(ReplicaSet["ReplayResult"]):
    """Partition dirs of one Kafka partition (or copies of the KRaft metadata log: the quorum's voters)."""

    system, loading = KAFKA, "loading replicas"

    def __init__(self, specs: Sequence[str], options: ReplicaOptions) -> None:
        from replog.recovery.kafka.profile import stated

        if options.broker_version is not None:
            raise ReplogError("--broker-version is for RocketMQ stores; these are Kafka replicas")
        super().__init__(specs, options)
        self.protocol = options.protocol or "epoch"
        self.settings: dict[str, Any] = {
            "metadata": None if options.metadata is None else str(options.metadata),
            "partition_state": None if options.partition_state is None else str(options.partition_state),
            "running": list(options.running),
            "assumed": stated(options.min_insync_replicas, options.elr, options.cleanup_policy,
                              options.remote_storage)}

    def evidence_roots(self) -> list[Path]:
        from replog.recovery.outputs import evidence_roots
        return evidence_roots(parse_named(s)[1] for s in self.specs)

    def _replay(self, progress: Progress | None) -> ReplayResult:
        from replog.recovery.kafka.replay import replay_paths
        return replay_paths(self.specs, self.options.leader, self.protocol, progress, **self.settings)

    def result_roots(self, result: ReplayResult) -> list[Path]:
        from replog.recovery.outputs import evidence_roots
        return evidence_roots(r.replica.path for r in result.replicas)

    def replay(self, export: Callable[[ReplayResult], list[str]] | None = None) -> Replayed[ReplayResult]:
        """The replay; what would be lost saved by `export` first; the impact when consumer offsets are on the
        disks (`impact_of_replay`)."""
        from replog.recovery.kafka.impact import impact_of_replay

        result = self.load()
        exported = None if export is None else export(result)
        return Replayed(result, impact_of_replay(result, self.options.offsets), self.result_roots(result), exported)

    def impact(self) -> Impacted[ReplayResult]:
        from replog.recovery.kafka.impact import read_impact

        result = self.load()
        premise = None if result.premise is None else result.premise.to_dict()   # the replay it rests on
        return Impacted(result, read_impact(result, self.options.offsets), self.result_roots(result), premise,
                        with_premise=True)

    def repair(self, out: PathLike, force: bool = False) -> Repaired[ReplayResult]:
        from replog.recovery.kafka.impact import impact_of_replay
        from replog.recovery.kafka.repair import repair

        result = self.load()
        impact = impact_of_replay(result, self.options.offsets)
        written = repair(result, out, force=force)
        return Repaired(result, impact, self.result_roots(result), Path(out), written,
                        [r.identical_to_leader for r in written])

    def what_if(self, progress: Progress | None = None) -> Compared[ReplayResult]:
        from replog.recovery.kafka.what_if import what_if_paths

        ranked = what_if_paths(self.specs, self.protocol, progress, offsets=self.options.offsets, **self.settings)
        best = ranked.recommended
        return Compared(best.result, ranked, lambda: best.impact, self.result_roots(best.result))

    def holding(self, backup: PathLike) -> AbstractContextManager[None]:
        """`repair --in-place`: the log dirs and `backup` held while the replicas are read and swapped."""
        from replog.recovery.kafka.inplace import holding
        return holding([parse_named(spec)[1] for spec in self.specs], backup)


class RocketStores(ReplicaSet["HAReplayResult"]):
    """RocketMQ stores of one broker group: master, slaves (or DLedger peers)."""

    system, loading = ROCKETMQ, "loading stores"

    def __init__(self, specs: Sequence[str], options: ReplicaOptions) -> None:
        if options.kafka_only():
            raise ReplogError("--metadata, --partition-state, --running, --min-insync-replicas, --elr and "
                              "--cleanup-policy are for Kafka replicas; these are RocketMQ stores")
        super().__init__(specs, options)

    def evidence_roots(self) -> list[Path]:
        return [Path(parse_named(s)[1]) for s in self.specs]

    def _replay(self, progress: Progress | None) -> HAReplayResult:
        from replog.recovery.rocketmq.ha import replay_paths
        return replay_paths(self.specs, self.options.leader, self.options.protocol, progress,
                            self.options.broker_version)

    def result_roots(self, result: HAReplayResult) -> list[Path]:
        return [Path(r.model.path) for r in result.replicas]

    def _impact_when_held(self, result: HAReplayResult) -> Any:
        """replay and repair carry the impact (as `impact` does) when a store holds its consumer offsets, or
        a transaction or POP checkpoint it affects."""
        from replog.recovery.rocketmq.impact import analyze_rocketmq_impact

        impact = analyze_rocketmq_impact(result)
        return impact if impact.sources or impact.transactions or impact.pop else None

    def replay(self, export: Callable[[HAReplayResult], list[str]] | None = None) -> Replayed[HAReplayResult]:
        """The HA replay and its impact when the stores hold one (`export` is Kafka's: the lost messages are
        listed in the document instead)."""
        result = self.load()
        return Replayed(result, self._impact_when_held(result), self.result_roots(result))

    def impact(self) -> Impacted[HAReplayResult]:
        from replog.recovery.rocketmq.impact import analyze_rocketmq_impact

        result = self.load()
        return Impacted(result, analyze_rocketmq_impact(result), self.result_roots(result))

    def repair(self, out: PathLike, force: bool = False) -> Repaired[HAReplayResult]:
        from replog.recovery.rocketmq.repair import repair_stores

        result = self.load()
        impact = self._impact_when_held(result)
        written = repair_stores(result, out, force=force)
        return Repaired(result, impact, self.result_roots(result), Path(out), written,
                        [r.identical_to_master for r in written])

    def what_if(self, progress: Progress | None = None) -> Compared[HAReplayResult]:
        from replog.recovery.rocketmq.impact import analyze_rocketmq_impact
        from replog.recovery.rocketmq.what_if import what_if_paths

        if self.options.offsets:
            raise ReplogError("--offsets is for Kafka replicas; RocketMQ stores hold their own offsets")
        ranked = what_if_paths(self.specs, self.options.protocol, progress, self.options.broker_version)
        best = ranked.recommended.result
        return Compared(best, ranked, lambda: analyze_rocketmq_impact(best), self.result_roots(best))


def is_rocketmq(specs: Sequence[str]) -> bool:
    """The inputs are RocketMQ stores (the first one says: a mix fails as the other system's usage error)."""
    from replog.formats.discovery import is_rocketmq_store
    return bool(specs) and is_rocketmq_store(parse_named(specs[0])[1])


def open_replicas(specs: Sequence[str], options: ReplicaOptions = ReplicaOptions()) -> KafkaReplicas | RocketStores:
    """The replicas named `[NAME=]PATH` by `specs`, Kafka partition dirs or RocketMQ stores as the first one is;
    an option the system does not take is a usage error (`ReplogError`), raised before anything is read."""
    return RocketStores(specs, options) if is_rocketmq(specs) else KafkaReplicas(specs, options)
