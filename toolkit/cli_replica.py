"""The options every replica command (replay, repair, impact) takes, declared once: their typer aliases and
`replica_options`, which adds them to a command's signature in the order its `--help` lists them and hands the
command one `ReplicaOptions` instead of eleven parameters."""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from replog.recovery.replicas import ReplicaOptions

ReplicaArgs = Annotated[list[str], typer.Argument(
    metavar="[NAME=]PATH...", help="[NAME=]PATH of each replica (partition dirs or RocketMQ stores); NAMEs unique")]
BrokerVersionOpt = Annotated[str | None, typer.Option(
    "--broker-version", metavar="VERSION",
    help="RocketMQ: the broker's version, for its recovery rule (e.g. 4.9.8, 5.3.1, 5.3.3); default: the newest")]
ProtocolOpt = Annotated[str | None, typer.Option(
    "--protocol", metavar="PROTOCOL",
    help="Kafka: epoch (default) | hw;  RocketMQ: classic (default) | autoswitch | dledger (DLedger stores' default)")]
LeaderOpt = Annotated[str | None, typer.Option(
    metavar="NAME", help="replica to follow; default: the one the controller would elect")]
MetadataOpt = Annotated[Path | None, typer.Option(
    "--metadata", metavar="DIR",
    help="Kafka: the KRaft __cluster_metadata-0 dir (or a log dir holding it): the controller's elections")]
PartitionStateOpt = Annotated[Path | None, typer.Option(
    "--partition-state", metavar="FILE",
    help="Kafka (ZooKeeper): the partition state JSON {controller_epoch, leader, leader_epoch, isr}")]
RunningOpt = Annotated[list[str] | None, typer.Option(
    "--running", metavar="NAME",
    help="Kafka: a replica whose broker kept running (not restarted); repeatable. Its fetcher restarts, and "
    "truncates, only if its leader epoch changed. Default: every replica restarts from its copy on disk")]
MinIsrOpt = Annotated[int | None, typer.Option(
    "--min-insync-replicas", metavar="N", min=1,
    help="Kafka: the topic's min.insync.replicas where the metadata log does not say (else Kafka's default 1): "
    "the leader's high watermark stops while the ISR is smaller (3.7+)")]
ElrOpt = Annotated[bool | None, typer.Option(
    "--elr/--no-elr",
    help="Kafka: eligible leader replicas on or off where no metadata log says (default off): with ELR, a broker "
    "restarting without .kafka_cleanshutdown leaves the ISR and ELR")]
CleanupPolicyOpt = Annotated[str | None, typer.Option(
    "--cleanup-policy", metavar="compact|delete",
    help="Kafka: the topic's cleanup.policy (default: from --metadata when it records one). With compact, "
    "replicas are compared by the records the log cleaner keeps below their cleaner points")]
RemoteStorageOpt = Annotated[bool | None, typer.Option(
    "--remote-storage/--no-remote-storage",
    help="Kafka: the topic's remote.storage.enable (tiered storage, KIP-405) where no metadata log says (else "
    "Kafka's default, off). With it the log start stays the checkpointed one, below the first local segment: "
    "the records between are in remote storage, not lost")]
OffsetsOpt = Annotated[list[Path] | None, typer.Option(
    "--offsets", metavar="LOGDIR", exists=True, file_okay=False,
    help="a broker log dir holding __consumer_offsets (and __transaction_state); repeatable. The replicas' "
    "own log dirs are always searched")]

# Each ReplicaOptions field a replica command takes on its command line, with its alias; all default to None.
_SHARED: dict[str, object] = {   # typing annotations (Annotated aliases)
    "leader": LeaderOpt, "protocol": ProtocolOpt, "metadata": MetadataOpt, "partition_state": PartitionStateOpt,
    "broker_version": BrokerVersionOpt, "offsets": OffsetsOpt, "running": RunningOpt,
    "min_insync_replicas": MinIsrOpt, "elr": ElrOpt, "cleanup_policy": CleanupPolicyOpt,
    "remote_storage": RemoteStorageOpt,
}

Command = Callable[..., None]


def replica_options(order: str) -> Callable[[Command], Command]:
    """Give a command, whose own signature takes `options: ReplicaOptions`, the shared options instead.

    `order` names every parameter of the command line, space separated, in the order `--help` lists them (the
    commands list them differently, and their help is part of the CLI surface); typer reads the signature built
    here, and the command receives the shared values gathered into one ReplicaOptions.
    """
    names = order.split()

    def decorate(fn: Command) -> Command:
        own = {n: p.replace(annotation=_evaluated(p.annotation, fn))
               for n, p in inspect.signature(fn).parameters.items() if n != "options"}
        shared = {n: inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, annotation=a, default=None)
                  for n, a in _SHARED.items()}
        params = {**own, **shared}
        if sorted(names) != sorted(params):
            raise TypeError(f"{fn.__name__}: the order {names} does not name its parameters {sorted(params)}")

        @functools.wraps(fn)
        def command(**kwargs: Any) -> None:
            from replog.recovery.replicas import ReplicaOptions
            given = {n: kwargs.pop(n) for n in _SHARED}
            fn(options=ReplicaOptions(**{**given, "running": given["running"] or (),
                                         "offsets": given["offsets"] or ()}), **kwargs)

        command.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [params[n].replace(kind=inspect.Parameter.KEYWORD_ONLY) for n in names])
        command.__annotations__ = {n: params[n].annotation for n in names}
        return command
    return decorate


def _evaluated(annotation: Any, fn: Command) -> Any:
    """A parameter's annotation as typer needs it: the object (`options`' ReplicaOptions, imported only when
    type checking so that `--help` stays fast, is never evaluated)."""
    return eval(annotation, fn.__globals__) if isinstance(annotation, str) else annotation  # noqa: S307


def replica_reads(replicas: list[str], options: ReplicaOptions) -> list[str]:
    """What a replica command reads: the replicas and the inputs given by option (confined like the replicas)."""
    given = [options.metadata, options.partition_state, *options.offsets]
    return [*replicas, *(str(p) for p in given if p is not None)]
