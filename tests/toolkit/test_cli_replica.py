"""replica_options: the shared replica options reach the command as one ReplicaOptions, in --help's order."""
from __future__ import annotations

import inspect

import pytest

from replog.recovery.replicas import ReplicaOptions
from replog.toolkit.cli_replica import ReplicaArgs, replica_options, replica_reads

_ORDER = ("replicas leader protocol metadata partition_state broker_version offsets running min_insync_replicas elr "
          "cleanup_policy remote_storage")


def test_the_signature_follows_the_order_and_the_command_gets_one_options() -> None:
    seen: list[ReplicaOptions] = []

    @replica_options(_ORDER.replace("replicas leader", "leader replicas"))
    def command(replicas: ReplicaArgs, options: ReplicaOptions) -> None:
        seen.append(options)

    assert list(inspect.signature(command).parameters)[:2] == ["leader", "replicas"], "not in the order given"
    command(replicas=["a"], leader="a", protocol=None, metadata=None, partition_state=None, broker_version=None,
            offsets=None, running=None, min_insync_replicas=2, elr=None, cleanup_policy=None, remote_storage=None)
    assert seen == [ReplicaOptions(leader="a", min_insync_replicas=2)], "options not gathered, or lists not ()"


def test_an_order_that_misses_a_parameter_is_refused() -> None:
    with pytest.raises(TypeError, match="does not name"):
        @replica_options(_ORDER.replace(" elr", ""))
        def command(replicas: ReplicaArgs, options: ReplicaOptions) -> None: ...


def test_the_reads_are_the_replicas_and_the_inputs_given_by_option() -> None:
    options = ReplicaOptions(metadata="m", offsets=["o1", "o2"])
    assert replica_reads(["b1=x"], options) == ["b1=x", "m", "o1", "o2"], "an input given by option not confined"
