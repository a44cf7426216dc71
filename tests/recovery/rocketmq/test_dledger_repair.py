"""`repair --protocol dledger` on hand-laid DLedger groups: entries and index records packed with `struct` as
`DLedgerEntryCoder` writes them (independent of replog's writer), damaged byte by byte, repaired, read back."""
from __future__ import annotations

import json
import struct
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replog.formats.findings import Finding, Severity
from replog.formats.rocketmq import commitlog as cl
from replog.formats.rocketmq import dledger as dl
from replog.recovery.rocketmq.dledger_repair import RepairedPeer, cut_at_defect
from replog.recovery.rocketmq.dledger_replay import replay_dledger
from replog.recovery.rocketmq.doctor import diagnose_store
from replog.recovery.rocketmq.repair import repair_stores
from replog.recovery.rocketmq.store_model import load_store

FILE = 2048
INDEX_FILE = 32 * 64
HEADER = ">iiqqqiiii"       # magic, size, index, term, pos, channel, chainCrc, bodyCrc, bodySize
INDEX = ">iqiqq"            # magic, pos, size, index, term


def lay_peer(root: Path, peer: str, terms: list[int], *, committed: int, vote: tuple[int, str]) -> Path:
    """A store `root/peer` with `dledger-<peer>`: entry i holds message seq i (queue i % 2) in term terms[i]."""
    data: dict[int, bytearray] = {}
    index = bytearray(INDEX_FILE)
    pos = 0
    for i, term in enumerate(terms):
        body = bytearray(cl.build_message(topic="T", body=f"seq-{i}-{term}".encode().ljust(40, b"x"),
                                          queue_id=i % 2, queue_offset=i // 2, store_timestamp=1000 + i))
        size = 48 + len(body)
        if pos % FILE + size + 8 > FILE:
            left = FILE - pos % FILE
            data[pos - pos % FILE][pos % FILE:pos % FILE + 8] = struct.pack(">ii", -1, left)
            pos += left
        struct.pack_into(">q", body, 28, pos + 48)
        raw = struct.pack(HEADER, 1, size, i, term, pos, 0, 0, 0, len(body)) + bytes(body)
        buf = data.setdefault(pos - pos % FILE, bytearray(FILE))
        buf[pos % FILE:pos % FILE + size] = raw
        struct.pack_into(INDEX, index, i * 32, 1, pos, size, i, term)
        pos += size
    d = root / peer / f"dledger-{peer}"
    (d / "data").mkdir(parents=True)
    (d / "index").mkdir()
    for start, buf in data.items():
        (d / "data" / f"{start:020d}").write_bytes(bytes(buf))
    (d / "index" / f"{0:020d}").write_bytes(bytes(index))
    (d / "checkpoint").write_text(f"endIndex={len(terms) - 1}\ncommittedIndex={committed}\n")
    (d / "currterm").write_text(f"currTerm={vote[0]}\nvoteLeader={vote[1]}\n")
    (root / peer / "config").mkdir()
    (root / peer / "config" / "consumerOffset.json").write_text('{"offsetTable":{"T@G":{0:3,1:2}}}')
    return root / peer


def flip_body(store: Path, peer: str, index: int) -> None:
    """Flip a byte inside entry `index`'s message body (its CRC no longer matches; dledger's recover never looks)."""
    for f in sorted((store / f"dledger-{peer}" / "data").iterdir()):
        raw = bytearray(f.read_bytes())
        at = 0
        while at + 48 <= len(raw):
            magic, size, idx = struct.unpack_from(">iiq", raw, at)
            if magic != 1:
                break
            if idx == index:
                raw[at + size - 5] ^= 0xFF
                f.write_bytes(bytes(raw))
                return
            at += size
    raise AssertionError(f"no entry {index} in {store}")


def group(tmp_path: Path) -> list[Path]:
    """n0 led term 1 and appended 5-6 without a quorum; n1 and n2 went on in term 2 (n2 elected); n1's entry 6
    has a flipped body byte and n2 spans three data files."""
    n0 = lay_peer(tmp_path, "n0", [1] * 7, committed=4, vote=(1, "n0"))
    n1 = lay_peer(tmp_path, "n1", [1] * 5 + [2] * 20, committed=22, vote=(2, "n2"))
    n2 = lay_peer(tmp_path, "n2", [1] * 5 + [2] * 20, committed=24, vote=(2, "n2"))
    flip_body(n1, "n1", 6)
    return [n0, n1, n2]


def entries_of(store: Path) -> list[tuple[int, int, int, int]]:
    """(index, term, pos, size) of every entry, read with struct from the written data files."""
    out = []
    for f in sorted((next(store.glob("dledger-*")) / "data").iterdir()):
        raw = f.read_bytes()
        at = 0
        while at + 48 <= len(raw):
            magic, size, idx, term, pos = struct.unpack_from(">iiqqq", raw, at)
            if magic != 1:
                break
            out.append((idx, term, pos, size))
            at += size
    return out


def test_group_repaired_to_the_leader_s_log(tmp_path: Path) -> None:
    paths = group(tmp_path)
    result = replay_dledger([load_store(p, p.name) for p in paths])
    assert result.master == "n2", f"leader {result.master}"
    written = {r.name: r for r in repair_stores(result, tmp_path / "out")}
    want = entries_of(paths[2])
    for name in ("n0", "n1", "n2"):
        r = written[name]
        assert isinstance(r, RepairedPeer), f"{name}: {type(r)}"
        assert r.problems == [], f"{name}: {r.problems}"
        assert r.identical_to_master, f"{name} is not the leader's log"
        assert entries_of(tmp_path / "out" / name) == want, f"{name}: entries differ from n2's"
    assert (written["n0"].own_entries, written["n0"].fetched_entries) == (5, 20), "n0 keeps 0-4, fetches 5-24"
    assert (written["n1"].own_entries, written["n1"].cut is not None) == (6, True), f"n1 {written['n1']}"
    assert "CRC" in (written["n1"].cut or ""), f"n1 cut reason {written['n1'].cut}"
    assert written["n0"].committed_index == 4, f"n0 committed {written['n0'].committed_index}"


def test_repaired_peers_doctor_clean_and_replay_in_sync(tmp_path: Path) -> None:
    paths = group(tmp_path)
    repair_stores(replay_dledger([load_store(p, p.name) for p in paths]), tmp_path / "out")
    out = [tmp_path / "out" / p.name for p in paths]
    for p in out:
        findings, _ = diagnose_store(p)
        errors = [f for f in findings if f.severity is Severity.ERROR]
        assert errors == [], f"{p.name}: {errors}"
        assert (p / "config" / "consumerOffset.json").is_file(), f"{p.name}: consumer offsets not copied"
        term = (p / f"dledger-{p.name}" / "currterm").read_text()
        src = (tmp_path / p.name / f"dledger-{p.name}" / "currterm").read_text()
        assert term == src, f"{p.name}: term file not kept: {term!r} vs {src!r}"
    again = replay_dledger([load_store(p, p.name) for p in out])
    assert [(r.model.name, r.status) for r in again.replicas if r.role != "leader"] == \
        [("n0", "in_sync"), ("n1", "in_sync")], f"{[(r.model.name, r.status) for r in again.replicas]}"


def test_consume_queues_hold_the_committed_messages(tmp_path: Path) -> None:
    """n0 committed 4: its queues hold seq 0-4 only (reput stops at committedPos); n2's hold all 25."""
    paths = group(tmp_path)
    repair_stores(replay_dledger([load_store(p, p.name) for p in paths]), tmp_path / "out")
    for name, count in (("n0", 5), ("n2", 25)):
        m = load_store(tmp_path / "out" / name, name)
        starts = {x.physical_offset: x.size for x in m.messages}
        units = []
        for f in sorted((tmp_path / "out" / name / "consumequeue" / "T").glob("*/*")):
            raw = f.read_bytes()
            units += [struct.unpack_from(">qiq", raw, at)[:2] for at in range(0, len(raw), 20)
                      if raw[at:at + 20] != bytes(20)]
        assert len(units) == count, f"{name}: {len(units)} consume-queue units, expected {count}"
        wrong = [u for u in units if starts.get(u[0]) != u[1]]
        assert wrong == [], f"{name}: units pointing at no message of their size: {wrong}"


def test_a_zeroed_index_is_rebuilt(tmp_path: Path) -> None:
    """The broker's recover rewrites the index from the first mismatch and keeps every entry (dledger-all-0.3.1.2
    `DLedgerMmapFileStore#recover`, `needWriteIndex`); the written index matches every entry written."""
    paths = group(tmp_path)
    idx = paths[0] / "dledger-n0" / "index" / f"{0:020d}"
    raw = bytearray(idx.read_bytes())
    raw[3 * 32:] = bytes(len(raw) - 3 * 32)
    idx.write_bytes(bytes(raw))
    log = load_store(paths[0], "n0").dledger
    assert log is not None and log.last_index == 6, f"n0 keeps entries to {log and log.last_index} (broker: 6)"
    written = {r.name: r for r in repair_stores(replay_dledger([load_store(p, p.name) for p in paths]),
                                                 tmp_path / "out")}
    assert written["n0"].problems == [], f"n0: {written['n0'].problems}"
    assert written["n0"].own_entries == 5, f"n0 keeps {written['n0'].own_entries} own entries (0-4, the common)"
    out = tmp_path / "out" / "n0" / "dledger-n0" / "index" / f"{0:020d}"
    records = [struct.unpack_from(INDEX, out.read_bytes(), i * 32) for i in range(25)]
    assert records == [(1, p, s, i, t) for i, t, p, s in entries_of(paths[2])], "index records differ from data"


def test_a_leader_defect_caps_every_peer(tmp_path: Path) -> None:
    """The leader's entry 10 is corrupt: every peer ends at entry 9, so the group elects among equal logs."""
    paths = group(tmp_path)
    flip_body(paths[2], "n2", 10)
    result = replay_dledger([load_store(p, p.name) for p in paths])
    written = {r.name: r for r in repair_stores(result, tmp_path / "out")}
    for name, r in written.items():
        assert isinstance(r, RepairedPeer), name
        assert r.last_index == 9, f"{name} ends at {r.last_index}, expected 9"
        assert r.problems == [], f"{name}: {r.problems}"


def test_cli_repair_dledger_json(tmp_path: Path) -> None:
    from tests.toolkit.test_cli import run_replog

    paths = group(tmp_path)
    done = run_replog("repair", *[f"{p.name}={p}" for p in paths], "--protocol", "dledger", "--out",
                      str(tmp_path / "out"), "--format", "json")
    assert done.returncode in (0, 1), f"exit {done.returncode}: {done.stderr[-800:]}"
    doc = json.loads(done.stdout)
    peers = {r["name"]: r for r in doc["repaired"]}
    assert set(peers) == {"n0", "n1", "n2"}, f"repaired {set(peers)}"
    assert all(r["problems"] == [] and r["identical_to_master"] for r in peers.values()), f"{peers}"
    assert peers["n1"]["peer"] == "n1" and peers["n1"]["last_index"] == 24, f"{peers['n1']}"


def test_cut_at_defect_keeps_everything_clean(tmp_path: Path) -> None:
    paths = group(tmp_path)
    log = load_store(paths[2], "n2").dledger
    assert log is not None, "n2 not read as DLedger"
    kept, why = cut_at_defect(log.entries, FILE)
    assert (len(kept), why) == (25, None), f"clean log cut: {len(kept)} {why}"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(min_value=0, max_value=600), min_size=1, max_size=30),
       st.sampled_from([1024, 2048, 4096]), st.sampled_from([64, 128, 1024]))
