from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.formats.errors import FormatError
from replog.formats.kafka import clean_shutdown as csd
from tests.realdata import real_files


@given(st.none() | st.integers(-(2**63), 2**63 - 1))
def test_round_trip(epoch):
    marker = csd.CleanShutdown(None if epoch is None else 0, epoch)
    assert csd.parse_clean_shutdown(csd.build_clean_shutdown(marker)) == marker


def test_formats():
    assert csd.build_clean_shutdown(csd.CleanShutdown(0, 42)) == b'{"version":0,"brokerEpoch":42}'
    assert csd.parse_clean_shutdown(b"") == (None, None)
    assert csd.parse_clean_shutdown(b'{"version":0,"brokerEpoch":7,"x":1}') == (0, 7)


@pytest.mark.parametrize("data", [b"x", b"[]", b'{"version":0}', b'{"version":0,"brokerEpoch":"1"}',
                                  b'{"brokerEpoch":1e3}', b"\xff\xfe", b"{" * 100000])
def test_defects(data):
    with pytest.raises(FormatError) as e:
        csd.parse_clean_shutdown(data)
    assert e.value.code == "KAFKA_CLEAN_SHUTDOWN_INVALID"


def test_real_markers():
    files = real_files("**/.kafka_cleanshutdown")
    for path in files:
        assert csd.parse_clean_shutdown(path.read_bytes()) == (None, None)
