"""The synthetic cluster generator: deterministic, realistic skew, presets of the right size."""

import pytest

from kafka_ops.errors import ValidationError
from kafka_ops.generator import PRESETS, generate_cluster
from kafka_ops.snapshot import model_to_dict


def test_same_seed_same_cluster_and_other_seed_differs():
    a = generate_cluster("small", seed=7)
    b = generate_cluster("small", seed=7)
    c = generate_cluster("small", seed=8)
    assert model_to_dict(a) == model_to_dict(b)
    assert model_to_dict(a) != model_to_dict(c)


def test_medium_preset_has_the_documented_size():
    model = generate_cluster("medium", seed=1)
    spec = PRESETS["medium"]
    assert len(model.brokers) == 24
    assert len(model.partitions) == spec.partitions
    assert 26_000 <= model.replica_count <= 30_000


def test_new_brokers_are_empty_and_established_ones_are_not():
    model = generate_cluster("medium", seed=2)
    new = list(model.brokers)[-PRESETS["medium"].new_brokers:]
    assert all(model.partitions_on(b) == [] for b in new)
    assert all(model.partitions_on(b) for b in list(model.brokers)[: -len(new)])


def test_skew_is_realistic():
    """Partition counts and sizes are heavy-tailed, and replica counts per broker uneven."""
    model = generate_cluster("medium", seed=3)
    per_topic = sorted(len(p) for p in model.topics.values())
    assert per_topic[0] == 1 or per_topic[0] <= 3
    assert per_topic[-1] >= 20 * per_topic[len(per_topic) // 2] / 2
    sizes = sorted(p.size_bytes for p in model)
    assert sizes[-1] > 20 * sizes[len(sizes) // 2]
    counts = [len(model.partitions_on(b)) for b in model.brokers]
    established = [c for c in counts if c]
    assert max(established) - min(established) > 50


def test_replicas_are_distinct_and_racks_spread():
    model = generate_cluster("small", seed=4)
    for p in model:
        assert len(set(p.replicas)) == len(p.replicas)
        assert len({model.rack_of(b) for b in p.replicas}) == len(p.replicas)
        assert p.leader in p.replicas


def test_bad_presets_and_overrides_are_named():
    with pytest.raises(ValidationError, match="unknown preset 'huge'"):
        generate_cluster("huge")
    with pytest.raises(ValidationError, match="bad generator override"):
        generate_cluster("small", nonsense=1)
    with pytest.raises(ValidationError, match="established brokers"):
        generate_cluster("small", brokers=3, new_brokers=2)


def test_crowded_preset_has_hand_crowded_racks_with_spare_brokers_and_a_dead_broker():
    from collections import Counter

    model = generate_cluster("crowded-medium", seed=5)
    crowded = [p for p in model
               if max(Counter(model.rack_of(b) for b in p.replicas).values()) > 1]
    # About 5% of partitions had a follower moved into the leader's rack.
    assert 0.03 * len(model.partitions) < len(crowded) < 0.07 * len(model.partitions)
    dead = [b for b, broker in model.brokers.items() if not broker.alive]
    assert len(dead) == 1 and model.partitions_on(dead[0])
    assert all(p.leader != dead[0] for p in model)
    # Hand moves favour a few brokers: the most crowded-onto broker gets far more than average.
    onto = Counter(p.replicas[-1] for p in crowded)
    assert max(onto.values()) > 2 * len(crowded) / len(model.brokers)
