"""Replicas of a compacted topic cleaned at different points: compared by the records the cleaner keeps
below the cleaner points (`recovery/kafka/compaction.py`), batch by batch above them."""
from __future__ import annotations

from pathlib import Path

import pytest

from replog.formats.errors import ReplogError
from replog.formats.kafka import batch as v2
from replog.recovery.kafka.compaction import cleaner_point, is_compacted
from replog.recovery.kafka.profile import read_profile, stated
from replog.recovery.kafka.repair import repair
from replog.recovery.kafka.replay import compare_replicas, replay_paths
from replog.recovery.kafka.replica import load_replica
from tests.recovery.kafka import independent_metadata as md
from tests.recovery.kafka.compacted import TS, clean, compacted_replica, history, raw_batches

TID = "B3_HiNPgSQ6oxG9ZZ6ED5A"
RAW = history(5)   # 20 records, offsets 0..19, keys k0..k3, one tombstone per round


def replicas(tmp_path: Path, **cleaned: int | None) -> dict[str, str]:
    """Replicas of RAW named by `cleaned` (name -> cleaner point, None: never cleaned), every one whole."""
    return {name: str(compacted_replica(tmp_path, name, clean(RAW, end or 0), hw=20, cleaner=end))
            for name, end in cleaned.items()}


def replay(paths: dict[str, str], cleanup_policy: str | None = None,
           **options: object) -> dict[str, dict[str, object]]:
    """replay_paths with `--cleanup-policy` stated as the CLI states it (`profile.stated`)."""
    assumed = stated(cleanup_policy=cleanup_policy)
    result = replay_paths([f"{n}={p}" for n, p in paths.items()], assumed=assumed,   # type: ignore[arg-type]
                          **options)
    return {r["name"]: r for r in result.to_dict()["replicas"]}


def test_replicas_cleaned_at_different_points_do_not_diverge(tmp_path: Path) -> None:
    """The issue's case: b2 cleaned to 16, b3 to 8, b4 never. Their batches differ from offset 0 on; the
    records the cleaner keeps agree: no divergence, a compaction difference up to the higher point."""
    got = replay(replicas(tmp_path, b2=16, b3=8, b4=None), leader="b2")
    assert {n: r["diverged_at"] for n, r in got.items()} == {"b2": None, "b3": None, "b4": None}, "diverged_at"
    assert got["b3"]["compaction_difference"] == {"first_offset": 4, "up_to": 16}, "b3 (first batch at 4)"
    assert got["b4"]["compaction_difference"] == {"first_offset": 0, "up_to": 16}, "b4's compaction difference"
    assert got["b2"]["compaction_difference"] is None, "the leader against itself"
    assert {n: r["cleaner_offset"] for n, r in got.items()} == {"b2": 16, "b3": 8, "b4": None}, "cleaner_offset"
    assert all(r["lost"]["records"] == 0 for r in got.values()), "nothing lost"


def test_expired_tombstones_removed_by_one_cleaner_only(tmp_path: Path) -> None:
    """b2's cleaner also dropped the tombstones whose delete horizon passed; b3 kept them: no divergence."""
    b2 = compacted_replica(tmp_path, "b2", clean(RAW, 16, tombstones_expired=True), hw=20, cleaner=16)
    b3 = compacted_replica(tmp_path, "b3", clean(RAW, 12), hw=20, cleaner=12)
    got = replay({"b2": str(b2), "b3": str(b3)}, leader="b2")
    assert got["b3"]["diverged_at"] is None, "diverged_at"
    assert got["b3"]["compaction_difference"] is not None, "compaction difference"


def test_a_replica_behind_the_others_cleaner_point(tmp_path: Path) -> None:
    """b3 ends at 10 (raw), b2 cleaned to 16: b2 dropped records that b3 holds because of later records b3
    never got; b3 is behind, not diverged."""
    b2 = compacted_replica(tmp_path, "b2", clean(RAW, 16), hw=20, cleaner=16)
    b3 = compacted_replica(tmp_path, "b3", raw_batches(RAW[:10]), hw=10)
    got = replay({"b2": str(b2), "b3": str(b3)}, leader="b2")
    assert got["b3"]["diverged_at"] is None, "diverged_at"
    assert got["b3"]["truncated_to"] is None and got["b3"]["log_end_offset_after"] == 20, "b3 fetches the rest"


