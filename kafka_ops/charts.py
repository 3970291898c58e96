"""Broker load before and after a plan, as a picture.

A table of 200 brokers is unreadable; bars side by side show at a glance which brokers a plan
relieves and which it fills. matplotlib is imported lazily (Agg, no display) so the library
stays light for callers that never draw.
"""

from __future__ import annotations

from pathlib import Path

from kafka_ops.model import ClusterModel

GiB = 1024**3


def broker_loads(model: ClusterModel) -> dict[str, list[float]]:
    """Per broker (in id order): replica count, leader count, disk GiB, bytes-in MiB/s."""
    replicas: list[float] = []
    leaders: list[float] = []
    disk: list[float] = []
    bytes_in: list[float] = []
    for b in model.brokers:
        parts = model.partitions_on(b)
        replicas.append(len(parts))
        leaders.append(sum(1 for p in parts if p.leader == b))
        disk.append(sum(p.size_bytes for p in parts) / GiB)
        bytes_in.append(sum(p.bytes_in_per_sec for p in parts) / 1024**2)
    return {"replicas": replicas, "leaders": leaders, "disk GiB": disk, "bytes in MiB/s": bytes_in}


def load_panels(
    before: ClusterModel, after: ClusterModel
) -> dict[str, tuple[list[float], list[float]]]:
    """Per load kind, before and after values over the brokers of ``before``.

    Kinds the cluster reports nothing for (traffic rates read through ZooKeeper or the Admin
    API, which carry none) are left out rather than drawn as empty panels.
    """
    old = broker_loads(before)
    new = broker_loads(after.with_brokers(before.brokers.values()))
    kinds = [k for k in old if any(old[k]) or any(new[k])] or ["replicas"]
    return {k: (old[k], new[k]) for k in kinds}


def plot_broker_load(
    before: ClusterModel, after: ClusterModel, path: str | Path, title: str = "Broker load"
) -> Path:
    """Write a PNG with one panel per load kind (see load_panels), before and after bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ids = list(before.brokers)
    panels = load_panels(before, after)
    fig, axes = plt.subplots(
        len(panels), 1, figsize=(max(8, len(ids) * 0.12 + 4), 2.6 * len(panels)), squeeze=False
    )
    axes = axes[:, 0]
    positions = range(len(ids))
    width = 0.42
    for ax, (kind, (old, new)) in zip(axes, panels.items(), strict=True):
        ax.bar([x - width / 2 for x in positions], old, width, label="before", color="#c0504d")
        ax.bar([x + width / 2 for x in positions], new, width, label="after", color="#4f81bd")
        ax.set_ylabel(kind)
        ax.margins(x=0.01)
        step = max(1, len(ids) // 40)
        ax.set_xticks(list(positions)[::step], [str(b) for b in ids][::step], fontsize=7)
    axes[0].legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=2, frameon=False)
    axes[0].set_title(title, loc="left")
    axes[-1].set_xlabel("broker id")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out
