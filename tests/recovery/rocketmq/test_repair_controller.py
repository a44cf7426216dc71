"""`repair` of controller-mode stores says what its output assumes: the controller's store copied with the group.
A kept `brokerIdentity` (the broker id the old controller granted) cannot register with a new controller
(ReplicasInfoManager#registerBroker; seen in the lab, tests/brokers/test_rocketmq_lab5.py)."""
from __future__ import annotations

from pathlib import Path

from replog.recovery.rocketmq.ha import AUTOSWITCH, replay_paths
from replog.recovery.rocketmq.repair import repair_stores
from tests.recovery.rocketmq.stores import spec
from tests.recovery.rocketmq.test_ha import other, pair, specs_of


def test_controller_mode_output_names_the_controller_it_needs(tmp_path: Path) -> None:
    m, s, _ = pair(tmp_path, [other(i) for i in range(20, 25)], [spec(i) for i in range(20, 30)], epochs=True)
    for bid, built in ((1, m), (2, s)):
        (built.root / "brokerIdentity").write_text(f"LabCluster#broker-a#{bid}")
    repaired = {r.name: r for r in repair_stores(replay_paths(specs_of(m, s), protocol=AUTOSWITCH), tmp_path / "out")}
    for name, r in repaired.items():
        assert (Path(r.path) / "brokerIdentity").is_file(), f"premise: repair keeps {name}'s brokerIdentity"
        assert len(r.assumes) == 1, f"{name}: assumes {r.assumes}"
        assert "controller" in r.assumes[0] and "brokerIdentity" in r.assumes[0], f"{name}: {r.assumes[0]}"
        assert r.to_dict()["assumes"] == r.assumes, f"{name}: the JSON does not carry `assumes`"


def test_no_assumption_without_a_broker_identity(tmp_path: Path) -> None:
    m, s, _ = pair(tmp_path, [], [spec(i) for i in range(20, 25)])
    repaired = repair_stores(replay_paths(specs_of(m, s)), tmp_path / "out")
    assert [r.assumes for r in repaired] == [[], []], f"assumes {[r.assumes for r in repaired]}"
