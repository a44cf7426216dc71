"""RocketMQ stores: recovery, classic HA and auto-switch HA."""