def test_writer_reader_round_trip(tmp_path_factory, bodies: list[int], file_size: int,  # type: ignore[no-untyped-def]
                                  index_units: int) -> None:
    """Entries laid by `DLedgerWriter`, rewritten by `write_data_files`/`write_index_files`, walk back equal."""
    tmp = tmp_path_factory.mktemp("rt")
    w = dl.DLedgerWriter(file_size)
    for i, n in enumerate(bodies):
        w.append(cl.build_message(topic="T", body=b"b" * n, queue_id=0, queue_offset=i), 1 + i // 7)
    src = w.write_to(tmp / "src" / "dledger-a")
    placed = []
    for e in w.entries:
        placed.append(dl.Placed(e.pos, e.size, e.index, e.term, src / "data" / f"{e.file_start:020d}", e.position))
    out = tmp / "out" / "dledger-a"
    dl.write_data_files(out / "data", placed, file_size)
    dl.write_index_files(out / "index", placed, 32 * index_units)
    dl.write_checkpoint_file(out, placed[-1].index, placed[-1].index)
    state = dl.Walk()
    got = [item[0] for item in dl.walk_peer(dl.read_peer(out), state) if not isinstance(item, Finding)]
    defects = [item for item in dl.walk_peer(dl.read_peer(out)) if isinstance(item, Finding)]
    assert defects == [], f"defects {defects}"
    assert [e.identity for e in got] == [e.identity for e in w.entries], "entries differ after the round trip"
    assert state.last_index == len(bodies) - 1, f"recovery ends at {state.last_index}"
