"""KV events from a real master (docs/operations.md, "KV events"): every event kind decoded by
kvpool.kv_events and matched to the put, removal, eviction or tier move that caused it; a
subscriber that never reads; replays of live and of long-gone sequence numbers; a new sequence
after a master failover."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import time
import urllib.request

import pytest

zmq = pytest.importorskip("zmq", reason="python3-zmq is not installed (scripts/install-deps.sh)")
pytest.importorskip("msgpack", reason="python3-msgpack is not installed")

import kvpool  # noqa: E402
from conftest import Pool, Proc, etcd_server, free_port, wait_for_port  # noqa: E402
from kvpool import KVPoolStore  # noqa: E402
from kvpool.kv_events import (AllBlocksCleared, BlockRemoved, BlockStored,  # noqa: E402
                              KvEventReplayError, KvEventSubscriber)

MIB = 1 << 20


def sglang_key(i: int) -> tuple[str, bytes]:
    """An SGLang page key ("<sha256 hex>_<rank>_k") and the block hash it carries."""
    digest = hashlib.sha256(f"page-{i}".encode()).digest()
    return f"{digest.hex()}_0_k", digest


class Events:
    """A master publishing events, its subscriber and everything received so far."""

    def __init__(self, replay_buffer=10000, extra=()):
        self.pub, self.replay_port, self.http = free_port(), free_port(), free_port()
        self.pool = Pool(master_flags=[
            "--kv_events_endpoint", f"tcp://127.0.0.1:{self.pub}",
            "--kv_events_replay_endpoint", f"tcp://127.0.0.1:{self.replay_port}",
            "--kv_events_replay_buffer", str(replay_buffer), "--eviction_min_age_ms", "0",
            *extra], metrics_port=self.http)
        self.sub = KvEventSubscriber(f"tcp://127.0.0.1:{self.pub}",
                                     f"tcp://127.0.0.1:{self.replay_port}")
        time.sleep(0.3)  # ZMQ's slow joiner: the subscription reaches the master
        self.batches = []

    def until(self, pred, timeout=15.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if pred(self):
                return
            b = self.sub.recv(100)
            if b is not None:
                self.batches.append(b)
        raise AssertionError(f"condition not met; got {self.batches}")

    def hashes(self, kind, medium=None, topic=None) -> list:
        out = []
        for b in self.batches:
            if topic is not None and b.topic != topic:
                continue
            for e in b.events:
                if isinstance(e, kind) and (medium is None or e.medium == medium):
                    out.extend(e.block_hashes)
        return out

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.http}/metrics", timeout=5) as r:
            return r.read().decode()

    def close(self):
        self.sub.close()
        self.pool.stop()


@pytest.fixture
def events():
    e = Events()
    yield e
    e.close()


def page(key: str, n: int = MIB) -> bytes:
    return (key.encode() * (n // len(key) + 1))[:n]


def test_every_event_kind_matches_its_cause(events, tmp_path):
    s = KVPoolStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", "8mb", 0, "tcp", "",
                   events.pool.master_address, enable_ssd_offload=True,
                   ssd_offload_path=str(tmp_path), ssd_offload_size="64mb") == 0, \
        kvpool.last_error()
    try:
        keys = [sglang_key(i) for i in range(16)]  # twice the 8 MB segment
        for i, (k, _) in enumerate(keys):
            assert s.put(k, page(k)) == 0, kvpool.last_error()
            end = time.monotonic() + 20  # paced: each page reaches the disk tier first
            while time.monotonic() < end and s.stat()["disk_replicas"] < i + 1:
                time.sleep(0.01)
        want = [h for _, h in keys]
        # Stored on DRAM at put end, copied to DISK, and (moved) evicted from DRAM for room.
        events.until(lambda e: set(want) <= set(e.hashes(BlockStored, "DRAM")) and
                     set(want) <= set(e.hashes(BlockStored, "DISK")))
        events.until(lambda e: any(b.topic.startswith("kvpool.evicted.") for b in e.batches))
        evicted = [h for b in events.batches if b.topic.startswith("kvpool.evicted.")
                   for ev in b.events if isinstance(ev, BlockRemoved) for h in ev.block_hashes]
        assert evicted and set(evicted) <= set(want)
        assert all(ev.medium == "DRAM" for b in events.batches if b.topic.startswith(
            "kvpool.evicted.") for ev in b.events)
        # The first batch of a publisher starts with AllBlocksCleared (resync marker), seq 0.
        assert events.batches[0].seq == 0
        assert isinstance(events.batches[0].events[0], AllBlocksCleared)
        seqs = [b.seq for b in events.batches]
        assert seqs == list(range(len(seqs))), seqs  # per publisher, no gap
        stored = next(e for b in events.batches for e in b.events if isinstance(e, BlockStored))
        assert stored.parent_block_hash is None and stored.token_ids == []

        # A client's removal: the object leaves every medium it was on, on the plain topic.
        k0, h0 = keys[0]
        assert s.remove(k0) == 0
        events.until(lambda e: h0 in e.hashes(BlockRemoved, "DISK", topic="kvpool"))

        # A key that carries no hash: XXH3-64 of the key, top bit clear (an int).
        assert s.put("plain key, no hash", b"x" * 100) == 0
        events.until(lambda e: any(isinstance(h, int) for h in e.hashes(BlockStored, "DRAM")))
        ints = [h for h in events.hashes(BlockStored, "DRAM") if isinstance(h, int)]
        assert len(ints) == 1 and 0 <= ints[0] < 2**63
    finally:
        s.close()
    m = events.metrics()
    assert "kvpool_master_kv_events_published_total" in m
    assert "kvpool_master_kv_events_dropped_total 0" in m


def test_replay_serves_recent_batches_and_names_a_gone_range():
    ev = Events(replay_buffer=4)
    s = KVPoolStore()
    try:
        ev.pool.add_node("64MB")
        assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "",
                       ev.pool.master_address) == 0, kvpool.last_error()
        for i in range(10):  # one put end, one batch each (the publisher sends every ~10 ms)
            k, _ = sglang_key(100 + i)
            assert s.put(k, b"v" * 1000) == 0, kvpool.last_error()
            time.sleep(0.05)
        ev.until(lambda e: len(e.batches) >= 10)
        last = ev.batches[-1].seq
        recent = ev.sub.replay(last - 2)
        assert [b.seq for b in recent] == [last - 2, last - 1, last]
        assert recent[-1].events == ev.batches[-1].events
        assert [b.seq for b in ev.sub.replay(last - 1, last - 1)] == [last - 1]
        with pytest.raises(KvEventReplayError, match=r"sequence numbers 0\.\..* are gone"):
            ev.sub.replay(0)
        assert "kvpool_master_kv_events_replay_gone_total 1" in ev.metrics()
        # A hostile peer: a 1 MiB request (ZMQ drops the peer: nothing is buffered for it) and
        # a request of many parts (answered as malformed); replays keep being served.
        ctx = zmq.Context.instance()
        for parts in ([b"x" * (1 << 20)], [b"\0" * 8] * 50):
            bad = ctx.socket(zmq.DEALER)
            bad.setsockopt(zmq.LINGER, 0)
            bad.connect(f"tcp://127.0.0.1:{ev.replay_port}")
            bad.send_multipart(parts)
            if len(parts) > 1:
                assert bad.poll(5000), "no answer to a malformed replay request"
                assert bad.recv_multipart()[0] == (-2).to_bytes(8, "big", signed=True)
            bad.close()
        assert [b.seq for b in ev.sub.replay(last - 1, last - 1)] == [last - 1]
    finally:
        s.close()
        ev.close()


def test_a_subscriber_that_never_reads_does_not_slow_the_master():
    ev = Events()
    ctx = zmq.Context()
    stuck = []
    try:
        for _ in range(20):  # subscribers that connect and never read
            sock = ctx.socket(zmq.SUB)
            sock.setsockopt(zmq.RCVHWM, 1)
            sock.setsockopt(zmq.RCVBUF, 4096)
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt_string(zmq.SUBSCRIBE, "")
            sock.connect(f"tcp://127.0.0.1:{ev.pub}")
            stuck.append(sock)
        ev.pool.add_node("64MB")
        s = KVPoolStore()
        assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "",
                       ev.pool.master_address) == 0, kvpool.last_error()
        start = time.monotonic()
        keys = [f"stuck/{i:05d}/{'ab' * 16}" for i in range(2000)]
        for i in range(0, len(keys), 100):
            assert s.put_batch(keys[i:i + 100], [b"v" * 64] * 100) == 0, kvpool.last_error()
        assert time.monotonic() - start < 30
        assert s.remove_all() >= 2000
        # The reading subscriber still gets everything, in order.
        ev.until(lambda e: len(e.hashes(BlockRemoved)) >= 2000, timeout=30)
        assert "kvpool_master_kv_events_dropped_total 0" in ev.metrics()
        s.close()
    finally:
        for sock in stuck:
            sock.close()
        ctx.term()
        ev.close()


ETCD = shutil.which("etcd")


@pytest.mark.skipif(ETCD is None, reason="etcd is not installed (apt-get install etcd-server)")
def test_a_new_leader_starts_a_new_sequence_with_all_blocks_cleared():
    """Two --enable_ha masters, each publishing: after the leader stops, the new leader's first
    batch is seq 0 starting with AllBlocksCleared, then a BlockStored for every object its node
    re-registers."""
    with etcd_server() as client:
        failover_events(client)


def failover_events(client: int) -> None:
    masters, subs, procs, store = [], [], [], None
    try:
        address = f"etcd://127.0.0.1:{client}/evt"
        for _ in range(2):
            rpc, pub = free_port(), free_port()
            m = Proc(["master", "--rpc_host", "127.0.0.1", "--rpc_port", str(rpc),
                      "--metrics_port", "0", "--enable_ha", "true", "--etcd_endpoints",
                      f"127.0.0.1:{client}", "--cluster_id", "evt", "--ha_lease_ttl_sec", "2",
                      "--ha_restore_wait_ms", "500", "--kv_events_endpoint",
                      f"tcp://127.0.0.1:{pub}"], "master")
            assert wait_for_port(rpc), m.output()
            masters.append(m)
            subs.append(KvEventSubscriber(f"tcp://127.0.0.1:{pub}"))
        procs.append(Proc(["node", "--host", "127.0.0.1", "--port", str(free_port()),
                           "--master_server_address", address, "--global_segment_size", "32MB",
                           "--log_level", "warn"], "node"))
        time.sleep(0.3)
        store = KVPoolStore()
        assert store.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", address) == 0, \
            kvpool.last_error()
        end = time.monotonic() + 20
        while time.monotonic() < end and len(store.stat().get("segments", [])) < 1:
            time.sleep(0.05)
        keys = [sglang_key(200 + i) for i in range(3)]
        for k, _ in keys:
            assert store.put(k, b"v" * 1000) == 0, kvpool.last_error()
        want = {h for _, h in keys}

        def stored(sub, batches, timeout):
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                got = {h for b in batches for e in b.events if isinstance(e, BlockStored)
                       for h in e.block_hashes}
                if want <= got:
                    return True
                b = sub.recv(100)
                if b is not None:
                    batches.append(b)
            return False

        seen = [[], []]
        leader = next(i for i in (0, 1) if stored(subs[i], seen[i], 5 if i == 0 else 10))
        other = 1 - leader
        assert seen[leader][0].seq == 0
        masters[leader].stop()  # resigns: the standby takes over, the node re-registers
        assert stored(subs[other], seen[other], 30), seen[other]
        first = seen[other][0]
        assert first.seq == 0 and isinstance(first.events[0], AllBlocksCleared), first
        assert [b.seq for b in seen[other]] == list(range(len(seen[other])))
    finally:
        if store is not None:
            store.close()
        for s in subs:
            s.close()
        for p in procs + masters:
            p.stop()


def test_kvpool_events_tails_the_stream(events):
    """`kvpool events` prints each batch and its events, the hashes as hex."""
    from conftest import kvpool_binary
    tail = subprocess.Popen([kvpool_binary(), "events", "--endpoint",
                             f"tcp://127.0.0.1:{events.pub}", "--batches", "1",
                             "--idle_timeout_ms", "20000"], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)  # ZMQ's slow joiner
        s = KVPoolStore()
        assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "",
                       events.pool.master_address) == 0, kvpool.last_error()
        events.pool.add_node("64MB")
        key, digest = sglang_key(300)
        assert s.put(key, b"v" * 100) == 0, kvpool.last_error()
        s.close()
        out, _ = tail.communicate(timeout=20)
    finally:
        if tail.poll() is None:
            tail.kill()
    assert tail.returncode == 0, out
    assert out.startswith("seq=0 topic=kvpool ts="), out
    assert "  AllBlocksCleared\n" in out
    assert f"  BlockStored medium=DRAM hashes={digest.hex()}" in out
