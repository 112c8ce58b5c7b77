#!/usr/bin/python3
"""Puts into a full DRAM tier from Python, as engines write back (batch_put_from of registered
memory, 128 x 1 MiB per call): a master and a node with default flags but a 512 MB segment and
a 3 GB disk tier in a temporary directory on /tmp. Fills the DRAM, waits until it is on disk,
then puts 2 GB more: every object put evicts one that is already on disk, and puts wait for the
disk when DRAM is full of objects not yet there. Prints the put rate, the rate until the last
object is durable on disk (listed there by the master), and checks that every object reads back
with its own header (none lost, none wrong).

Usage: scripts/bench-python-full-dram.py [--timed_mib 2048]
Needs build/ (the kvpool binary and Python module)."""
import argparse
import tempfile
import time

import numpy as np

import bench_pool  # noqa: E402  (puts build/python on sys.path)

import kvpool  # noqa: E402

MIB = 1 << 20
BATCH = 128


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--timed_mib", type=int, default=2048)
    args = ap.parse_args()
    fill, timed = 512, args.timed_mib // BATCH * BATCH
    with tempfile.TemporaryDirectory(dir="/tmp") as disk, \
            bench_pool.pool("512MB", ["--disk_path", disk, "--disk_size", "3GB"]) as (master, _):
        store = kvpool.MooncakeDistributedStore()
        end = time.monotonic() + 20
        while store.setup("127.0.0.1", master, 0, 0, "tcp", "", master) != 0:
            if time.monotonic() > end:
                raise RuntimeError("pool did not start: " + kvpool.last_error())
            time.sleep(0.05)
        while store.stat()["capacity"] == 0 and time.monotonic() < end:
            time.sleep(0.05)  # the node's segment mounted
        src = np.random.randint(0, 255, (BATCH, MIB), dtype=np.uint8)
        assert store.register_buffer(src.ctypes.data, src.nbytes) == 0, kvpool.last_error()

        def put(first, last):
            failed = 0
            for b in range(first, last, BATCH):
                for j in range(BATCH):  # object i carries i in its first 8 bytes
                    src[j, :8] = np.frombuffer(np.int64(b + j).tobytes(), np.uint8)
                keys = [f"full-dram/{i}" for i in range(b, b + BATCH)]
                codes = store.batch_put_from(keys, [src.ctypes.data + j * MIB for j in
                                                    range(BATCH)], [MIB] * BATCH)
                failed += sum(1 for c in codes if c != 0)
            return failed

        def wait_on_disk(n, seconds):
            end = time.monotonic() + seconds
            while store.stat()["disk_replicas"] < n and time.monotonic() < end:
                time.sleep(0.005)

        assert put(0, fill) == 0, kvpool.last_error()
        wait_on_disk(fill, 30)
        t0 = time.monotonic()
        failed = put(fill, fill + timed)
        t1 = time.monotonic()
        wait_on_disk(fill + timed, 60)
        t2 = time.monotonic()
        on_disk = store.stat()["disk_replicas"]
        missing = wrong = 0
        for i in range(fill + timed):
            got = store.get(f"full-dram/{i}")
            if not got:
                missing += 1
            elif len(got) != MIB or int(np.frombuffer(got[:8], np.int64)[0]) != i:
                wrong += 1
        print(f"batch_put_from 128 x 1 MiB into a full 512 MB DRAM tier, {timed} MiB: puts "
              f"{timed * MIB / (t1 - t0) / 1e6:.0f} MB/s, durable on disk "
              f"{timed * MIB / (t2 - t0) / 1e6:.0f} MB/s; failed {failed}, on disk {on_disk}, "
              f"missing {missing}, wrong {wrong}")
        store.close()


if __name__ == "__main__":
    main()
