"""Values of the group coordinator's newer `__consumer_offsets` records, by record type (the key's version).

Types 3-8 are consumer groups (KIP-848), 10-15 share groups (KIP-932; 9, ShareGroupPartitionMetadata, has no value
schema in 4.4 and stays raw), 16 a consumer group's regular expression and
17-23 Streams groups (KIP-1071); 18 is unused. Every schema is transcribed from the group coordinator's
`common/message/<Name>Value.json`, as shipped in `kafka-group-coordinator-4.4.0.jar` (the broker lab's jar; those
files are also in apache/kafka under group-coordinator/src/main/resources/common/message/). Each is valid in version
0 only and flexible from version 0, so a tagged field a newer broker adds is kept as `unknownTaggedFields` rather
than failing the record.
"""
from __future__ import annotations

from replog.formats.kafka.internal.protocol import (
    BYTES,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT16,
    UUID,
    Array,
    Field,
    Message,
    Struct,
)


def _value(name: str, *fields: Field) -> Message:
    return Message(name, tuple(fields), valid="0", flexible="0+")


_TOPIC_PARTITIONS = Struct("TopicPartitions", (Field("topicId", UUID), Field("partitions", Array(INT32))))
# A consumer group member's current assignment also records the epoch each partition was assigned at (4.4).
_ASSIGNED_PARTITIONS = Struct("TopicPartitions", (
    Field("topicId", UUID), Field("partitions", Array(INT32)),
    Field("assignmentEpochs", Array(INT32), nullable="0+", tag=0, default=None)))
_KEY_VALUE = Struct("KeyValue", (Field("key", STRING), Field("value", STRING)))

# Fields the three kinds of group declare alike, declared once (the spec files named are the group coordinator's
# common/message/*.json, apache/kafka group-coordinator/src/main/resources/common/message/, as of 4.4.0):
# - a member's client: RackId (nullable), ClientId, ClientHost, in {Consumer,Share,Streams}GroupMemberMetadataValue,
#   the consumer and Streams ones after InstanceId (nullable); SubscribedTopicNames follows in the consumer and share
#   ones, RebalanceTimeoutMs (default -1) in the consumer and Streams ones
_INSTANCE_ID = Field("instanceId", STRING, nullable="0+")
_CLIENT = (Field("rackId", STRING, nullable="0+"), Field("clientId", STRING), Field("clientHost", STRING))
_SUBSCRIBED_TOPIC_NAMES = Field("subscribedTopicNames", Array(STRING))
_REBALANCE_TIMEOUT = Field("rebalanceTimeoutMs", INT32, default=-1)
# - a member's epochs and state: MemberEpoch, PreviousMemberEpoch, State, first in
#   {Consumer,Share,Streams}GroupCurrentMemberAssignmentValue
_MEMBER_EPOCHS = (Field("memberEpoch", INT32), Field("previousMemberEpoch", INT32), Field("state", INT8))
# - the whole of {Consumer,Share,Streams}GroupTargetAssignmentMetadataValue: AssignmentEpoch, then the tagged
#   AssignmentTimestamp (tag 0, default 0)
_TARGET_ASSIGNMENT = (Field("assignmentEpoch", INT32), Field("assignmentTimestamp", INT64, tag=0, default=0))
# - Epoch and MetadataHash first in {Share,Streams}GroupMetadataValue (ConsumerGroupMetadataValue tags its hash)
_GROUP_EPOCH = (Field("epoch", INT32), Field("metadataHash", INT64))

# --- consumer groups (KIP-848) --------------------------------------------------------------------------------------

_CONSUMER_GROUPS = {
    3: _value("ConsumerGroupMetadataValue", Field("epoch", INT32), Field("metadataHash", INT64, tag=0, default=0)),
    4: _value("ConsumerGroupPartitionMetadataValue", Field("topics", Array(Struct("TopicMetadata", (
        Field("topicId", UUID), Field("topicName", STRING), Field("numPartitions", INT32),
        Field("partitionMetadata", Array(Struct("PartitionMetadata", (
            Field("partition", INT32), Field("racks", Array(STRING)))))),
    ))))),
    5: _value(
        "ConsumerGroupMemberMetadataValue",
        _INSTANCE_ID,
        *_CLIENT,
        _SUBSCRIBED_TOPIC_NAMES,
        Field("subscribedTopicRegex", STRING, nullable="0+"),
        _REBALANCE_TIMEOUT,
        Field("serverAssignor", STRING, nullable="0+"),
        Field("classicMemberMetadata", Struct("ClassicMemberMetadata", (
            Field("sessionTimeoutMs", INT32),
            Field("supportedProtocols", Array(Struct("ClassicProtocol", (
                Field("name", STRING), Field("metadata", BYTES))))),
        )), nullable="0+", tag=0, default=None),
    ),
    6: _value("ConsumerGroupTargetAssignmentMetadataValue", *_TARGET_ASSIGNMENT),
    7: _value("ConsumerGroupTargetAssignmentMemberValue", Field("topicPartitions", Array(_TOPIC_PARTITIONS))),
    8: _value(
        "ConsumerGroupCurrentMemberAssignmentValue",
        *_MEMBER_EPOCHS,
        Field("assignedPartitions", Array(_ASSIGNED_PARTITIONS)),
        Field("partitionsPendingRevocation", Array(_ASSIGNED_PARTITIONS)),
    ),
}

