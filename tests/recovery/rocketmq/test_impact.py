"""RocketMQ impact: consumer offsets against the queues after an auto-switch replay, and the metadata a
slave's sync would change. Config files are written here as fastjson text (bare integer keys)."""
from __future__ import annotations

from pathlib import Path

from replog.recovery.rocketmq.ha import AUTOSWITCH, replay_paths
from replog.recovery.rocketmq.impact import analyze_rocketmq_impact
from tests.recovery.rocketmq.stores import spec
from tests.recovery.rocketmq.test_ha import COMMON, other, pair, specs_of


def _write(root: Path, name: str, text: str) -> None:
    (root / "config").mkdir(exist_ok=True)
    (root / "config" / name).write_text(text)


def test_groups_ahead_of_their_queue_and_metadata_differences(tmp_path: Path) -> None:
    # 20 common messages (queue offsets 0..9 on queues 0 and 1); the master adds 2 in epoch 2 (10 on each
    # queue), the slave had added 6 in epoch 1 (10..12 on each queue), which it loses.
    m, s, _ = pair(tmp_path, [other(i) for i in range(len(COMMON), len(COMMON) + 2)],
                   [spec(i) for i in range(len(COMMON), len(COMMON) + 6)], epochs=True)
    _write(s.root, "consumerOffset.json", '{"offsetTable":{"orders@billing":{0:13,1:12},"orders@audit":{0:8,1:9},'
                                          '"orders@late":{0:11}}}')
    _write(m.root, "consumerOffset.json", '{"offsetTable":{"orders@billing":{0:11,1:11},"orders@audit":{0:8,1:9}}}')
    _write(m.root, "topics.json", '{"topicConfigTable":{"orders":{"topicName":"orders","readQueueNums":2},'
                                  '"payments":{"topicName":"payments"}},"dataVersion":{"counter":2}}')
    _write(s.root, "topics.json", '{"topicConfigTable":{"orders":{"topicName":"orders","readQueueNums":2},'
                                  '"legacy":{"topicName":"legacy"}},"dataVersion":{"counter":1}}')
    _write(m.root, "subscriptionGroup.json", '{"subscriptionGroupTable":{"billing":{"groupName":"billing"}}}')
    _write(s.root, "subscriptionGroup.json", "")      # empty: the broker falls back to the .bak
    _write(s.root, "subscriptionGroup.json.bak", '{"subscriptionGroupTable":{"billing":{"groupName":"billing"},'
                                                 '"old":{"groupName":"old"}}}')
    _write(m.root, "delayOffset.json", '{"offsetTable":{1:5,2:3}}')
    _write(s.root, "delayOffset.json", '{"offsetTable":{1:4}}')
    impact = analyze_rocketmq_impact(replay_paths(specs_of(m, s), protocol=AUTOSWITCH)).to_dict()
    rows = {(g["store"], g["group"], g["queue_id"]): g for g in impact["consumer_groups"]}
    billing0 = rows[("slave", "billing", 0)]   # past the max 11: moved back to 11, 10 of the new history skipped
    assert (billing0["classification"], billing0["max_offset_before"], billing0["max_offset_after"]) == \
        ("ahead_of_queue", 13, 11)
    assert (billing0["messages_consumed_lost"], billing0["messages_skipped"], billing0["first_lost_queue_offset"]) \
        == (3, 1, 10)
    assert rows[("slave", "billing", 1)]["classification"] == "ahead_of_queue"
    late = rows[("slave", "late", 0)]          # within the queue, above the first lost offset: nothing moves it
    assert (late["classification"], late["messages_consumed_lost"], late["messages_skipped"]) == ("consumed_lost", 1, 1)
    calm = [(st, grp, q) for st in ("master", "slave") for grp in ("audit", "billing") for q in (0, 1)
            if st == "master" or grp == "audit"]
    assert {k: rows[k]["classification"] for k in calm} == dict.fromkeys(calm, "unaffected")
    diffs = {(d["file"], d["key"]): d["difference"] for d in impact["metadata_differences"]}
    assert set(diffs) == {("topics.json", "legacy"), ("topics.json", "payments"), ("subscriptionGroup.json", "old"),
                          ("consumerOffset.json", "orders@billing"), ("consumerOffset.json", "orders@late"),
                          ("delayOffset.json", "1"), ("delayOffset.json", "2")}
    assert "deletes it" in diffs[("topics.json", "legacy")] and "keeps it" in diffs[("consumerOffset.json",
                                                                                          "orders@late")]
    assert impact["summary"]["groups_affected"] == 3 and impact["summary"]["messages_consumed_lost"] == 3 + 2 + 1