def test_a_different_record_that_the_cleaner_keeps_is_a_divergence(tmp_path: Path) -> None:
    """b3 holds another value at offset 13 (the latest of k1 below 16, so every cleaner keeps it)."""
    other = [(o, k, b"other" if o == 13 else v, e) for o, k, v, e in RAW]
    b2 = compacted_replica(tmp_path, "b2", clean(RAW, 16), hw=20, cleaner=16)
    b3 = compacted_replica(tmp_path, "b3", clean(other, 8), hw=20, cleaner=8)
    got = replay({"b2": str(b2), "b3": str(b3)}, leader="b2")
    assert got["b3"]["diverged_at"] == 13, "diverged_at"


def test_a_record_missing_where_no_cleaner_could_remove_it(tmp_path: Path) -> None:
    """b3 (cleaned to 8) lacks offset 13, the latest of k1 below 16 that b2 holds, above b3's own cleaner
    point: no cleaner removed it. (A missing 9 would go unseen: b2's cleaner dropped 9 too, for 13.)"""
    b2 = compacted_replica(tmp_path, "b2", clean(RAW, 16), hw=20, cleaner=16)
    holed = [b for b in clean(RAW, 8) if v2.read_header(b, 0).base_offset != 13]
    b3 = compacted_replica(tmp_path, "b3", holed, hw=20, cleaner=8)
    got = replay({"b2": str(b2), "b3": str(b3)}, leader="b2")
    assert got["b3"]["diverged_at"] == 13, "diverged_at"


def test_a_divergence_above_the_cleaner_points_is_found_there(tmp_path: Path) -> None:
    """b3's tail from 18 differs (another leader's writes); below, only compaction differs."""
    other = [(o, k, v if o < 18 else b"x", e if o < 18 else 1) for o, k, v, e in RAW]
    b2 = compacted_replica(tmp_path, "b2", clean(RAW, 16), hw=20, cleaner=16)
    b3 = compacted_replica(tmp_path, "b3", clean(other, 8), hw=18, cleaner=8)
    a, b = load_replica(b2, "b2"), load_replica(b3, "b3")
    compared = compare_replicas(b, a)
    assert compared.diverged_at == 18, "diverged_at"
    assert compared.compaction is not None and compared.compaction.up_to == 16, "compaction difference below 16"


def test_the_cleanup_policy_decides_where_records_are_compared(tmp_path: Path) -> None:
    """delete: no cleaner point counts (batches compared from 0). Without a cleaner checkpoint entry the
    batches' own signs of cleaning (offset gaps, delete horizons) bound the cleaned region where a cleaner
    is known at work (the log dir has a cleaner checkpoint, or the topic compacts); and with compact, a
    replica whose log dir has no cleaner checkpoint may be cleaned up to its active segment."""
    paths = replicas(tmp_path, b2=16, b4=None)
    assert replay(paths, leader="b2", cleanup_policy="delete")["b4"]["diverged_at"] == 0, "delete"
    # no cleaner checkpoint anywhere; segments of ~5 batches
    bare = {n: str(compacted_replica(tmp_path / "bare", n, clean(RAW, end), hw=20, segment_bytes=400))
            for n, end in (("b2", 16), ("b4", 0))}
    signs = load_replica(bare["b2"])
    assert (signs.cleaner_offset, signs.cleaning_signs_end) == (None, 16), "cleaned region from the batches"
    assert replay(bare, leader="b2")["b4"]["diverged_at"] == 0, "no cleaner known at work: batches"
    assert replay(bare, leader="b2", cleanup_policy="compact")["b4"]["diverged_at"] is None, "compact"
    # b2's broker runs a cleaner (its log dir has the checkpoint, without this partition): its signs count
    (Path(bare["b2"]).parent / "cleaner-offset-checkpoint").write_bytes(b"0\n0\n")
    assert replay(bare, leader="b2")["b4"]["diverged_at"] is None, "the signs of cleaning where a cleaner runs"
    with pytest.raises(ReplogError, match="cleanup policy"):
        replay(bare, cleanup_policy="lru")


def test_signs_of_cleaning_in_the_batches(tmp_path: Path) -> None:
    """A raw log shows none; a cleaned one shows where its cleaned batches end: an offset gap, a batch
    with fewer records than its offsets span, a delete horizon; a gap from the first segment's base too."""
    from replog.recovery.kafka.compaction import CleaningSigns
    raw = load_replica(compacted_replica(tmp_path, "raw", clean(RAW, 0), hw=20))
    assert raw.cleaning_signs_end is None, "a log the cleaner never touched"
    thinned = [v2.Record(0, TS, b"a", b"1"), v2.Record(2, TS, b"b", b"2")]
    cases = {"thinned batch": ([v2.build_batch(thinned, base_offset=0), *clean(RAW, 0)[3:]], 3),
             "delete horizon": ([v2.build_batch([v2.Record(0, TS, b"a", None)], base_offset=0, delete_horizon=TS),
                                 *clean(RAW, 0)[1:]], 1),
             "gap from the segment base": (clean(RAW, 0)[4:], 5)}
    for label, (batches, want) in cases.items():
        part = compacted_replica(tmp_path, label.replace(" ", "-"), batches, hw=20)
        assert load_replica(part).cleaning_signs_end == want, label
    assert CleaningSigns().end is None, "nothing fed, nothing seen"


