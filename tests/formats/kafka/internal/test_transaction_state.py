"""`__transaction_state` key/value decoders and encoders (no real transactional data exists: generated only)."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.formats.errors import FormatError
from replog.formats.kafka.internal.transaction_state import (
    STATE_KEY,
    TRANSACTION_LOG_VALUE,
    decode_transaction_state,
    encode_transaction_log_key,
    encode_transaction_log_value,
    state_name,
)
from tests.formats.kafka.internal.test_protocol import message_values
from tests.mutate import damage

values = st.integers(0, 1).flatmap(lambda v: st.tuples(st.just(v), message_values(TRANSACTION_LOG_VALUE, v)))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=20), values)
def test_round_trip(transactional_id: str, value: tuple[int, dict]) -> None:
    version, data = value
    decoded = decode_transaction_state(encode_transaction_log_key(transactional_id),
                                       encode_transaction_log_value(data, version))
    expected = {**data, STATE_KEY: state_name(data["transactionStatus"])}
    assert decoded == {"key": {"type": "transaction_log", "version": 0,
                               "data": {"transactionalId": transactional_id}},
                       "value": {"version": version, "data": expected}}
    # the derived state name is ignored when encoding again
    assert encode_transaction_log_value(decoded["value"]["data"], version) == \
        encode_transaction_log_value(data, version)


@settings(max_examples=300, deadline=None)
@given(values, st.data())
def test_mutations_raise_only_format_error(value: tuple[int, dict], data) -> None:
    buf = bytearray(encode_transaction_log_value(value[1], value[0]))
    damage(buf, data)
    try:
        json.dumps(decode_transaction_state(encode_transaction_log_key("t"), bytes(buf)))
    except FormatError as exc:
        assert exc.code == "KAFKA_RECORDS_UNDECODABLE"


def _ongoing(**extra) -> dict:
    return {"producerId": 4000, "producerEpoch": 2, "transactionTimeoutMs": 60000, "transactionStatus": 1,
            "transactionPartitions": [{"topic": "orders", "partitionIds": [0, 2]}],
            "transactionLastUpdateTimestampMs": 1700000000500, "transactionStartTimestampMs": 1700000000000,
            **extra}


def test_v0_layout_and_state_name() -> None:
    raw = encode_transaction_log_value(_ongoing())
    assert raw[:2] == b"\x00\x00"
    assert raw[2:10] == (4000).to_bytes(8, "big") and raw[10:12] == b"\x00\x02"
    assert raw[16] == 1                                    # status int8 after the timeout int32
    assert raw[17:21] == b"\x00\x00\x00\x01"               # one partitions entry (int32 count)
    out = decode_transaction_state(encode_transaction_log_key("tx-1"), raw)
    assert out["key"]["data"] == {"transactionalId": "tx-1"}
    assert out["value"]["data"][STATE_KEY] == "Ongoing"


def test_v1_tagged_producer_ids() -> None:
    data = _ongoing(previousProducerId=3999, nextProducerId=-1, clientTransactionVersion=2,
                    transactionStatus=7)
    out = decode_transaction_state(encode_transaction_log_key("tx"), encode_transaction_log_value(data, 1))
    assert out["value"]["data"]["previousProducerId"] == 3999
    assert out["value"]["data"]["nextProducerId"] == -1
    assert out["value"]["data"]["clientTransactionVersion"] == 2
    assert out["value"]["data"][STATE_KEY] == "PrepareEpochFence"


def test_null_partitions_tombstone_and_unknowns() -> None:
    data = _ongoing(transactionPartitions=None, transactionStatus=0)
    out = decode_transaction_state(encode_transaction_log_key("tx"), encode_transaction_log_value(data))
    assert out["value"]["data"]["transactionPartitions"] is None
    assert decode_transaction_state(encode_transaction_log_key("tx"), None)["value"] is None
    assert decode_transaction_state(b"\x00\x05zz", b"\x00\x07\x01") == {
        "key": {"type": "unknown", "version": 5, "raw": "7a7a"}, "value": {"version": 7, "raw": "01"}}
    assert state_name(42) == "Unknown(42)"
    with pytest.raises(FormatError):
        decode_transaction_state(None, b"")
    with pytest.raises(ValueError):
        encode_transaction_log_value(_ongoing(), 5)
