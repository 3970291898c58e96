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
    replicas, leaders, disk, bytes_in = [], [], [], []
    for b in model.brokers:
        parts = model.partitions_on(b)
        replicas.append(len(parts))
        leaders.append(sum(1 for p in parts if p.leader == b))
        disk.append(sum(p.size_bytes for p in parts) / GiB)
        bytes_in.append(sum(p.bytes_in_per_sec for p in parts) / 1024**2)
    return {"replicas": replicas, "leaders": leaders, "disk GiB": disk, "bytes in MiB/s": bytes_in}


def plot_broker_load(
    before: ClusterModel, after: ClusterModel, path: str | Path, title: str = "Broker load"
) -> Path:
    """Write a PNG with one panel per load kind, before and after bars per broker."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ids = list(before.brokers)
    old, new = broker_loads(before), broker_loads(after.with_brokers(before.brokers.values()))
    fig, axes = plt.subplots(len(old), 1, figsize=(max(8, len(ids) * 0.12 + 4), 2.6 * len(old)))
    positions = range(len(ids))
    width = 0.42
    for ax, kind in zip(axes, old):
        ax.bar([x - width / 2 for x in positions], old[kind], width, label="before", color="#c0504d")
        ax.bar([x + width / 2 for x in positions], new[kind], width, label="after", color="#4f81bd")
        ax.set_ylabel(kind)
        ax.margins(x=0.01)
        step = max(1, len(ids) // 40)
        ax.set_xticks(list(positions)[::step], [str(b) for b in ids][::step], fontsize=7)
    axes[0].legend(loc="upper right")
    axes[0].set_title(title)
    axes[-1].set_xlabel("broker id")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out
