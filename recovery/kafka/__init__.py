"""Kafka replicas: leader-epoch cache, startup recovery, follower truncation and fetch."""
