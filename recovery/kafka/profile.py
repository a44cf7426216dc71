"""The cluster's profile: the settings that change the replication rules, read from the KRaft metadata log or stated.

A replay follows the brokers' rules, and a few of them depend on settings the
partition's files do not hold. The KRaft controller keeps them in its metadata
log, where `walk_metadata_log` (controller.py) reads them beside the partition's
elections, in the same walk:

* feature levels (`FeatureLevelRecord`, api key 12): `metadata.version`,
  `transaction.version`, `eligible.leader.replicas.version` ... The controller
  turns ELR on when `eligible.leader.replicas.version` is at least 1
  (`FeatureControlManager.isElrFeatureEnabled`, read in the 4.0.2 and 4.4.0
  jars); 3.9 needs metadata.version 4.0-IV0, which it does not ship
  (`MetadataVersion.isElrSupported`, apache/kafka branch 3.9), so a log without
  the feature has ELR off.
* configs (`ConfigRecord`, api key 4; a null value deletes): resource type 2 is
  a topic, type 4 a broker, whose name "" is the cluster-wide default
  (`ConfigResource.Type`). A topic's value wins over the cluster default; what
  neither holds comes from each broker's own server.properties, which the log
  does not hold (`ConfigurationControlManager` / `KafkaConfig`), so it is assumed:
  stated by an option, else Kafka's default.

Each value says where it came from: `metadata` (read), `option` (stated by the
user: `--min-insync-replicas`, `--elr/--no-elr`, `--remote-storage/--no-remote-storage`), `default` (assumed: Kafka's
default). An option that contradicts what the log says is a usage error.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from replog.formats.errors import ReplogError
from replog.recovery.kafka.controller import MetadataApplier, walk_metadata_log

MIN_ISR = "min.insync.replicas"
UNCLEAN = "unclean.leader.election.enable"
CLEANUP = "cleanup.policy"
REMOTE = "remote.storage.enable"
ELR_FEATURE = "eligible.leader.replicas.version"
ELR = "eligible.leader.replicas"            # the profile's name for "ELR on", from the feature level
RULE_CONFIGS = (MIN_ISR, UNCLEAN, CLEANUP, REMOTE)
DEFAULTS = {MIN_ISR: "1", UNCLEAN: "false", CLEANUP: "delete", REMOTE: "false"}   # Kafka's (TopicConfig docs)
METADATA, OPTION, DEFAULT = "metadata", "option", "default"
_CONFIG, _FEATURE = 4, 12
_TOPIC_RESOURCE, _BROKER_RESOURCE = 2, 4
# A broker-level default named otherwise than the topic config it stands in for (`ServerTopicConfigSynonyms`):
# the cluster default of cleanup.policy is `log.cleanup.policy`; min ISR and unclean election share the name.
_TOPIC_NAME_OF = {"log.cleanup.policy": CLEANUP}


@dataclass(frozen=True)
class Setting:
    """One value the rules use, and where it came from (`METADATA` read, `OPTION` stated, `DEFAULT` assumed)."""

    value: str
    source: str
    where: str

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "source": self.source, "where": self.where}


@dataclass
class ClusterProfile:
    """Feature levels and rule-changing configs as the metadata log left them, plus what options state."""

    features: dict[str, int] = field(default_factory=dict)
    topic_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    cluster_configs: dict[str, str] = field(default_factory=dict)
    assumed: dict[str, str] = field(default_factory=dict)     # stated by options: config key or ELR -> value
    path: str | None = None                                  # the metadata log read (None: none at hand)

    def topic_config(self, topic: str, key: str) -> str | None:
        """The topic's value in the log, else the cluster-wide default's, else None (not in the log)."""
        own = self.topic_configs.get(topic, {})
        return own[key] if key in own else self.cluster_configs.get(key)

    def setting(self, topic: str, key: str) -> Setting:
        """`key` for `topic`: read, else stated, else Kafka's default."""
        scope = "topic" if key in self.topic_configs.get(topic, {}) else "cluster default"
        read, stated = self.topic_config(topic, key), self.assumed.get(key)
        why = "not in the metadata log (a broker's server.properties decides)" if self.path else "no metadata log"
        return _decided(read, f"{scope} config in {self.path}", stated,
                        f"the metadata log ({self.path}) sets {key}={read} for {topic} ({scope} config); "
                        f"the option stating {stated} contradicts it",
                        Setting(DEFAULTS[key], DEFAULT, f"Kafka's default, assumed: {why}"))

    def known(self, topic: str, key: str) -> str | None:
        """`key` for `topic` when read or stated; None where only Kafka's default would be assumed."""
        got = self.setting(topic, key)
        return None if got.source == DEFAULT else got.value

    def min_insync_replicas(self, topic: str) -> int:
        got = self.setting(topic, MIN_ISR)
        try:
            value = int(got.value)
        except ValueError:
            value = 0
        if value < 1:
            raise ReplogError(f"{MIN_ISR}={got.value!r} ({got.where}) is not a positive integer")
        return value

    def flag(self, topic: str, key: str) -> bool:
        return self.setting(topic, key).value.strip().lower() == "true"

    def elr(self) -> Setting:
        """ELR on or off: the feature level read, else stated (`--elr/--no-elr`), else off (assumed)."""
        level = self.features.get(ELR_FEATURE, 0)
        on = "true" if level >= 1 else "false"
        return _decided(None if self.path is None else on, f"feature {ELR_FEATURE}={level} in {self.path}",
                        self.assumed.get(ELR),
                        f"the metadata log ({self.path}) has {ELR_FEATURE}={level} (ELR "
                        f"{'on' if on == 'true' else 'off'}); the option stating otherwise contradicts it",
                        Setting("false", DEFAULT,
                                "assumed off: no metadata log (ZooKeeper mode and 3.x clusters have none)"))

    @property
    def elr_enabled(self) -> bool:
        return self.elr().value == "true"

    def to_dict(self, topic: str) -> dict[str, Any]:
        """What the replay used, each value with its source; `read` and `assumed` name the keys of each kind."""
        settings = {key: self.setting(topic, key) for key in RULE_CONFIGS} | {ELR: self.elr()}
        return {"path": self.path, "features": dict(sorted(self.features.items())),
                "settings": {k: s.to_dict() for k, s in settings.items()},
                "read": [k for k, s in settings.items() if s.source == METADATA],
                "assumed": [k for k, s in settings.items() if s.source != METADATA]}


