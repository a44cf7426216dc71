"""Every finding code replog can emit, with its default severity and meaning.

This is the one place codes are listed: JSON output, the docs and the fleet
`findings` table all use these names. Add a code here before emitting it.
"""
from __future__ import annotations

from typing import NamedTuple


class Code(NamedTuple):
    severity: str  # "error" | "warning" | "info"
    explanation: str


E, W, I = "error", "warning", "info"  # noqa: E741 -- the severities' initials, read as a set (E/W/I)

CODES: dict[str, Code] = {
    # --- generic -------------------------------------------------------------
    "UNREADABLE_FILE": Code(E, "the file could not be opened or read"),
    "UNKNOWN_FILE": Code(I, "a file replog does not know; left alone"),
    "WRONG_FILE_TYPE": Code(E, "an entry is not the kind of file its name says: a FIFO, device, socket, directory, "
                               "symlink loop or dangling symlink where a regular file (or a directory) belongs; "
                               "replog never opens it, and the broker skips or fails on it"),
    "INPUT_CHANGED": Code(W, "an input's size or SHA-256 changed while replog read it "
                             "(a live broker, or another writer)"),
    "INPUT_VANISHED": Code(W, "an input listed a moment before was gone when replog opened it: renamed or deleted "
                              "meanwhile (a live broker renames segments to .deleted, .cleaned or .swap)"),
    "INPUT_NOT_HASHED": Code(W, "an input larger than any broker file can be (2 GiB - 1, a sparse file?) is read "
                                "where it holds data but not hashed: its manifest entry has no SHA-256"),
    "SYMLINK_OUTSIDE_INPUTS": Code(E, "a symlink under the inputs leads to a file outside them (evidence copied "
                                      "from elsewhere, or a trap): not read unless --follow-symlinks"),
    "INTERNAL_ERROR": Code(E, "replog failed on this input; the message says where (please report it)"),
    # --- Kafka record batches and segments ------------------------------------
    "KAFKA_BATCH_CRC_MISMATCH": Code(E, "stored CRC of a batch or message differs from the CRC of its bytes"),
    "KAFKA_BATCH_LENGTH_TOO_SMALL": Code(E, "batch length field below the minimum record overhead (14 bytes): "
                                            "the broker stops reading here"),
    "KAFKA_BATCH_LENGTH_IMPOSSIBLE": Code(E, "batch length field larger than any valid batch; "
                                             "the walk cannot go on from here"),
    "KAFKA_BATCH_BAD_MAGIC": Code(E, "magic byte is not 0, 1 or 2"),
    "KAFKA_BATCH_BAD_CODEC": Code(E, "compression codec id in the attributes is not one Kafka defines for this magic"),
    "KAFKA_BATCH_BAD_RECORD_COUNT": Code(E, "record count is negative or larger than the offsets the batch spans"),
    "KAFKA_BATCH_LAST_OFFSET_MISMATCH": Code(E, "records inside a batch do not end at base_offset + last_offset_delta"),
    "KAFKA_RECORDS_UNDECODABLE": Code(E, "batch records could not be decompressed or decoded "
                                         "(the broker does not check this; consumers will fail)"),
    "KAFKA_BATCH_TOO_MANY_RECORDS": Code(W, "a batch claims more records than replog decodes from one batch "
                                            "(about a million): its records are not decoded or checked"),
    "KAFKA_DECOMPRESSION_BOMB": Code(E, "a compressed payload expands beyond the bounded ratio; decoding stopped"),
    "KAFKA_CONTROL_RECORD_INVALID": Code(E, "a control batch whose control record cannot be parsed "
                                            "(broker recovery stops here)"),
    "KAFKA_TORN_TAIL": Code(E, "the last batch extends past the end of the file (crash while appending)"),
    "KAFKA_TRAILING_BYTES": Code(E, "bytes at the end of the segment too short to hold a batch header"),
    "KAFKA_ZERO_TAIL": Code(W, "zero-filled region at the end of the segment (preallocation or crash); "
                               "the broker truncates it"),
    "KAFKA_SEGMENT_NAME_MISMATCH": Code(E, "the segment's first batch starts below the base offset in its file name"),
    "KAFKA_SEGMENT_BAD_NAME": Code(W, "a segment-like file whose name is not a 20-digit offset"),
    "KAFKA_SEGMENT_TOO_LARGE": Code(E, "a segment file larger than Integer.MAX_VALUE bytes, which no segment can be: "
                                       "the broker refuses to open it (a sparse or foreign file?)"),
    "KAFKA_SEGMENT_EMPTY": Code(I, "the segment holds no batches"),
    "KAFKA_SEGMENT_OFFSET_OVERFLOW": Code(E, "a batch's offset does not fit the 32-bit relative range of its segment"),
    "KAFKA_OFFSETS_NOT_INCREASING": Code(E, "a batch starts at or below the last offset of the batch before it"),
    "KAFKA_OFFSET_GAP": Code(I, "offsets skip a range (normal after compaction or transactions)"),
    "KAFKA_SEGMENT_OVERLAP": Code(E, "two segments hold overlapping offsets"),
    "KAFKA_TIMESTAMP_INVALID": Code(W, "a timestamp is negative (other than -1) "
                                       "or max_timestamp is below a record timestamp"),
    "KAFKA_SALVAGE_RESYNC": Code(I, "valid batches found again after damaged bytes"),
    # --- Kafka indexes ------------------------------------------------------------
    "KAFKA_INDEX_SIZE_NOT_MULTIPLE": Code(E, "index file length is not a multiple of its entry size"),
    "KAFKA_INDEX_NOT_MONOTONIC": Code(E, "index entries are not strictly increasing"),
    "KAFKA_INDEX_ZERO_TAIL": Code(I, "preallocated zero entries at the end of an index (normal for an active segment)"),
    "KAFKA_INDEX_BAD_ENTRY": Code(E, "an index entry does not point at the start of a batch holding its offset"),
    "KAFKA_INDEX_OUT_OF_RANGE": Code(E, "an index entry points past the end of its log or below the segment base"),
    "KAFKA_TIMEINDEX_MISMATCH": Code(E, "a time index entry disagrees with the max timestamp of its batch"),
    "KAFKA_INDEX_WITHOUT_LOG": Code(W, "an index file whose .log is missing (the broker deletes it at startup)"),
    "KAFKA_INDEX_MISSING": Code(W, "a segment without its .index (the broker rebuilds it)"),
    "KAFKA_TXNINDEX_INVALID": Code(E, "transaction index entry malformed or out of order"),
    "KAFKA_TXNINDEX_MISMATCH": Code(E, "transaction index disagrees with the ABORT markers in the log"),
    "KAFKA_TXN_HANGING": Code(E, "a transaction open at the log end that no marker will ever close: it was written "
                                 "after the coordinator's last record for its producer, which owes this partition no "
                                 "marker; it pins the last stable offset (read_committed consumers stall) until it "
                                 "is aborted"),
    "KAFKA_TXN_MARKER_MISSING": Code(W, "a transaction open at the log end that its coordinator completed after its "
                                        "last write: this replica lags (the leader holds the marker) or lost the "
                                        "marker to a truncation (hanging); `replog impact` on the replicas tells"),
    "KAFKA_TXN_OPEN_LONG": Code(W, "a transaction open at the log end whose producer last wrote longer ago than the "
                                   "coordinator lets a transaction run (transaction.max.timeout.ms): probably hanging"),
    # --- Kafka producer snapshots and checkpoints -----------------------------------
    "KAFKA_SNAPSHOT_CRC_MISMATCH": Code(E, "producer snapshot CRC-32C does not match its contents"),
    "KAFKA_SNAPSHOT_INVALID": Code(E, "producer snapshot cannot be parsed (version, size or entry count)"),
    "KAFKA_SNAPSHOT_MISMATCH": Code(W, "producer snapshot disagrees with the producer state the batches imply"),
    "KAFKA_CHECKPOINT_INVALID": Code(E, "checkpoint text file malformed (version, count or entry lines)"),
    "KAFKA_CHECKPOINT_TMP_LEFTOVER": Code(W, "a checkpoint .tmp file left by a crash during a write"),
    "KAFKA_EPOCH_CHECKPOINT_NOT_MONOTONIC": Code(E, "leader-epoch-checkpoint epochs or start offsets "
                                                    "do not strictly increase"),
    "KAFKA_EPOCH_CHECKPOINT_MISMATCH": Code(W, "leader-epoch-checkpoint disagrees "
                                               "with the epochs stamped in the batches"),
    "KAFKA_EPOCH_BEYOND_LOG_END": Code(W, "leader-epoch-checkpoint has entries past the log end (stale after a crash)"),
    "KAFKA_EPOCHS_DECREASING": Code(E, "partition leader epochs decrease along the log"),
    "KAFKA_HW_ABOVE_LEO": Code(E, "high watermark checkpoint is above the log end offset"),
    "KAFKA_LSO_ABOVE_HW": Code(E, "log start offset is above the high watermark"),
    "KAFKA_REMOTE_LOG_SNAPSHOT_INVALID": Code(W, "a partition's remote_log_snapshot (the remote-log metadata cache of "
                                                 "Kafka 3.0-3.7) cannot be read as Kafka reads it: those brokers "
                                                 "fail reading it; 3.8 and later ignore the file"),
    "KAFKA_REMOTE_LOG_SNAPSHOT_SEGMENT": Code(W, "a segment in a partition's remote_log_snapshot is impossible (end "
                                                 "before start, or a leader epoch outside it)"),
    "KAFKA_REMOTE_LOG_RANGE": Code(I, "tiered storage: the log start is below the first local segment; the records "
                                      "between are held in remote storage, not lost (remote.storage.enable)"),
    "KAFKA_REMOTE_LOG_GAP": Code(W, "tiered storage: offsets between the log start and the local log start are in no "
                                    "remote segment __remote_log_metadata names; a consumer gets no data there"),
    "KAFKA_LOG_START_BELOW_LOCAL": Code(W, "the checkpointed log start is below the first local segment and whether "
                                           "the topic has remote storage is not known: with it the records between "
                                           "are in remote storage, without it the broker raises the log start"),
    "KAFKA_RECOVERY_POINT_ABOVE_LEO": Code(W, "recovery point is above the log end offset"),
    "KAFKA_PARTITION_NOT_IN_CHECKPOINT": Code(W, "a partition on disk missing from a broker checkpoint"),
    "KAFKA_CHECKPOINT_WITHOUT_PARTITION": Code(W, "a checkpoint entry for a partition not on disk"),
    "KAFKA_PARTITION_METADATA_INVALID": Code(E, "partition.metadata malformed"),
    "KAFKA_META_PROPERTIES_INVALID": Code(E, "meta.properties malformed or missing required keys"),
    "KAFKA_QUORUM_STATE_INVALID": Code(E, "KRaft quorum-state malformed"),
    "KAFKA_CLEAN_SHUTDOWN_INVALID": Code(W, ".kafka_cleanshutdown is neither empty nor "
                                            "{\"version\":0,\"brokerEpoch\":N} (its presence still counts)"),
    "KAFKA_ORPHAN_TEMP_FILE": Code(W, "a .swap, .cleaned or .deleted file left by the cleaner, a split or "
                                      "deletion (a .swap warns, the others are notes)"),
    "KAFKA_BAD_PARTITION_DIR": Code(W, "a directory whose name is not topic-partition"),
    "KAFKA_BROKER_RUNNING": Code(W, "a running broker holds this log dir's .lock: "
                                    "active segments and checkpoints may change during the scan"),
    # --- RocketMQ -----------------------------------------------------------------
    "ROCKETMQ_MESSAGE_BAD_MAGIC": Code(E, "commitlog message magic code is neither V1, V2 nor BLANK"),
    "ROCKETMQ_MESSAGE_BAD_SIZE": Code(E, "commitlog message total size impossible or disagreeing with its fields"),
    "ROCKETMQ_HA_MIXED_CONTENT": Code(E, "classic HA streamed the master's bytes onto a slave whose own bytes "
                                         "differ below: the slave holds a mixed history"),
    "ROCKETMQ_BODY_CRC_MISMATCH": Code(E, "message body CRC differs from the CRC of the body bytes"),
    "ROCKETMQ_PROPERTY_CRC_MISMATCH": Code(E, "message property CRC tail differs from the CRC of the message"),
    "ROCKETMQ_PHYSICAL_OFFSET_MISMATCH": Code(E, "message physical offset field differs "
                                                 "from its position in the commitlog"),
    "ROCKETMQ_QUEUE_OFFSET_GAP": Code(E, "queue offsets of a queue are not contiguous"),
    "ROCKETMQ_QUEUE_OFFSET_REUSED": Code(W, "a message below its queue's end whose slot's unit names another message "
                                            "(its queue offset reused): no queue reaches it (ConsumeQueue#"
                                            "putMessagePositionInfo writes a slot once: `Build consume queue "
                                            "repeatedly`)"),
    "ROCKETMQ_BLANK_INVALID": Code(E, "end-of-file BLANK filler malformed"),
    "ROCKETMQ_PREALLOCATED_FILE": Code(I, "an all-zero commitlog file after the last written one, mapped ahead of use "
                                          "by AllocateMappedFileService; the broker's recovery drops it"),
    "ROCKETMQ_DIRTY_TAIL": Code(W, "bytes after the last valid message of the last commitlog file (abnormal shutdown)"),
    "ROCKETMQ_FILE_NAME_MISMATCH": Code(E, "mapped file name disagrees with its offset or size"),
    "ROCKETMQ_FILE_GAP": Code(E, "consecutive mapped files are not contiguous"),
    "ROCKETMQ_CQ_ENTRY_MISMATCH": Code(E, "consume queue entry does not point at a matching message"),
    "ROCKETMQ_CQ_INVALID": Code(E, "consume queue file malformed"),
    "ROCKETMQ_ROCKSDB_STORE": Code(I, "the store keeps its consume queues (and config) in RocksDB "
                                      "(storeType=defaultRocksDB); replog read a private copy of each database"),
    "ROCKETMQ_ROCKSDB_BATCH_CQ": Code(E, "a BatchCQ topic in a RocksDB store: the broker keys one unit per batch, "
                                         "its reads stop at the first missing key and a restart reuses offsets"),
    "ROCKETMQ_INDEX_INVALID": Code(E, "index file header, slots or entries malformed"),
    "ROCKETMQ_CHECKPOINT_INVALID": Code(E, "checkpoint file malformed"),
    "ROCKETMQ_CHECKPOINT_AHEAD": Code(W, "checkpoint timestamps are later than the data they cover"),
    "ROCKETMQ_ABORT_PRESENT": Code(W, "abort file present: the broker did not shut down cleanly"),
    "ROCKETMQ_EPOCH_FILE_INVALID": Code(E, "epoch file malformed or not monotonic"),
    "ROCKETMQ_CONFIG_INVALID": Code(W, "config json file malformed"),
    "ROCKETMQ_FEATURE_NOT_CHECKED": Code(I, "store files of a broker feature replog names but does not check "
                                            "(compaction, tiered storage, 4.x transaction files); hashed for the "
                                            "evidence manifest"),
    "ROCKETMQ_DLEDGER_ENTRY_INVALID": Code(E, "DLedger entry header malformed: magic, size, body size or pos field "
                                              "disagree with where the entry is, or its body is no message"),
    "ROCKETMQ_DLEDGER_CONTINUITY": Code(E, "DLedger entries break the Raft log's order: an index not the previous "
                                           "one + 1, a term below the previous entry's, or a committed index past "
                                           "the last entry kept"),
    "ROCKETMQ_DLEDGER_RESTART_UNINDEXED": Code(W, "a DLedger peer restarting after an abnormal stop on a 5.2.0+ "
                                                  "broker drops the consume-queue units of its last data file's "
                                                  "tail (dledgerRecoverAbnormally): those messages stay in the log "
                                                  "but this peer no longer indexes them"),
    "ROCKETMQ_DLEDGER_INDEX_MISMATCH": Code(E, "a DLedger index record disagrees with the data entry of its index "
                                               "(magic, pos, size, index, term), is missing, or outlives the data"),
    "ROCKETMQ_TIMER_LOG_INVALID": Code(E, "timer-log unit malformed or not pointing at its timer message"),
    "ROCKETMQ_TIMER_WHEEL_INVALID": Code(E, "timer wheel size, slot place, positions or slot chain wrong"),
    "ROCKETMQ_TIMER_CHECKPOINT_INVALID": Code(E, "timer checkpoint (config/timercheck) malformed or missing"),
    "ROCKETMQ_TIMER_MESSAGE_LOST": Code(W, "a timer-log unit's message is past the recovered commit-log end: "
                                           "its scheduled delivery is lost"),
}


def _lookup(code: str) -> Code:
    try:
        return CODES[code]
    except KeyError:
        raise KeyError(f"finding code {code!r} is not registered in formats.codes") from None


def severity_of(code: str) -> str:
    return _lookup(code).severity


def explain(code: str) -> str:
    return _lookup(code).explanation
