from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.formats.errors import FormatError
from replog.formats.kafka import quorum_state as qs
from tests.mutate import rejected_mutations
from tests.realdata import REALDATA, real_files

I32 = st.integers(-(2**31), 2**31 - 1)


@given(st.builds(qs.QuorumState, st.integers(0, 5), I32, I32, I32,
                 st.none() | st.integers(-(2**63), 2**63 - 1), st.none() | st.tuples(I32, I32),
                 st.none() | st.text(max_size=10), st.none() | st.just("3tZY1iwAzpFlSVBhblXsrQ"),
                 st.dictionaries(st.sampled_from(["votedDirectoryIdX", "future"]), st.integers(), max_size=2)))
def test_round_trip(state):
    assert qs.parse_quorum_state(qs.build_quorum_state(state)) == state


@pytest.mark.parametrize("data", [
    b"", b"[]", b"{", b"\xff", b'{"leaderId":1}', b'{"data_version":-1}', b'{"data_version":"0"}',
    b'{"data_version":0,"leaderId":1.5}', b'{"data_version":0,"leaderId":true}',
    b'{"data_version":0,"leaderEpoch":2147483648}', b'{"data_version":0,"currentVoters":[1]}',
    b'{"data_version":0,"currentVoters":[{"voterId":"x"}]}', b'{"data_version":0,"clusterId":5}',
    b"[" * 100000,
])
def test_defects(data):
    with pytest.raises(FormatError) as e:
        qs.parse_quorum_state(data)
    assert e.value.code == "KAFKA_QUORUM_STATE_INVALID"


def test_mutations_only_raise_format_error():
    good = (b'{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,'
            b'"currentVoters":[{"voterId":1}],"data_version":0}')
    assert rejected_mutations(qs.parse_quorum_state, good, seed=4, rounds=400) > 0


def test_real_files_rebuild_byte_exact():
    files = real_files("**/quorum-state")
    for path in files:
        data = path.read_bytes()
        assert qs.build_quorum_state(qs.parse_quorum_state(data)) == data, path
    path = REALDATA / "jeongrae-kraft/c441d190/__cluster_metadata-0/quorum-state"
    if path.exists():
        state = qs.parse_quorum_state(path.read_bytes())
        assert (state.leader_id, state.leader_epoch, state.current_voters) == (1, 6, (1,))
