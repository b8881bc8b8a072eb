"""Workload 10's peer child: one of several processes writing and reading one diskcache folder.

  diskcache_writer.py DIR CAPACITY OPERATIONS SEED

Opens Cache(DIR, size_limit=CAPACITY), prints "ready", waits for a line on standard input (so that
every writer starts together), then runs OPERATIONS operations on 2,000 keys: 70 % sets of
2,000-byte values, 30 % gets, chosen from SEED. Prints one line of JSON: the seconds taken and each
kind's median and 99th percentile in µs. Benchmarks/Sources/SharedWriter does the same with
SQLiteStore.
"""
import json, random, sys, time

from diskcache import Cache


def percentile(values, p):
    if not values:
        return 0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def main():
    folder, capacity, operations, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    cache = Cache(folder, size_limit=capacity)
    chooser = random.Random(seed)
    value = bytes((i * 31 + seed) % 256 for i in range(2000))
    print("ready", flush=True)
    sys.stdin.readline()
    sets, gets = [], []
    start = time.perf_counter()
    for _ in range(operations):
        key = "key-%d" % chooser.randrange(2000)
        is_set = chooser.randrange(10) < 7
        began = time.perf_counter_ns()
        if is_set:
            cache.set(key, value)
        else:
            cache.get(key)
        micros = (time.perf_counter_ns() - began) / 1000
        (sets if is_set else gets).append(micros)
    seconds = time.perf_counter() - start
    cache.close()
    print(json.dumps({"seconds": seconds, "setP50": percentile(sets, 0.5), "setP99": percentile(sets, 0.99),
                      "getP50": percentile(gets, 0.5), "getP99": percentile(gets, 0.99)}), flush=True)


if __name__ == "__main__":
    main()
