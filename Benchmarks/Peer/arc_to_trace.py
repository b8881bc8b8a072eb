"""Converts a trace of the ARC paper's format (Megiddo and Modha, FAST 2003: one request per line,
"START COUNT IGNORED REQUEST", for COUNT consecutive blocks from START) on standard input into
`HanekeBenchmarks --hit-ratio --trace`'s format on standard output: one key per line, a request of
COUNT blocks becoming COUNT keys, as Caffeine's simulator reads these traces.

    zstd -dc OLTP.lis.zst | python3 arc_to_trace.py > OLTP.txt
"""
import sys


def main():
    out = sys.stdout
    for line in sys.stdin:
        fields = line.split()
        if len(fields) < 2:
            continue
        start, count = int(fields[0]), int(fields[1])
        out.write("".join(f"{block}\n" for block in range(start, start + count)))


if __name__ == "__main__":
    main()
