"""The document types (`toolkit.documents`) against the documents the commands print.

The renderers read the JSON documents through these declarations, so a declaration that names a member the
JSON lacks, or gives it another type, would let mypy pass code that fails at run time. Each command of the
contract is run on the sample fleet (and on the impact fleet, whose groups, producers and transactions are
all affected) and its document checked member by member against its declaration.
"""
from __future__ import annotations

import json
import types
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, NotRequired, TypedDict

import pytest

from replog.toolkit import documents as d
from tests.recovery.kafka.test_impact import build_impact_fleet
from tests.recovery.rocketmq.test_dledger_replay import group as dledger_group
from tests.recovery.rocketmq.test_timers import timer_store
from tests.toolkit.test_cli import run_replog


def mismatches(kind: Any, value: Any, where: str = "$") -> Iterator[str]:
    """Where `value` does not have the type `kind` (a TypedDict, a union, list/dict, a plain type, a fleet
    table's `Annotated` column type)."""
    origin = typing.get_origin(kind)
    if kind is Any or kind is object:
        return
    if origin is Annotated:
        yield from mismatches(typing.get_args(kind)[0], value, where)
        return
    if isinstance(kind, type) and typing.is_typeddict(kind):
        if not isinstance(value, dict):
            yield f"{where}: {type(value).__name__}, not an object"
            return
        for key, hint in typing.get_type_hints(kind, include_extras=True).items():
            optional = typing.get_origin(hint) is NotRequired or not kind.__total__  # type: ignore[attr-defined]
            hint = typing.get_args(hint)[0] if typing.get_origin(hint) is NotRequired else hint
            if key in value:
                yield from mismatches(hint, value[key], f"{where}.{key}")
            elif not optional:
                yield f"{where}.{key}: missing"
    elif origin in (typing.Union, types.UnionType):
        options = typing.get_args(kind)
        if all(any(mismatches(o, value, where)) for o in options):
            yield f"{where}: {value!r:.60} is none of {kind}"
    elif origin is list:
        if not isinstance(value, list):
            yield f"{where}: {type(value).__name__}, not a list"
            return
        for i, item in enumerate(value):
            yield from mismatches(typing.get_args(kind)[0], item, f"{where}[{i}]")
    elif origin in (dict, Mapping):
        if not isinstance(value, dict):
            yield f"{where}: {type(value).__name__}, not an object"
            return
        for key, item in value.items():
            yield from mismatches(typing.get_args(kind)[1], item, f"{where}.{key}")
    elif kind is type(None):
        if value is not None:
            yield f"{where}: {value!r:.60}, not null"
    elif kind is int and isinstance(value, bool) or not isinstance(value, kind):
        yield f"{where}: {value!r:.60} is not {kind.__name__}"


class _Probe(TypedDict):
    n: int
    rows: list[d.Range]
    maybe: NotRequired[str | None]


def test_the_checker_finds_a_missing_member_a_wrong_type_and_a_bad_row() -> None:
    assert list(mismatches(_Probe, {"n": 1, "rows": [{"first_offset": 1, "last_offset": 2}]})) == []
    found = list(mismatches(_Probe, {"n": True, "rows": [{"first_offset": "1"}], "maybe": 3}))
    assert found == ["$.n: True is not int", "$.rows[0].first_offset: '1' is not int",
                     "$.rows[0].last_offset: missing", "$.maybe: 3 is none of str | None"], found


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("documents")
    proc = run_replog("samples", "generate", str(root / "samples"))
    assert proc.returncode == 0, f"samples generate failed: {proc.stderr}"
    build_impact_fleet(root / "impact")
    (root / "timers").mkdir()
    timer_store(root / "timers")
    dledger_group(root / "dledger")
    return root


DLEDGER = ("n0", "n1", "n2")   # the DLedger peers `dledger_group` writes


def _kafka(fleet: Path, partition: str) -> list[str]:
    return [f"b{i}={fleet / 'samples' / 'kafka' / f'broker-{i}' / partition}" for i in (1, 2, 3)]


def _rocketmq(fleet: Path) -> list[str]:
    stores = fleet / "samples" / "rocketmq"
    return [f"master={stores / 'master'}", f"slave={stores / 'slave'}", "--protocol", "autoswitch"]


def _impact(fleet: Path) -> list[str]:
    return [f"O={fleet / 'impact' / 'O' / 't-0'}", f"L={fleet / 'impact' / 'L' / 't-0'}",
            "--offsets", str(fleet / "impact" / "coordinator")]


