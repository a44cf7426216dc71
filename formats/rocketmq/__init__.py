"""RocketMQ store formats: commitlog, consumequeue, index files, checkpoint, epoch file."""