# --- share groups (KIP-932) -----------------------------------------------------------------------------------------

_SHARE_TOPIC = (Field("topicId", UUID), Field("topicName", STRING))
_SHARE_PARTITIONS = Struct("TopicPartitionsInfo", (*_SHARE_TOPIC, Field("partitions", Array(INT32))))
_SHARE_GROUPS = {
    10: _value("ShareGroupMemberMetadataValue", *_CLIENT, _SUBSCRIBED_TOPIC_NAMES),
    11: _value("ShareGroupMetadataValue", *_GROUP_EPOCH),
    12: _value("ShareGroupTargetAssignmentMetadataValue", *_TARGET_ASSIGNMENT),
    13: _value("ShareGroupTargetAssignmentMemberValue", Field("topicPartitions", Array(_TOPIC_PARTITIONS))),
    14: _value(
        "ShareGroupCurrentMemberAssignmentValue",
        *_MEMBER_EPOCHS,
        Field("assignedPartitions", Array(_TOPIC_PARTITIONS)),
    ),
    15: _value(
        "ShareGroupStatePartitionMetadataValue",
        Field("initializingTopics", Array(_SHARE_PARTITIONS)),
        Field("initializedTopics", Array(_SHARE_PARTITIONS)),
        Field("deletingTopics", Array(Struct("TopicInfo", _SHARE_TOPIC))),
    ),
}

# --- a consumer group's regular expression (16) and Streams groups (KIP-1071, 17-23) ----------------------------------

_TASK_IDS = Struct("TaskIds", (
    Field("subtopologyId", STRING),
    Field("partitions", Array(INT32)),
    Field("assignmentEpochs", Array(INT32), nullable="0+", tag=0, default=None),
))
_TASKS = (Field("activeTasks", Array(_TASK_IDS)), Field("standbyTasks", Array(_TASK_IDS)),
          Field("warmupTasks", Array(_TASK_IDS)))
_TOPIC_INFO = Struct("TopicInfo", (
    Field("name", STRING),
    Field("partitions", INT32),
    Field("replicationFactor", INT16),
    Field("topicConfigs", Array(_KEY_VALUE)),
))
_SUBTOPOLOGY = Struct("Subtopology", (
    Field("subtopologyId", STRING),
    Field("sourceTopics", Array(STRING)),
    Field("sourceTopicRegex", Array(STRING)),
    Field("stateChangelogTopics", Array(_TOPIC_INFO)),
    Field("repartitionSinkTopics", Array(STRING)),
    Field("repartitionSourceTopics", Array(_TOPIC_INFO)),
    Field("copartitionGroups", Array(Struct("CopartitionGroup", (
        Field("sourceTopics", Array(INT16)),
        Field("sourceTopicRegex", Array(INT16)),
        Field("repartitionSourceTopics", Array(INT16)),
    )))),
))
_STREAMS_GROUPS = {
    16: _value("ConsumerGroupRegularExpressionValue",
               Field("topics", Array(STRING)), Field("version", INT64), Field("timestamp", INT64)),
    17: _value(
        "StreamsGroupMetadataValue",
        *_GROUP_EPOCH,
        Field("validatedTopologyEpoch", INT32, tag=0, default=-1),
        Field("lastAssignmentConfigs", Array(_KEY_VALUE), nullable="0+", tag=1, default=None),
        Field("storedDescriptionTopologyEpoch", INT32, tag=2, default=-1),
        Field("failedDescriptionTopologyEpoch", INT32, tag=3, default=-1),
    ),
    19: _value(
        "StreamsGroupMemberMetadataValue",
        _INSTANCE_ID,
        *_CLIENT,
        _REBALANCE_TIMEOUT,
        Field("topologyEpoch", INT32),
        Field("processId", STRING),
        Field("userEndpoint", Struct("Endpoint", (Field("host", STRING), Field("port", UINT16))),
              nullable="0+", default=None),
        Field("clientTags", Array(_KEY_VALUE)),
    ),
    20: _value("StreamsGroupTargetAssignmentMetadataValue", *_TARGET_ASSIGNMENT),
    21: _value("StreamsGroupTargetAssignmentMemberValue", *_TASKS),
    22: _value(
        "StreamsGroupCurrentMemberAssignmentValue",
        *_MEMBER_EPOCHS,
        *_TASKS,
        Field("activeTasksPendingRevocation", Array(_TASK_IDS)),
        Field("standbyTasksPendingRevocation", Array(_TASK_IDS)),
        Field("warmupTasksPendingRevocation", Array(_TASK_IDS)),
    ),
    23: _value("StreamsGroupTopologyValue", Field("epoch", INT32), Field("subtopologies", Array(_SUBTOPOLOGY))),
}

GROUP_VALUES: dict[int, Message] = {**_CONSUMER_GROUPS, **_SHARE_GROUPS, **_STREAMS_GROUPS}
