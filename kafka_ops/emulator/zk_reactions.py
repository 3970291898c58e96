"""The ZooKeeper face's controller reactions: znode changes -> the emulated controller's calls.

Like Kafka's ControllerEventManager: an admin znode created (reassignment, preferred election),
a topic znode added or rewritten, a config change notice, or ``/controller`` deleted (a
failover: a new controller re-reads every topic znode) becomes a call on ``EmulatedCluster``.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import EventType

from kafka_ops.backends.zk_paths import (
    CONFIG_CHANGES,
    CONTROLLER,
    LOG_DIR_EVENTS,
    PREFERRED_REPLICA_ELECTION,
    REASSIGN_PARTITIONS,
    TOPICS,
    Assignment,
    parse_topic,
)
from kafka_ops.emulator.kafka_errors import KafkaError
from kafka_ops.emulator.zk_mirror import ZkMirror
from kafka_ops.model import TopicPartition

log = logging.getLogger("kafka_ops.emulator.zk_face")

def notice_sequence(name: str) -> int:
    try:
        return int(name.rsplit("_", 1)[-1])
    except ValueError:
        return -1


def _notice_entity(data: dict) -> tuple[str, str]:
    if data.get("version") == 2:
        entity_type, _, name = data["entity_path"].partition("/")
        return entity_type, name
    return data["entity_type"], data["entity_name"]


class ZkReactions(ZkMirror):
    """ZooKeeper notifications -> controller actions, for ``ZooKeeperFace`` (a mixin)."""

    def _react(self, name: str, detail: Any) -> None:
        if name == "reassign":
            if self._register_and_check(REASSIGN_PARTITIONS, "reassign"):
                self._process_reassign_znode()
        elif name == "preferred":
            if self._register_and_check(PREFERRED_REPLICA_ELECTION, "preferred"):
                self._process_preferred_election()
        elif name == "controller":
            stat = self.client.exists(CONTROLLER, watch=self._watch("controller"))
            if detail == EventType.DELETED:
                if self._deleting_controller:
                    self._deleting_controller = False
                elif stat is None:
                    self._failover()
        elif name == "topics":
            self._process_topic_children()
        elif name == "topic":
            self._process_topic_change(detail)
        elif name == "notices":
            self._process_notices()
        elif name == "log_dir_events":
            self._process_log_dir_events()

    def _process_log_dir_events(self) -> None:
        """Kafka's LogDirEventNotificationHandler: each notice names a broker whose replicas
        in failed directories go offline; processed notices are deleted."""
        children = sorted(self.client.get_children(LOG_DIR_EVENTS, watch=self._watch("log_dir_events")))
        for name in children:
            path = f"{LOG_DIR_EVENTS}/{name}"
            try:
                data, _ = self.client.get(path)
                broker = int(json.loads(data)["broker"])
            except NoNodeError:
                continue
            except (ValueError, KeyError, TypeError) as e:
                log.warning("ignoring unreadable log dir event %s: %s", path, e)
            else:
                self.cluster.handle_log_dir_event(broker)
            try:
                self.client.delete(path)
            except NoNodeError:
                pass

    def _register_and_check(self, path: str, name: str) -> bool:
        """Kafka's registerZNodeChangeHandlerAndCheckExistence: re-arm the watch and read
        existence in one call, whatever event woke us. True when the znode exists and is
        not the one already acted on (its czxid tells a re-creation from a data change,
        which Kafka's handlers ignore)."""
        stat = self.client.exists(path, watch=self._watch(name))
        if stat is None or self._seen.get(path) == stat.czxid:
            return False
        self._seen[path] = stat.czxid
        return True

    def _process_reassign_znode(self) -> None:
        try:
            raw, _ = self.client.get(REASSIGN_PARTITIONS)
        except NoNodeError:
            return
        targets = self._read_reassignment(raw)
        if not targets:
            return
        results = self.cluster.alter_reassignments(dict(targets), source="zk")
        failed = {tp: e for tp, e in results.items() if e is not None}
        if failed:
            log.warning("Failed reassignment through zk with the following errors: %s",
                        {str(tp): e.message for tp, e in failed.items()})
            self._remove_from_reassign_znode(lambda tp, _: tp in failed)

    def _process_preferred_election(self) -> None:
        try:
            raw, _ = self.client.get(PREFERRED_REPLICA_ELECTION)
            data = json.loads(raw)
            wanted = [TopicPartition(e["topic"], int(e["partition"]))
                      for e in data["partitions"]]
        except NoNodeError:
            return
        except (ValueError, TypeError, KeyError) as e:
            log.warning("Ignoring preferred replica election due to invalid json: %s", e)
            wanted = []
        if wanted:
            results = self.cluster.elect_leaders(0, wanted)
            log.info("preferred replica election: %s",
                     {str(tp): e.name if e else "NONE" for tp, e in results.items()})
        # Kafka writes the new leaders, then deletes the znode: the election's events are
        # queued already, so the deletion queued behind them is written after them.
        self._queue.put(("call", lambda: self._writer.delete(PREFERRED_REPLICA_ELECTION)))

    def _process_topic_children(self) -> None:
        children = self.client.get_children(TOPICS, watch=self._watch("topics"))
        for topic in sorted(set(children) - set(self._assignments) - self._bad_topics):
            self._create_topic_from_znode(topic)

    def _create_topic_from_znode(self, topic: str) -> None:
        """AdminZkClient wrote /config/topics/<t> then /brokers/topics/<t>: create partitions."""
        try:
            raw, _ = self.client.get(f"{TOPICS}/{topic}", watch=self._topic_watch(topic))
            topic_id, partitions = parse_topic(raw)
        except NoNodeError:
            return
        except (ValueError, TypeError) as e:
            log.error("Ignoring topic %s: invalid topic znode: %s", topic, e)
            self._bad_topics.add(topic)
            return
        config = self._read_config("topics", topic)
        self._configs[("topics", topic)] = config
        try:
            self.cluster.create_topic(topic, {p: a[0] for p, a in partitions.items()}, config,
                                      topic_id=topic_id)
        except KafkaError as e:
            log.error("Cannot create topic %s from its znode: %s", topic, e.message)
            self._bad_topics.add(topic)
            return
        self._assignments[topic] = {p: (a[0], [], []) for p, a in partitions.items()}

    def _process_topic_change(self, topic: str) -> None:
        try:
            raw, _ = self.client.get(f"{TOPICS}/{topic}", watch=self._topic_watch(topic))
            _, partitions = parse_topic(raw)
        except NoNodeError:
            return
        except (ValueError, TypeError) as e:
            log.error("Ignoring invalid topic znode %s/%s: %s", TOPICS, topic, e)
            return
        known = self._assignments.get(topic)
        if known is None:
            return
        added = {p: a[0] for p, a in partitions.items() if p not in known}
        if not added:
            return  # our own write, or edits the running controller ignores
        try:
            self.cluster.create_partitions(topic, added)
        except KafkaError as e:
            log.error("Skipping adding partitions %s for topic %s: %s", sorted(added), topic,
                      e.message)
            self._write_topic(topic)  # restore the assignment the controller holds

    def _read_config(self, entity_type: str, name: str) -> dict[str, str]:
        try:
            raw, _ = self.client.get(f"/config/{entity_type}/{name}")
            data = json.loads(raw)
            config = data.get("config", {}) if isinstance(data, dict) else {}
            return {str(k): str(v) for k, v in config.items()}
        except NoNodeError:
            return {}
        except (ValueError, TypeError, AttributeError) as e:
            log.warning("Ignoring invalid config znode /config/%s/%s: %s", entity_type, name, e)
            return {}

    def _process_notices(self) -> None:
        children = self.client.get_children(CONFIG_CHANGES, watch=self._watch("notices"))
        for name in sorted(children, key=notice_sequence):
            seq = notice_sequence(name)
            if seq <= self._last_notice:
                continue
            self._last_notice = seq
            try:
                raw, _ = self.client.get(f"{CONFIG_CHANGES}/{name}")
                entity_type, entity_name = _notice_entity(json.loads(raw))
            except NoNodeError:
                continue
            except (ValueError, TypeError, KeyError) as e:
                log.warning("Ignoring invalid config change notification %s: %s", name, e)
                continue
            self._apply_config(entity_type, entity_name)

    def _apply_config(self, entity_type: str, name: str) -> None:
        if entity_type not in ("topics", "brokers"):
            return
        config = self._read_config(entity_type, name)
        self._configs[(entity_type, name)] = config
        try:
            if entity_type == "topics":
                if self.cluster.topic_config(name) != config:
                    self.cluster.set_topic_config(name, config)
            else:
                broker = None if name == "<default>" else int(name)
                if self.cluster.broker_config(broker) != config:
                    self.cluster.set_broker_config(broker, config)
        except (KafkaError, ValueError) as e:
            log.warning("Ignoring config of %s/%s: %s", entity_type, name,
                        getattr(e, "message", e))

    def _failover(self) -> None:
        """/controller deleted: elect, then load the topic znodes as a new controller does.

        The znodes are read first; the election and the load then happen under the cluster's
        lock, so no replication step lands between them (Kafka's new controller handles
        nothing else until it has loaded). Each changed znode is loaded with what this face
        last wrote for it, which tells an operator's edit from a change not yet mirrored."""
        log.info("controller znode deleted: electing a new controller")
        reads = [(t, self.client.get_async(f"{TOPICS}/{t}")) for t in self._assignments]
        changed: dict[TopicPartition, tuple[Assignment, Assignment]] = {}
        for topic, result in reads:
            try:
                _, partitions = parse_topic(result.get(timeout=self.timeout)[0])
            except (NoNodeError, ValueError, TypeError) as e:
                log.error("failover: cannot read topic %s: %r", topic, e)
                continue
            known = self._assignments[topic]
            for p, assignment in partitions.items():
                if p in known and known[p] != assignment:
                    changed[TopicPartition(topic, p)] = (known[p], assignment)
        with self.cluster.lock:
            self.cluster.controller_failover()
            self.cluster.load_assignments(changed)
        if self.client.exists(REASSIGN_PARTITIONS):
            self._process_reassign_znode()
