from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.formats.errors import FormatError
from replog.formats.kafka import checkpoint as cp
from tests.realdata import REALDATA

TOPICS = st.text("abcXYZ019._-", min_size=1, max_size=30).filter(lambda t: t not in (".", ".."))
MAPPINGS = st.dictionaries(st.tuples(TOPICS, st.integers(0, 2**31 - 1)), st.integers(-(2**63), 2**63 - 1),
                           max_size=30)
EPOCHS = st.lists(st.builds(cp.EpochEntry, st.integers(-(2**31), 2**31 - 1), st.integers(-(2**63), 2**63 - 1)),
                  max_size=30)


def error_of(fn, data):
    with pytest.raises(FormatError) as e:
        fn(data)
    assert e.value.code == "KAFKA_CHECKPOINT_INVALID"
    return e.value


@given(MAPPINGS)
def test_offset_round_trip(mapping):
    assert cp.parse_offset_checkpoint(cp.build_offset_checkpoint(mapping)) == mapping


@given(EPOCHS)
def test_epoch_round_trip(entries):
    assert cp.parse_leader_epoch_checkpoint(cp.build_leader_epoch_checkpoint(entries)) == entries


def test_reference_examples():
    hw = b"0\n3\norders 0 1523\norders 1 998\n__consumer_offsets 17 42\n"
    assert cp.parse_offset_checkpoint(hw) == {("orders", 0): 1523, ("orders", 1): 998,
                                              ("__consumer_offsets", 17): 42}
    assert cp.parse_leader_epoch_checkpoint(b"0\n3\n0 0\n2 1210\n5 1490\n") == [(0, 0), (2, 1210), (5, 1490)]


def test_java_reader_leniencies():
    assert cp.parse_offset_checkpoint(b"") == {}
    assert cp.parse_offset_checkpoint(b"0\n") == {}       # readLine() null after the version
    assert cp.parse_offset_checkpoint(b"0\n0\n") == {}
    assert cp.parse_offset_checkpoint(b"0\r\n1\r\nt 0 5") == {("t", 0): 5}  # CRLF, no final newline
    assert cp.parse_offset_checkpoint(b"0\n1\nt\t0  5 \n") == {("t", 0): 5}  # \s+ and trailing space
    assert cp.parse_leader_epoch_checkpoint(b"0\n1\n+3 7\n") == [(3, 7)]   # Integer.parseInt accepts +


@pytest.mark.parametrize("data, position", [
    (b"1\n0\n", 0),                                # wrong version
    (b" 0\n0\n", 0),                               # parseInt does not trim
    (b"0\n2\nt 0 5\n", 2),                         # count larger than lines
    (b"0\n0\nt 0 5\n", 2),                         # count smaller than lines
    (b"0\n1\nt 0 5\n\n", 2),                       # an extra empty line is one more entry line
    (b"0\n1\n t 0 5\n", 4),                        # leading whitespace makes 4 fields
    (b"0\n1\nt 0\n", 4),
    (b"0\n1\nt x 5\n", 4),
    (b"0\n1\nt 0 \xd9\xa3\n", 4),                  # non-ASCII digit
    (b"0\n1\nt 0 1_0\n", 4),
    (b"0\n1\nt 2147483648 5\n", 4),                # partition beyond int32
    (b"0\n1\nt 0 9223372036854775808\n", 4),       # offset beyond int64
    (b"0\n1\nt -1 5\n", 4),                        # negative partition
    (b"0\n1\n../../x 0 5\n", 4),                   # path traversal in the topic
    (b"0\n1\n.. 0 5\n", 4),
    (b"0\n1\n" + b"a" * 250 + b" 0 5\n", 4),       # topic too long
    (b"0\n1\nt\xff 0 5\n", 5),                     # invalid UTF-8 at its byte
    (b"0\n2\nx 0 1\ny 0 2\nz 0 3\n", 2),
])
def test_offset_checkpoint_defects(data, position):
    assert error_of(cp.parse_offset_checkpoint, data).position == position


def test_declared_billion_entries_fails_fast():
    err = error_of(cp.parse_offset_checkpoint, b"0\n1000000000\na 0 1\nb 0 2\nc 0 3\n")
    assert err.position == 2 and "1000000000" in err.message
    error_of(cp.parse_leader_epoch_checkpoint, b"0\n1000000000\n0 0\n1 5\n2 9\n")