class ProfileApplier(MetadataApplier):
    """Collects feature levels and the rule configs of topics and the cluster default from the metadata log."""

    wanted = frozenset({_CONFIG, _FEATURE})

    def __init__(self) -> None:
        super().__init__()
        self.profile = ClusterProfile()

    def apply(self, api_key: int, data: dict[str, Any], offset: int | None, record: str) -> None:
        if api_key == _FEATURE:
            self.profile.features[data["name"]] = int(data["featureLevel"])
            return
        kind, name, key, value = data["resourceType"], data["resourceName"], data["name"], data["value"]
        if kind == _BROKER_RESOURCE:
            key = _TOPIC_NAME_OF.get(key, key)
        if key not in RULE_CONFIGS:
            return
        if kind == _TOPIC_RESOURCE:
            target = self.profile.topic_configs.setdefault(name, {})
        elif kind == _BROKER_RESOURCE and name == "":
            target = self.profile.cluster_configs
        else:
            return   # one broker's own dynamic config: that broker's, not the cluster's rule
        if value is None:
            target.pop(key, None)
        else:
            target[key] = value

    def result(self, path: str, assumed: dict[str, str] | None = None) -> ClusterProfile:
        """The profile read from the metadata log at `path`, with the options' values beside it."""
        self.profile.path = path
        self.profile.assumed = dict(assumed or {})
        return self.profile


def stated(min_insync_replicas: int | None = None, elr: bool | None = None,
           cleanup_policy: str | None = None, remote_storage: bool | None = None) -> dict[str, str]:
    """The options as profile values (`ClusterProfile.assumed`)."""
    out: dict[str, str] = {}
    if remote_storage is not None:
        out[REMOTE] = "true" if remote_storage else "false"
    if cleanup_policy is not None:
        out[CLEANUP] = cleanup_policy
    if min_insync_replicas is not None:
        if min_insync_replicas < 1:
            raise ReplogError(f"--min-insync-replicas {min_insync_replicas}: must be at least 1")
        out[MIN_ISR] = str(min_insync_replicas)
    if elr is not None:
        out[ELR] = "true" if elr else "false"
    return out


def read_profile(metadata_dir: str | os.PathLike[str], assumed: dict[str, str] | None = None) -> ClusterProfile:
    """The profile in a KRaft metadata log dir (or a log dir holding one), with the options' values beside it."""
    applier = ProfileApplier()
    return applier.result(str(walk_metadata_log(metadata_dir, [applier])), assumed)


def _decided(read: str | None, where: str, stated: str | None, contradiction: str, default: Setting) -> Setting:
    """One precedence for every setting: what the metadata log holds (`read`, from `where`; an option stating
    another value is an error, `contradiction`), else what an option states, else `default` (assumed)."""
    if read is not None:
        if stated is not None and stated != read:
            raise ReplogError(contradiction)
        return Setting(read, METADATA, where)
    if stated is not None:
        return Setting(stated, OPTION, "stated by option")
    return default
