#!/usr/bin/env python3
"""Runs the GRPO job of benches/compare_trl in both stacks, alternating, ROUNDS rounds.

Round r (seed r - 1):
1. `empathy-gym train --config benches/compare_trl/ours.yaml` (the project);
2. the dataset rows for TRL from that run's episodes: for each step and group, the profile, the
   simulator seed and the user's opening, in step order, so that both stacks see the same prompts
   and the same simulated users at every step;
3. `empathy-gym serve-env --prepare SPLIT` (the run's split readied before it listens, as
   `train` readies it before its first step), then trl_grpo.py (TRL's GRPOTrainer, rewarded
   through the server), then the server is stopped and its episode log checked with
   `empathy-gym replay verify`.

Each child's wall time and peak resident memory come from `os.wait4`; the load average is read
around each run. Everything lands under --logs; report.py turns it into results/perf/vs-trl.md.
Run by run.sh, which builds the binary and the Python environment first.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "examples", "python"))
from trl_reward import SYSTEM, row  # noqa: E402

RUN = "compare-trl"
GGUF = "models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf"
# TRL's copy of the GGUF, dequantized once into an HF folder (trl_grpo.py, `hf_folder`).
HF_DIR = os.path.join(ROOT, "target", "smollm2-135m-instruct-hf")


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def run(cmd, env, log):
    """Runs `cmd` to its end; returns its wall seconds, its peak resident memory (MiB) and the
    load average before and after."""
    load0 = loadavg()
    t0 = time.perf_counter()
    with open(log, "w") as out:
        p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed (exit {os.waitstatus_to_exitcode(status)}); see {log}")
    return {"wall_s": wall, "peak_rss_mib": usage.ru_maxrss / 1024.0,
            "load_before": load0, "load_after": loadavg()}


def rows_from_run(run_dir, cfg):
    """TRL's dataset rows: one per (step, group) of the project's run (`cfg` its resolved
    config), in step order."""
    system = cfg["env"].get("system_prompt") or SYSTEM
    firsts = {}
    with open(os.path.join(run_dir, "episodes.jsonl")) as f:
        for line in f:
            rec = json.loads(line)
            if rec["sample"] == 0:
                firsts[(rec["step"], rec["group"])] = rec
    rows = []
    for key in sorted(firsts):
        rec = firsts[key]
        r = row(rec["profile"], rec["simulator"]["seed"], rec["turns"][0]["text"], system)
        r["step"], r["group"] = key
        rows.append(r)
    return rows


def same_users(rows, prompts_jsonl, group_size):
    """Whether TRL scored each step's completions on the rows' users, in order: group k of the
    scored replies is row k's profile and simulator seed, `group_size` times."""
    with open(prompts_jsonl) as f:
        scored = [json.loads(line) for line in f]
    want = [(r["profile"], r["seed"]) for r in rows for _ in range(group_size)]
    return [(s["profile"], s["seed"]) for s in scored] == want[:len(scored)] and len(scored) == len(want)


def start_serve_env(binary, split, out, log):
    """serve-env on a free port with every profile of `split` readied before it listens, as
    `train` readies its profiles before its first step; returns (process, URL, seconds to
    listen)."""
    t0 = time.perf_counter()
    with open(log, "w") as err:
        p = subprocess.Popen([binary, "serve-env", "--port", "0", "--prepare", split, "--out", out],
                             cwd=ROOT, stdout=subprocess.PIPE, stderr=err, text=True)
    first = p.stdout.readline()
    if "http://" not in first:
        p.kill()
        sys.exit(f"serve-env did not start: {first!r}; see {log}")
    url = next(w for w in first.split() if w.startswith("http://"))
    return p, url, time.perf_counter() - t0


def stop_serve_env(p):
    """Stops the server; returns its peak RSS in MiB (read before it exits)."""
    with open(f"/proc/{p.pid}/status") as f:
        hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024.0
    p.send_signal(signal.SIGINT)
    p.wait(timeout=60)
    return hwm


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--python", required=True, help="the Python that has TRL")
    ap.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "empathy-gym"))
    ap.add_argument("--logs", default=os.path.join(ROOT, "target", "compare-trl"))
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                    help="model.device of both stacks (cuda needs a CUDA build of --binary)")
    ap.add_argument("--dtype", default="f32", choices=["f32", "bf16"], help="model.dtype of both")
    args = ap.parse_args()
    shutil.rmtree(args.logs, ignore_errors=True)
    os.makedirs(args.logs)
    env = dict(os.environ, RAYON_NUM_THREADS=str(args.threads), OMP_NUM_THREADS=str(args.threads),
               TRL_EXPERIMENTAL_SILENCE="1", HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    described = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip() or "unknown"
    rounds = []
    for r in range(1, args.rounds + 1):
        seed = r - 1
        d = os.path.join(args.logs, f"round-{r}")
        os.makedirs(d)
        print(f"== round {r} (seed {seed}): empathy-gym", flush=True)
        ours = run([args.binary, "train", "--config", os.path.join(HERE, "ours.yaml"),
                    "--set", f"results_dir={d}", "--set", f"seed={seed}",
                    "--set", f"grpo.steps={args.steps}", "--set", f"model.device={args.device}",
                    "--set", f"model.dtype={args.dtype}"], env, os.path.join(d, "ours.log"))
        run_dir = os.path.join(d, RUN)
        with open(os.path.join(run_dir, "config.yaml")) as f:
            cfg = yaml.safe_load(f)
        rows = rows_from_run(run_dir, cfg)
        with open(os.path.join(d, "rows.jsonl"), "w") as f:
            for x in rows:
                f.write(json.dumps(x) + "\n")
        print(f"== round {r} (seed {seed}): TRL", flush=True)
        served = os.path.join(d, "trl-served.jsonl")
        server, url, start_s = start_serve_env(args.binary, cfg["env"]["split"], served,
                                               os.path.join(d, "serve-env.log"))
        try:
            trl = run([args.python, os.path.join(HERE, "trl_grpo.py"), "--config",
                       os.path.join(run_dir, "config.yaml"), "--rows", os.path.join(d, "rows.jsonl"),
                       "--url", url, "--gguf", GGUF, "--hf-dir", HF_DIR, "--out", os.path.join(d, "trl"),
                       "--threads", str(args.threads)], env, os.path.join(d, "trl.log"))
        finally:
            server_rss = stop_serve_env(server)
        verify = subprocess.run([args.binary, "replay", "verify", served], cwd=ROOT,
                                capture_output=True, text=True)
        rounds.append({"round": r, "seed": seed, "ours": ours, "trl": trl,
                       "serve_env_start_s": start_s,
                       "same_users": same_users(rows, os.path.join(d, "trl", "prompts.jsonl"),
                                                cfg["grpo"]["group_size"]),
                       "serve_env_peak_rss_mib": server_rss,
                       "replay_verify": (verify.stdout + verify.stderr).strip().splitlines()[-1:],
                       "replay_verify_ok": verify.returncode == 0})
        with open(os.path.join(args.logs, "rounds.json"), "w") as f:
            json.dump({"commit": described, "threads": args.threads, "steps": args.steps,
                       "rounds": rounds}, f, indent=1)


if __name__ == "__main__":
    main()
