"""`__transaction_state` records: TransactionLogKey / TransactionLogValue.

Key and value are each an int16 version then the message body
(transaction-coordinator `TransactionLog{Key,Value}.json`; value v1 is
flexible and carries the previous/next producer ids and the client
transaction version as tagged fields). A null value is a tombstone: the
transactional id expired. Status ids are `TransactionState.id` of the
coordinator (core `TransactionMetadata.scala`).
"""
from __future__ import annotations

from replog.formats.errors import FormatError
from replog.formats.kafka.internal.protocol import (
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    Array,
    Field,
    Message,
    Struct,
    decode_version_prefixed,
    json_view,
    read_int16,
    version_prefixed,
)

TRANSACTION_LOG_KEY = Message("TransactionLogKey", (Field("transactionalId", STRING),), valid="0")
TRANSACTION_LOG_VALUE = Message("TransactionLogValue", (
    Field("producerId", INT64),
    Field("previousProducerId", INT64, "1+", tag=0, default=-1),
    Field("nextProducerId", INT64, "1+", tag=1, default=-1),
    Field("producerEpoch", INT16),
    Field("transactionTimeoutMs", INT32),
    Field("transactionStatus", INT8),
    Field("transactionPartitions", Array(Struct("PartitionsSchema", (
        Field("topic", STRING), Field("partitionIds", Array(INT32))))), nullable="0+"),
    Field("transactionLastUpdateTimestampMs", INT64),
    Field("transactionStartTimestampMs", INT64),
    Field("clientTransactionVersion", INT16, "1+", tag=2, default=0),
), valid="0-1", flexible="1+")

TRANSACTION_STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
                      "CompleteAbort", "Dead", "PrepareEpochFence")
STATE_KEY = "transactionState"  # derived name added next to transactionStatus; ignored by the encoder


def state_name(status: int) -> str:
    return TRANSACTION_STATES[status] if 0 <= status < len(TRANSACTION_STATES) else f"Unknown({status})"


def decode_transaction_state(key: bytes | None, value: bytes | None) -> dict:
    """Decode one `__transaction_state` record. Raises FormatError on malformed bytes."""
    if key is None:
        raise FormatError("KAFKA_RECORDS_UNDECODABLE", "__transaction_state record without a key")
    return {"key": decode_key(key), "value": None if value is None else decode_value(value)}


def decode_key(key: bytes) -> dict:
    known = TRANSACTION_LOG_KEY.supports(read_int16(key))
    return {"type": "transaction_log" if known else "unknown", **decode_version_prefixed(TRANSACTION_LOG_KEY, key)}


def decode_value(value: bytes) -> dict:
    out = decode_version_prefixed(TRANSACTION_LOG_VALUE, value)
    if "data" in out:
        out["data"][STATE_KEY] = state_name(out["data"]["transactionStatus"])
    return out


def encode_transaction_log_key(transactional_id: str, version: int = 0) -> bytes:
    return version_prefixed(version, TRANSACTION_LOG_KEY.encode({"transactionalId": transactional_id}, version))


def encode_transaction_log_value(data: dict, version: int = 0) -> bytes:
    """`data` as decoded (producerId, producerEpoch, transactionStatus, transactionPartitions, ...)."""
    if not TRANSACTION_LOG_VALUE.supports(version):
        raise ValueError(f"TransactionLogValue has no version {version}")
    return version_prefixed(version, TRANSACTION_LOG_VALUE.encode(data, version))


def json_data(data: dict) -> dict:
    """A decoded value's `data` as Kafka's generated JSON converter writes it: tagged fields at their default
    left out, bytes as Base64, without replog's derived `transactionState`."""
    return json_view(TRANSACTION_LOG_VALUE.fields, {k: v for k, v in data.items() if k != STATE_KEY})