CASES: list[tuple[str, Any, Any]] = [
    ("samples", d.SamplesDoc, lambda f: ["samples", "generate", str(f / "samples-again")]),
    ("ls kafka", list[d.LsRow], lambda f: ["ls", str(f / "samples" / "kafka" / "broker-2")]),
    ("ls rocketmq", d.StoreLs, lambda f: ["ls", str(f / "samples" / "rocketmq" / "master")]),
    ("doctor kafka", d.DoctorReport, lambda f: ["doctor", str(f / "samples" / "kafka" / "broker-3")]),
    ("doctor rocketmq", d.DoctorReport, lambda f: ["doctor", str(f / "samples" / "rocketmq" / "damaged")]),
    ("recover", d.RecoverDoc, lambda f: ["recover", str(f / "samples" / "kafka" / "broker-3" / "orders-1"),
                                         "--out", str(f / "recovered")]),
    ("replay kafka", d.ReplayDoc, lambda f: ["replay", *_kafka(f, "orders-2")]),
    ("replay kafka hw", d.ReplayDoc, lambda f: ["replay", *_kafka(f, "orders-2"), "--protocol", "hw"]),
    ("repair kafka", d.ReplayDoc, lambda f: ["repair", *_kafka(f, "orders-2"), "--out", str(f / "repaired")]),
    ("what-if kafka", d.WhatIfDoc, lambda f: ["replay", *_kafka(f, "orders-2"), "--what-if"]),
    ("impact kafka", d.KafkaImpact, lambda f: ["impact", *_impact(f)]),
    ("replay with impact", d.ReplayDoc, lambda f: ["replay", *_impact(f)]),
    ("replay rocketmq", d.ReplayDoc, lambda f: ["replay", *_rocketmq(f)]),
    ("replay rocketmq stores", d.StoreReplay, lambda f: ["replay", *_rocketmq(f)]),
    ("ls rocketmq timers", d.StoreLs, lambda f: ["ls", str(f / "timers")]),
    ("ls rocketmq dledger", d.StoreLs, lambda f: ["ls", str(f / "dledger" / "n0")]),
    ("replay rocketmq dledger", d.StoreReplay, lambda f: ["replay", *[f"{n}={f / 'dledger' / n}" for n in DLEDGER]]),
    ("impact rocketmq", d.RocketImpact, lambda f: ["impact", *_rocketmq(f)]),
    ("what-if rocketmq", d.WhatIfDoc, lambda f: ["replay", *_rocketmq(f), "--what-if"]),
]


@pytest.mark.parametrize(("name", "kind", "argv"), CASES, ids=[c[0] for c in CASES])
def test_the_printed_document_has_the_declared_members(fleet: Path, name: str, kind: Any, argv: Any) -> None:
    proc = run_replog(*argv(fleet), "--format", "json")
    assert proc.returncode in (0, 1), f"{name}: exit {proc.returncode}: {proc.stderr}"
    found = list(mismatches(kind, json.loads(proc.stdout)))
    assert found == [], f"{name}: the document differs from its declaration: {found[:10]}"


DUMPED = {"file": d.FileEntry, "batch": d.BatchEntry, "record": d.RecordEntry, "finding": d.FindingEntry}


@pytest.mark.parametrize(("name", "argv"), [
    ("damaged partition", ["broker-3/orders-1", "--deep", "--print-data"]),
    ("consumer offsets", ["broker-1/__consumer_offsets-0", "--offsets-decoder"]),
    ("undecodable values", ["broker-1/__consumer_offsets-0", "--deep", "--print-data"]),
])
def test_the_dump_entries_have_the_declared_members(fleet: Path, name: str, argv: list[str]) -> None:
    """Each `dump` entry of a kind the terminal reads member by member has its declaration's members."""
    proc = run_replog("dump", str(fleet / "samples" / "kafka" / argv[0]), *argv[1:], "--format", "jsonl")
    assert proc.returncode in (0, 1), f"{name}: exit {proc.returncode}: {proc.stderr}"
    entries = [json.loads(line) for line in proc.stdout.splitlines()]
    kinds = {e["kind"] for e in entries}
    assert {"file", "batch", "record"} <= kinds, f"{name}: the dump has no {({'file', 'batch', 'record'} - kinds)}"
    found = [m for e in entries for m in mismatches(DUMPED.get(e["kind"], d.DumpEntry), e, f"${e['kind']}")]
    assert found == [], f"{name}: entries differ from their declarations: {found[:10]}"
