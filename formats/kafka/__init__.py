"""Kafka on-disk formats: record batches, legacy messages, indexes, snapshots, checkpoints."""
