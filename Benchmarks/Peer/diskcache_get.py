"""python-diskcache's get alone, beside ReadFloor: 10,000 values of SIZE bytes under workload 9's
keys, read in ReadFloor's scrambled order, each call timed alone; three rounds, p50 and p99 in µs.

    Benchmarks/.build/peer-venv/bin/python Benchmarks/Peer/diskcache_get.py DIR SIZE

DIR must not exist (it is left filled). The virtual environment is the one workload 9 makes.
"""
import os, sys, time

from diskcache import Cache

COUNT = 10000


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: diskcache_get.py DIR SIZE")
    folder, size = sys.argv[1], int(sys.argv[2])
    os.makedirs(folder)
    cache = Cache(folder)
    keys = ["https://example.com/images/%08d.jpg" % i for i in range(COUNT)]
    for key in keys:
        cache.set(key, os.urandom(size))
    order = [keys[i * 7919 % COUNT] for i in range(COUNT)]
    for round in range(3):
        times = []
        for key in order:
            start = time.perf_counter_ns()
            cache.get(key)
            times.append(time.perf_counter_ns() - start)
        times.sort()
        print("round %d: diskcache get p50 %.2f p99 %.2f µs" % (round + 1, times[COUNT // 2] / 1e3, times[COUNT * 99 // 100] / 1e3))
    cache.close()


main()
