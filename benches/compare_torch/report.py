#!/usr/bin/env python3
"""Markdown report of benches/compare_torch/run.sh: per case, tokens/s of each stack in each round,
the ratio (ours / torch) per round, and peak memory; the load average around each run.

  report.py LOGDIR ROUNDS THREADS [MATMUL [ISA [CASES]]]  > results/perf/vs-torch.md

LOGDIR holds ours-R.md / torch-R.md (the markdown rows the benches print) and *.load files
(/proc/loadavg before and after each run).
"""

import datetime
import os
import platform
import subprocess
import sys


def rows(path):
    """case -> (tokens/s, peak RSS MiB) from the benches' markdown rows."""
    out = {}
    if not os.path.exists(path):
        return out
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 5 or not cells[0].startswith(("decode", "train")):
            continue
        out[cells[0]] = (float(cells[3]), float(cells[4]))
    return out


def load(path):
    if not os.path.exists(path):
        return "?"
    return " -> ".join(line.split()[0] for line in open(path) if line.strip())


def cpu():
    """The CPU as /proc/cpuinfo names it, with its family and model (AMD family 25 is Zen 3/4,
    26 Zen 5) and the vector extensions that decide the matmul kernels."""
    info = {}
    try:
        for line in open("/proc/cpuinfo"):
            if ":" in line:
                key, value = (x.strip() for x in line.split(":", 1))
                info.setdefault(key, value)
    except OSError:
        return platform.processor() or platform.machine()
    flags = set(info.get("flags", "").split())
    ext = [name for flag, name in [("avx2", "AVX2"), ("avx512f", "AVX-512"),
                                   ("avx512_bf16", "AVX512-BF16"), ("amx_tile", "AMX")]
           if flag in flags]
    return (f"{info.get('model name', platform.machine())}, family {info.get('cpu family', '?')} "
            f"model {info.get('model', '?')}, {' '.join(ext) or 'no AVX2'}")


def commit():
    """The checkout's commit (with -dirty when it has uncommitted changes)."""
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def main():
    logdir, rounds, threads = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    matmul = sys.argv[4] if len(sys.argv) > 4 else "f32"
    isa = sys.argv[5] if len(sys.argv) > 5 else "native"
    selected = sys.argv[6] if len(sys.argv) > 6 else "decode,train"
    cases_env = "" if selected == "decode,train" else f"CASES={selected} "
    precision = ("f32 throughout" if matmul == "f32" else
                 "f32 weights with bf16 products: ours with model.cpu_matmul: bf16 (AMX where "
                 "the CPU has it, else AVX-512 or AVX2), PyTorch under torch.autocast(bfloat16)")
    ours = [rows(os.path.join(logdir, f"ours-{r}.md")) for r in range(1, rounds + 1)]
    torch = [rows(os.path.join(logdir, f"torch-{r}.md")) for r in range(1, rounds + 1)]
    cases = list(dict.fromkeys(c for d in ours + torch for c in d))
    print("# empathy-gym (candle) vs PyTorch + transformers + peft, same machine\n")
    print(f"Written by `{cases_env}benches/compare_torch/run.sh {rounds}` on "
          f"{datetime.date.today()} at commit {commit()} ({cpu()}; {os.cpu_count()} cores, "
          f"{threads} threads each). SmolLM2-135M-Instruct, the Q4_1 GGUF dequantized to f32 by "
          f"both stacks; {precision}; the two stacks alternate, round after round.\n")
    if isa == "avx2":
        print("`ISA=avx2`: both stacks ran as on a CPU with AVX2 only. Ours was built without its "
              "feature `avx512` (gemm's and the project's AVX-512 kernels left out); PyTorch ran "
              "with ATEN_CPU_CAPABILITY=avx2, MKL_ENABLE_INSTRUCTIONS=AVX2 and "
              "ONEDNN_MAX_CPU_ISA=AVX2.\n")
    rs = "/".join(str(r) for r in range(1, rounds + 1))
    print(f"| case | ours tok/s (round {rs}) | torch tok/s (round {rs}) | ratio ours/torch "
          "| peak RSS MiB ours / torch |")
    print("|---|---:|---:|---:|---:|")
    for c in cases:
        o = [d.get(c, (float("nan"), float("nan"))) for d in ours]
        t = [d.get(c, (float("nan"), float("nan"))) for d in torch]
        ratios = [a[0] / b[0] for a, b in zip(o, t) if b[0] > 0]
        if not ratios:
            ratio = "?"
        elif len(ratios) == 1:
            ratio = f"{ratios[0]:.2f}x"
        else:
            ratio = f"{min(ratios):.2f}-{max(ratios):.2f}x"
        print(f"| {c} | {' / '.join(f'{x[0]:.1f}' for x in o)} | "
              f"{' / '.join(f'{x[0]:.1f}' for x in t)} | {ratio} | "
              f"{max(x[1] for x in o):.0f} / {max(x[1] for x in t):.0f} |")
    versions = [line.strip() for r in range(1, rounds + 1)
                for line in open(os.path.join(logdir, f"torch-{r}.md")) if line.startswith("torch ")]
    if versions:
        print(f"\nPyTorch side: {versions[0]} (bench_torch.py).")
    print("\nLoad average (1 min) before -> after each run:\n")
    for r in range(1, rounds + 1):
        print(f"- round {r}: ours {load(os.path.join(logdir, f'ours-{r}.load'))}, "
              f"torch {load(os.path.join(logdir, f'torch-{r}.load'))}")


if __name__ == "__main__":
    main()