@pytest.mark.parametrize("data", [b"0\n1\n0\n", b"0\n1\n0 0 0\n", b"0\n1\n2147483648 0\n", b"x\n", b"0\nx\n"])
def test_epoch_checkpoint_defects(data):
    error_of(cp.parse_leader_epoch_checkpoint, data)


def test_builders_reject_bad_input():
    for mapping in ({("../x", 0): 1}, {("t", -1): 1}, {("t", 0): 2**63}):
        with pytest.raises(ValueError):
            cp.build_offset_checkpoint(mapping)
    with pytest.raises(ValueError):
        cp.build_leader_epoch_checkpoint([(2**31, 0)])


def test_known_names():
    assert cp.KNOWN_CHECKPOINT_NAMES == {
        "replication-offset-checkpoint", "recovery-point-offset-checkpoint", "log-start-offset-checkpoint",
        "cleaner-offset-checkpoint", "leader-epoch-checkpoint"}


def test_mutations_only_raise_format_error():
    rng = random.Random(9)
    good = cp.build_offset_checkpoint({(f"topic{i}", i): i * 1000 for i in range(20)})
    for _ in range(400):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        data = bytes(data[: rng.randint(0, len(data))])
        for fn in (cp.parse_offset_checkpoint, cp.parse_leader_epoch_checkpoint):
            try:
                fn(data)
            except FormatError:
                pass


def _real(name):
    if not REALDATA.is_dir():
        pytest.skip("no real data")
    return sorted(REALDATA.glob(f"**/{name}"))


def test_real_offset_checkpoints():
    files = [f for n in sorted(cp.KNOWN_CHECKPOINT_NAMES - {"leader-epoch-checkpoint"}) for f in _real(n)]
    assert files
    for path in files:
        mapping = cp.parse_offset_checkpoint(path.read_bytes())
        assert cp.parse_offset_checkpoint(cp.build_offset_checkpoint(mapping)) == mapping
    hw = cp.parse_offset_checkpoint((REALDATA / "niloufar-ldi-kraft/replication-offset-checkpoint").read_bytes())
    assert len(hw) == 54
    assert hw[("__consumer_offsets", 6)] == 13 and hw[("TestTopicPatient", 0)] == 3
    cleaner = REALDATA / "donaldy-kafka271-zk/cleaner-offset-checkpoint"
    if cleaner.exists():
        got = cp.parse_offset_checkpoint(cleaner.read_bytes())
        assert got[("__consumer_offsets", 28)] == 2 and got[("__consumer_offsets", 39)] == 18
    many = REALDATA / "jeongrae-kraft/c3152aef/replication-offset-checkpoint"
    if many.exists():
        assert len(cp.parse_offset_checkpoint(many.read_bytes())) == 86


def test_real_leader_epoch_checkpoints():
    files = _real("leader-epoch-checkpoint")
    assert len(files) >= 80
    for path in files:
        data = path.read_bytes()
        entries = cp.parse_leader_epoch_checkpoint(data)
        assert cp.build_leader_epoch_checkpoint(entries) == data, path
    by_set = {
        "jeongrae-kraft/c441d190/__cluster_metadata-0": [(1, 0), (2, 298), (3, 354), (5, 711), (6, 712)],
        "jiten-kraft-2snap/c63330ef3/__cluster_metadata-0": [(1, 0), (2, 13)],
        "sagarrao-3broker/c8d7c180e/kafka-logs-2/my_topic-2": [(0, 0), (3, 414), (8, 657)],
        "sagarrao-3broker/c030fc1ce/kafka-logs-2/my_topic-2": [(0, 0)],
        "niloufar-ldi-kraft/__consumer_offsets-6": [(0, 0)],
    }
    for rel, expected in by_set.items():
        path = REALDATA / rel / "leader-epoch-checkpoint"
        if path.exists():
            assert cp.parse_leader_epoch_checkpoint(path.read_bytes()) == expected, rel
    later = REALDATA / "jeongrae-kraft/c3152aef/__cluster_metadata-0/leader-epoch-checkpoint"
    if later.exists():
        entries = cp.parse_leader_epoch_checkpoint(later.read_bytes())
        assert len(entries) == 21 and entries[-1] == (22, 154155)
