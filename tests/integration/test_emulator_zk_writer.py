"""The ZooKeeper face's writer on a real ZooKeeper: coalesced, batched, never dropped."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from kafka_ops.emulator.zk_writer import Disconnected, ZkWriter

pytestmark = pytest.mark.zookeeper


@pytest.fixture
def zk(zk_connect: str) -> Iterator[KazooClient]:
    client = KazooClient(hosts=zk_connect)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


def test_sets_are_coalesced_but_versioned_znodes_are_written_every_time(zk):
    writer = ZkWriter(lambda: zk, timeout=15)
    writer.create("/topic", b"0")
    writer.create("/state", b"0")
    calls = []

    def encode(n: int):
        def data() -> bytes:
            calls.append(n)
            return str(n).encode()
        return data

    for n in range(1, 101):
        writer.set("/topic", encode(n))
        writer.set("/state", str(n).encode(), coalesce=False)
    assert len(writer) == 2 + 1 + 100
    writer.flush()
    assert zk.get("/topic")[0] == b"100" and zk.exists("/topic").version == 1
    assert calls == [100]  # encoded once, when sent
    assert zk.get("/state")[0] == b"100" and zk.exists("/state").version == 100
    assert len(writer) == 0 and writer.transactions == 1


def test_thousands_of_writes_go_in_few_transactions_in_order(zk):
    writer = ZkWriter(lambda: zk, timeout=15)
    writer.create("/p")
    for n in range(3000):
        writer.create(f"/p/{n}", str(n).encode())
    for n in range(3000):
        writer.set(f"/p/{n}", b"x" * 100)
    writer.delete("/p/0")
    writer.flush()
    assert len(zk.get_children("/p")) == 2999 and zk.get("/p/2999")[0] == b"x" * 100
    assert writer.transactions <= 20


def test_a_rolled_back_transaction_is_written_one_by_one(zk):
    zk.create("/exists", b"old")
    writer = ZkWriter(lambda: zk, timeout=15)
    writer.create("/new", b"n")
    writer.create("/exists", b"new")  # NodeExists rolls the whole transaction back
    writer.delete("/missing")  # NoNode: nothing to do
    writer.flush()
    assert zk.get("/new")[0] == b"n" and zk.get("/exists")[0] == b"new"


def test_writes_are_kept_when_the_connection_is_gone(zk_connect):
    client = KazooClient(hosts=zk_connect)
    client.start(timeout=15)
    writer = ZkWriter(lambda: client, timeout=15)
    writer.create("/kept", b"1")
    client.stop()  # every request now fails with a connection error
    with pytest.raises(Disconnected):
        writer.flush()
    assert len(writer) == 1
    client.start(timeout=15)
    try:
        writer.flush()
        assert client.get("/kept")[0] == b"1"
    finally:
        client.stop()
        client.close()
