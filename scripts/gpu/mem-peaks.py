#!/usr/bin/env python3
"""Peak GPU memory per benchmark case: nvidia-smi samples (gpumem-*.csv, `timestamp, MiB`) matched
to the `case NAME START_MS END_MS` lines both benches print (scripts/gpu/run.sh bench).

  scripts/gpu/mem-peaks.py GPUMEM.csv BENCH.log [BENCH.log ...]
"""
import datetime
import sys


def samples(path):
    out = []
    for line in open(path):
        ts, mib = [c.strip() for c in line.split(",")]
        t = datetime.datetime.strptime(ts, "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc)
        out.append((t.timestamp() * 1000, float(mib)))
    return out


def main():
    mem = samples(sys.argv[1])
    for log in sys.argv[2:]:
        for line in open(log):
            if not line.startswith("case "):
                continue
            head, start, end = line.rsplit(" ", 2)
            inside = [m for t, m in mem if float(start) <= t <= float(end)]
            peak = max(inside) if inside else float("nan")
            print(f"{log}: {head[5:]}: peak {peak:.0f} MiB ({len(inside)} samples)")


if __name__ == "__main__":
    main()