def test_cleaner_point_rules() -> None:
    assert [is_compacted(p) for p in ("compact", "delete", "compact,delete", None)] == [True, False, True, None]
    assert cleaner_point(12, True, 30, 0, 40) == 12, "the checkpoint entry"
    assert cleaner_point(12, True, 30, 0, 40, "delete") == 0, "a delete topic is never cleaned"
    assert cleaner_point(None, False, 30, 0, 40, "compact") == 30, "compact, no checkpoint: the active segment"
    assert cleaner_point(None, True, 30, 0, 40, "compact") == 0, "a checkpoint without entry: never cleaned"
    assert cleaner_point(99, True, 30, 5, 40) == 40, "clamped to the log end"
    assert cleaner_point(2, True, 30, 5, 40) == 5, "clamped to the log start"
    assert cleaner_point(12, True, 30, 0, 40, signs_end=20) == 20, "cleaned batches past the checkpoint"
    assert cleaner_point(None, False, 30, 0, 40, signs_end=20) == 0, "signs, but no cleaner known at work"


def test_no_epoch_checkpoint_finding_where_the_cleaner_removed_an_epochs_first_batches(tmp_path: Path) -> None:
    """Epoch 1 starts at 6; b2's cleaner removed every epoch-0 batch and epoch 1's first ones. The broker
    keeps its cache as it was (the cleaner never touches it): no contradiction below the cleaner point.
    An entry the batches do contradict there (epoch 1 carried at 7, the entry says 9) is still found."""
    raw = history(5, epoch_at={6: 1})
    cleaned = clean(raw, 16)
    first_epoch_1 = min(v2.read_header(b, 0).base_offset for b in cleaned
                        if v2.read_header(b, 0).partition_leader_epoch == 1)
    assert first_epoch_1 > 6, "the cleaner removed epoch 1's first batch (the case under test)"
    ok = load_replica(compacted_replica(tmp_path, "ok", cleaned, hw=20, cleaner=16, epochs=[(0, 0), (1, 6)]))
    assert [f.code for f in ok.findings] == [], "no finding where the cleaner removed batches"
    assert [tuple(e) for e in ok.epochs.entries] == [(0, 0), (1, 6)], "the broker's cache, as it is"
    late = first_epoch_1 + 1
    bad = load_replica(compacted_replica(tmp_path, "bad", cleaned, hw=20, cleaner=16, epochs=[(0, 0), (1, late)]))
    assert [f.code for f in bad.findings] == ["KAFKA_EPOCH_CHECKPOINT_MISMATCH"], "epoch carried before its entry"


def test_the_metadata_logs_config_record_gives_the_policy(tmp_path: Path) -> None:
    """ConfigRecord (api key 4): the topic's cleanup.policy, else the cluster-wide log.cleanup.policy."""
    base = [md.topic_record("t", TID), md.partition_record(TID, 0, [2, 3], [2, 3], leader=2, leader_epoch=0)]
    cases = {"topic": ([md.config_record(4, "", "log.cleanup.policy", "delete"),
                        md.config_record(2, "t", "cleanup.policy", "compact")], "compact"),
             "default": ([md.config_record(4, "", "log.cleanup.policy", "compact")], "compact"),
             "deleted": ([md.config_record(2, "t", "cleanup.policy", "compact"),
                          md.config_record(2, "t", "cleanup.policy", None)], None),
             "other topic": ([md.config_record(2, "u", "cleanup.policy", "compact")], None)}
    for label, (configs, want) in cases.items():
        meta = md.write_metadata_log(tmp_path / label.replace(" ", "-"), base + configs)
        got = read_profile(meta).known("t", "cleanup.policy")
        assert got == want, f"{label}: cleanup.policy"
    paths = {n: str(compacted_replica(tmp_path / "bare", n, clean(RAW, end), hw=20, segment_bytes=400))
             for n, end in (("b2", 16), ("b3", 0))}
    for p in paths.values():
        md.write_meta_properties(Path(p).parent, int(Path(p).parent.name[1:]))
    meta = md.write_metadata_log(tmp_path / "compact", base + [md.config_record(2, "t", "cleanup.policy", "compact")])
    result = replay_paths(list(paths.values()), metadata=str(meta))
    assert result.cleanup_policy == "compact", "policy from the metadata log"
    assert [r.diverged_at for r in result.replicas] == [None, None], "compared as compacted"


