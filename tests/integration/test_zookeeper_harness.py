"""The ZooKeeper fixture itself: a real server, reachable, chroots isolated."""

from kazoo.client import KazooClient


def test_chroots_are_isolated(zookeeper_server, zk_connect):
    client = KazooClient(hosts=zk_connect)
    client.start(timeout=15)
    try:
        client.ensure_path("/brokers/ids")
        client.create("/brokers/ids/1", b"x", ephemeral=True)
        assert client.get_children("/brokers/ids") == ["1"]
    finally:
        client.stop()
        client.close()
    root = KazooClient(hosts=zookeeper_server.connect_string)
    root.start(timeout=15)
    try:
        assert not root.exists("/brokers")
        chroot = zk_connect[len(zookeeper_server.connect_string):]
        assert root.exists(chroot + "/brokers/ids")
    finally:
        root.stop()
        root.close()
