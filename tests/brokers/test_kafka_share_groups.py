"""Share groups (KIP-932) in `impact` against a real 4.4.0 cluster (share.version on by default at 4.4.0): an unclean
election truncates records a share group acknowledged, below its start offset. The brokers are the oracle: what the
group's `KafkaShareConsumer` is delivered afterwards, `kafka-share-groups --describe --offsets`, and the new leader's
log line when the share partition cannot move its start offset.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.brokers import dumplog
from tests.brokers.scenarios import TOPIC
from tests.brokers.scenarios_share import GROUP, acknowledged_then_truncated, share_spec, start_offset
from tests.brokers.test_dump_log_differential import REPLOG
from tests.brokers.test_kafka_replay import replog_json, run_scenario

pytestmark = pytest.mark.brokers


def test_a_truncation_below_the_start_offset_skips_the_records_written_there(tmp_path: Path) -> None:
    out = run_scenario(share_spec("4.4.0"), tmp_path, acknowledged_then_truncated)
    assert out.first_delivered == list(range(20)), f"premise: the group was delivered 0..19: {out.first_delivered}"
    specs = [f"b{n}={out.copy / f'b{n}' / f'{TOPIC}-0'}" for n in (2, 3, 4)]
    predicted = replog_json("impact", *specs, "--metadata", str(out.copy / "c1" / "__cluster_metadata-0"))
    groups = {g["group"]: g for g in predicted["share_groups"]}
    assert GROUP in groups, f"the share group is read from __share_group_state: {predicted['share_state_sources']}"
    g = groups[GROUP]
    assert g["next_fetch_offset"] == 20, f"past the acknowledged 0..19 (the persisted start offset may lag): {g}"
    assert g["classification"] == "start_beyond_log_end", g
    assert g["finished_records_lost"]["records"] == 10, f"10..19 acknowledged and lost: {g['finished_records_lost']}"
    skipped = range(g["never_delivered"]["first_offset"], g["never_delivered"]["last_offset"] + 1)
    assert list(skipped) == list(range(10, 20)), f"offsets written after the election the group never sees: {g}"
    assert not set(out.delivered_after) & set(skipped), \
        f"the group is delivered none of 10..19 written after the election: {out.delivered_after}"
    assert out.delivered_after == [o for o in out.produced_after if o >= 20][:len(out.delivered_after)], \
        f"delivery resumes at the start offset: delivered {out.delivered_after}, produced {out.produced_after}"
    assert out.delivered_after, "premise: records past the start offset are delivered"
    described = start_offset(out.describe)
    assert described is not None and described >= 20, f"kafka-share-groups --offsets:\n{out.describe}"
    assert "is not greater than the start offset" in out.leader_output, \
        "the share partition leader keeps its start offset (SharePartition.updateCacheAndOffsets)"
    _group_records_decode_as_kafka_dump_log_does(out.copy)


def _group_records_decode_as_kafka_dump_log_does(copy: Path) -> None:
    """The share group's own `__consumer_offsets` records (types 10-15, KIP-932) and the regex consumer group's
    (3-8, 16) as the real 4.4.0 kafka-dump-log `--offsets-decoder` prints them, line for line against
    `replog dump --format dump-log`."""
    files = sorted(str(p.relative_to(copy)) for p in copy.glob("b*/__consumer_offsets-*/*.log") if p.stat().st_size)
    assert files, "premise: the group coordinator wrote __consumer_offsets"
    cases = dumplog.compare("4.4.0", copy, files, ("--offsets-decoder",), "offsets", REPLOG)
    share_lines = [line for c in cases for line in c.real or [] if re.search(r'key: {"type":"1[0-5]"', line)]
    assert share_lines, f"premise: kafka-dump-log printed share group records: {[c.real for c in cases][:2]}"
    regex_lines = [line for c in cases for line in c.real or [] if 'key: {"type":"16"' in line]
    assert regex_lines, "premise: kafka-dump-log printed the regex group's ConsumerGroupRegularExpression record"
    streams_key = re.compile(r'key: \{"type":"(1[79]|2[0-3])"')
    streams_types = {m for c in cases for line in c.real or [] for m in streams_key.findall(line)}
    assert streams_types >= {"17", "19", "23"}, f"premise: the Streams group's records were printed: {streams_types}"
    differ = [c for c in cases if not c.identical]
    assert not differ, "\n".join(f"{c.file}\n{c.diff()}" for c in differ[:4])