def test_repair_of_compacted_replicas_verifies(tmp_path: Path) -> None:
    """The repaired replicas hold the leader's records as the cleaner keeps them: a prefix, no problem."""
    paths = replicas(tmp_path / "in", b2=16, b3=8, b4=None)
    result = replay_paths([f"{n}={p}" for n, p in paths.items()], leader="b2")
    report = repair(result, tmp_path / "out")
    assert [r.problems for r in report] == [[], [], []], "repair's own verification"


def test_records_are_read_with_keys_and_tombstones(tmp_path: Path) -> None:
    """A batch of several records with a null key and a tombstone: keyless and tombstones are removable."""
    from replog.recovery.kafka.compaction import records
    recs = [v2.Record(0, TS, b"a", b"1"), v2.Record(1, TS, None, b"2"), v2.Record(2, TS, b"a", None)]
    part = compacted_replica(tmp_path, "x", [v2.build_batch(recs, base_offset=0)], hw=3)
    got = list(records(load_replica(part).log, 0, 3))
    assert [(r.offset, r.key is not None, r.removable) for r in got] == [(0, True, False), (1, False, True),
                                                                        (2, True, True)], "records"
    assert list(records(load_replica(part).log, 1, 2))[0].offset == 1, "a range inside the batch"


def test_undecodable_records_keep_the_batch_pairings_answer(tmp_path: Path) -> None:
    """A batch below the cleaner point whose CRC holds but whose records cannot be decoded: the records
    cannot be compared there, so the batches' first difference stands (a divergence, never a crash)."""
    from tests.recovery.kafka.log_dirs import undecodable_batch
    b2 = compacted_replica(tmp_path, "b2", clean(RAW, 16), hw=20, cleaner=16)
    b3 = compacted_replica(tmp_path, "b3", [undecodable_batch(0), *clean(RAW, 8)[1:]], hw=20, cleaner=8)
    got = replay({"b2": str(b2), "b3": str(b3)}, leader="b2")
    assert got["b3"]["diverged_at"] == 0, "the batch pairing's answer"
    assert got["b3"]["compaction_difference"] is None, "no compaction difference claimed"


def test_a_new_leader_cleaned_past_where_the_old_one_diverged(tmp_path: Path) -> None:
    """b2 led epoch 0 and wrote 12..19 alone; b3, elected in epoch 1 from 12, wrote its own 12..27 and
    cleaned to 24, dropping its early records for later ones of the same keys. b2's records at 12.. are
    missing from b3, and a later record of each key is there: only the epoch caches (b3: epoch 1 from
    12) tell that b3 never held them. The logs part at 12, where the broker truncates b2."""
    old = history(5)
    new = [(o, k, v if o < 12 or v is None else v + b"-new", 0 if o < 12 else 1) for o, k, v, _ in history(7)]
    b2 = compacted_replica(tmp_path, "b2", clean(old, 0), hw=12, epochs=[(0, 0)])
    b3 = compacted_replica(tmp_path, "b3", clean(new, 24), hw=28, cleaner=24, epochs=[(0, 0), (1, 12)])
    got = replay({"b2": str(b2), "b3": str(b3)}, leader="b3")
    assert got["b2"]["diverged_at"] == 12, "diverged_at"
    assert got["b2"]["truncated_to"] == 12, "the broker's truncation by epoch"


def test_the_same_record_written_in_another_epoch_is_a_divergence(tmp_path: Path) -> None:
    """b3 holds b2's very records from 12 on, but written in epoch 1 (a retried write under a new leader):
    the cleaner keeps a batch's epoch, so one offset in two epochs is where the logs part."""
    b2 = compacted_replica(tmp_path, "b2", clean(RAW, 0), hw=20, epochs=[(0, 0)])
    again = [(o, k, v, 0 if o < 12 else 1) for o, k, v, _ in RAW]
    b3 = compacted_replica(tmp_path, "b3", clean(again, 16), hw=20, cleaner=16, epochs=[(0, 0), (1, 12)])
    got = replay({"b2": str(b2), "b3": str(b3)}, leader="b3")
    assert got["b2"]["diverged_at"] == 12, "diverged_at"
