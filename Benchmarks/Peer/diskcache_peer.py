"""Workload 9's peer: python-diskcache driven by the Swift benchmark, one command a line.

The Swift process starts this script once (in the virtual environment it made) and writes one
command a line on its standard input; each answer is one line of JSON on standard output, so that
rounds of diskcache alternate with rounds of the Swift stores without restarting Python.

  load FILE            keys, values and the read order, as the Swift side wrote them (format below)
  round DIR            a new Cache in DIR (emptied first): set every key in file order, then get every
                       key in the read order; each call timed alone with perf_counter_ns (µs)
  disk DIR             closes the cache and sums st_blocks * 512 over DIR (what `du` counts)
  fill DIR N SIZE      a new Cache in DIR with N keys of SIZE-byte values (not timed), closed after
  open DIR KEY         Cache(DIR) then get(KEY), timed together (ms), closed after
  quit

FILE: b"HNKPEER1", u32 count, then count times (u32 key length, key UTF-8, u32 value length,
value), then count u32 indices (the read order); all little-endian.
"""
import json, os, random, shutil, struct, sys, time

import diskcache
from diskcache import Cache


def answer(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def du(path):
    total = os.lstat(path).st_blocks * 512
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total


def reset(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"HNKPEER1":
        raise ValueError("not a peer file: " + path)
    (count,) = struct.unpack_from("<I", data, 8)
    offset = 12
    keys, values = [], []
    for _ in range(count):
        (n,) = struct.unpack_from("<I", data, offset); offset += 4
        keys.append(data[offset:offset + n].decode()); offset += n
        (n,) = struct.unpack_from("<I", data, offset); offset += 4
        values.append(bytes(data[offset:offset + n])); offset += n
    order = list(struct.unpack_from("<%dI" % count, data, offset))
    return keys, values, order


def main():
    keys, values, order = [], [], []
    cache = None
    pc = time.perf_counter_ns
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        command = words[0]
        if command == "load":
            keys, values, order = load(words[1])
            answer({"count": len(keys), "version": diskcache.__version__})
        elif command == "round":
            if cache is not None:
                cache.close()
            reset(words[1])
            cache = Cache(words[1])
            sets, gets, wrong = [], [], 0
            for key, value in zip(keys, values):
                start = pc()
                cache.set(key, value)
                sets.append(pc() - start)
            for index in order:
                start = pc()
                value = cache.get(keys[index])
                gets.append(pc() - start)
                if value != values[index]:
                    wrong += 1
            answer({"set": [t / 1000 for t in sets], "get": [t / 1000 for t in gets], "wrong": wrong})
        elif command == "disk":
            if cache is not None:
                cache.close()
                cache = None
            answer({"bytes": du(words[1])})
        elif command == "fill":
            path, count, size = words[1], int(words[2]), int(words[3])
            reset(path)
            random_bytes = random.Random(count * 31 + size).randbytes
            start = time.perf_counter()
            with Cache(path) as filled:
                for first in range(0, count, 1000):
                    with filled.transact():
                        for i in range(first, min(count, first + 1000)):
                            filled.set("https://example.com/images/%08d.jpg" % i, random_bytes(size))
            answer({"seconds": time.perf_counter() - start})
        elif command == "open":
            start = pc()
            with Cache(words[1]) as opened:
                value = opened.get(words[2])
                elapsed = pc() - start
            answer({"ms": elapsed / 1e6, "hit": value is not None})
        elif command == "quit":
            break
        else:
            answer({"error": "unknown command " + command})
    if cache is not None:
        cache.close()


if __name__ == "__main__":
    main()
