#!/usr/bin/env python3
"""Report of benches/compare_trl/run.sh: per round and stack, the median step (after the first)
split into generation, scoring and update, policy tokens per second, peak memory and the whole
job's wall time; the reward curves of both stacks (a table and an SVG); a few replies of each.

  report.py LOGS OUT_STEM   > OUT_STEM.md   (writes OUT_STEM-reward.svg and OUT_STEM-steps.csv)

LOGS is harness.py's folder: rounds.json, and per round the project's run (compare-trl/), TRL's
steps (trl/), its server log (trl-served.jsonl) and the rows both stacks trained on.
"""

import csv
import datetime
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "compare_torch"))
from report import commit, cpu  # noqa: E402

STACKS = ("empathy-gym", "TRL")
COLOURS = {"empathy-gym": "#1f77b4", "TRL": "#d62728"}


def ours_steps(run_dir):
    out = []
    with open(os.path.join(run_dir, "metrics.csv")) as f:
        for r in csv.DictReader(f):
            gen, score, update = float(r["t_rollout_s"]), float(r["t_simulate_s"]), float(r["t_train_s"])
            out.append({"step": int(r["step"]), "reward_mean": float(r["reward_mean"]),
                        "t_step_s": gen + score + update, "t_generate_s": gen,
                        "t_score_s": score, "t_update_s": update,
                        "policy_tokens": float(r["policy_tokens"])})
    return out


def trl_steps(trl_dir, batch):
    out = []
    with open(os.path.join(trl_dir, "steps.csv")) as f:
        for r in csv.DictReader(f):
            row = {k: float(v) for k, v in r.items()}
            row["step"] = int(row["step"])
            row["policy_tokens"] = row.pop("completion_len_mean") * batch
            row.pop("reward_std", None)
            out.append(row)
    return out


def replies(path, step):
    """(profile, emotion after, reply) of the episodes of `step` (all when step is None)."""
    out = []
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            if step is None or rec.get("step") == step:
                out.append((f"{rec['profile']['scenario']}:{rec['profile']['persona']}",
                            rec["turns"][2]["emotion"], rec["turns"][1]["text"]))
    return out


def med(rows, key):
    later = rows[1:] or rows  # the first step pays for warm-up (allocations, caches)
    return statistics.median(r[key] for r in later)


def svg(curves, steps):
    """Reward per step: one line per (stack, round)."""
    w, h, left, top, pw, ph = 640, 360, 60, 30, 540, 270
    values = [v for c in curves.values() for v in c]
    lo, hi = min(values) - 0.02, max(values) + 0.02
    x = lambda s: left + (s - 1) / max(1, steps - 1) * pw  # noqa: E731
    y = lambda v: top + ph - (v - lo) / (hi - lo) * ph  # noqa: E731
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
             'font-family="sans-serif" font-size="12">',
             f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>',
             f'<text x="{left + pw / 2}" y="{h - 8}" text-anchor="middle">step</text>',
             f'<text x="14" y="{top + ph / 2}" transform="rotate(-90 14 {top + ph / 2})" '
             'text-anchor="middle">mean reward (emotion after the reply / 100)</text>']
    for i in range(5):
        v = lo + (hi - lo) * i / 4
        parts.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>')
    for s in range(1, steps + 1):
        parts.append(f'<text x="{x(s):.1f}" y="{top + ph + 16}" text-anchor="middle">{s}</text>')
    for (stack, rnd), c in sorted(curves.items()):
        pts = " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in enumerate(c, 1))
        dash = "" if rnd == 1 else f' stroke-dasharray="{2 * rnd},{2 * rnd}"'
        parts.append(f'<polyline points="{pts}" fill="none" stroke="{COLOURS[stack]}" '
                     f'stroke-width="1.5"{dash}/>')
    for i, stack in enumerate(STACKS):
        parts.append(f'<text x="{left + 10}" y="{top + 16 + 16 * i}" fill="{COLOURS[stack]}">'
                     f'{stack} (one line per seed)</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main():
    logs, stem = sys.argv[1], sys.argv[2]
    with open(os.path.join(logs, "rounds.json")) as f:
        meta = json.load(f)
    rounds = meta["rounds"]
    first = os.path.join(logs, "round-1")
    with open(os.path.join(first, "trl", "summary.json")) as f:
        versions = json.load(f)["versions"]
    import yaml
    with open(os.path.join(first, "compare-trl", "config.yaml")) as f:
        cfg = yaml.safe_load(f)
    batch = cfg["grpo"]["profiles_per_step"] * cfg["grpo"]["group_size"]

    data = {}  # (stack, round) -> step rows
    for r in rounds:
        d = os.path.join(logs, f"round-{r['round']}")
        data[("empathy-gym", r["round"])] = ours_steps(os.path.join(d, "compare-trl"))
        data[("TRL", r["round"])] = trl_steps(os.path.join(d, "trl"), batch)

    with open(f"{stem}-steps.csv", "w", newline="") as f:
        w = csv.writer(f)
        keys = ["step", "reward_mean", "t_step_s", "t_generate_s", "t_score_s", "t_update_s",
                "policy_tokens"]
        w.writerow(["stack", "round", "seed"] + keys)
        for (stack, rnd), rows in sorted(data.items()):
            seed = rounds[rnd - 1]["seed"]
            for row in rows:
                w.writerow([stack, rnd, seed] + [f"{row[k]:.4f}" if isinstance(row[k], float)
                                                  else row[k] for k in keys])
    steps = meta["steps"]
    with open(f"{stem}-reward.svg", "w") as f:
        f.write(svg({k: [r["reward_mean"] for r in v] for k, v in data.items()}, steps))

    p = print
    p("# The same GRPO job in empathy-gym and in TRL (benches/compare_trl)\n")
    p(f"Written by `benches/compare_trl/run.sh {len(rounds)}` (STEPS={steps}) on "
      f"{datetime.date.today()}, commit {meta.get('commit') or commit()}.")
    p(f"CPU: {cpu()}, {meta['threads']} threads for each stack. TRL {versions['trl']}, "
      f"transformers {versions['transformers']}, peft {versions['peft']}, torch {versions['torch']}.\n")
    p(f"The job: SmolLM2-135M-Instruct (the Q4_1 GGUF, dequantized by both stacks; "
      f"{cfg['model']['dtype']} on the {cfg['model']['device']}), LoRA r16 "
      "alpha 32 on all seven projections; per step 2 users' openings x 4 replies of at most "
      f"{cfg['sampling']['max_new_tokens']} tokens (temperature {cfg['sampling']['temperature']}, "
      f"top-p {cfg['sampling']['top_p']}); reward = the user's emotion after the reply / 100; "
      f"clipped GRPO loss (eps {cfg['grpo']['loss']['eps_low']} / {cfg['grpo']['loss']['eps_high']}), "
      f"token mean, no KL, AdamW lr {cfg['optim']['lr']}, one update per step. Round r runs both "
      "stacks with seed r - 1, on the same openings and simulated users at every step.\n")
    p("## Per step\n")
    p("Median over the steps after the first; the split is the stack's own: the project's "
      "metrics.csv (`t_rollout_s`, `t_simulate_s`, `t_train_s`), TRL's timed `_generate`, reward "
      "function and the rest of its step. Tokens/s: policy tokens of the step / the step's "
      "seconds. Memory: peak resident set of the training process (TRL's column adds serve-env's, "
      "its scorer). Job: the whole command, loading included (TRL's adds serve-env's start-up, "
      "which readies the users as `train` does before its first step).\n")
    p("| round | stack | step s | generation s | scoring s | update s | policy tok/s | "
      "peak MiB | job s | load before -> after |")
    p("|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
    ratios = []
    for r in rounds:
        rnd = r["round"]
        cells = {}
        for stack in STACKS:
            rows = data[(stack, rnd)]
            run = dict(r["ours"] if stack == "empathy-gym" else r["trl"])
            if stack == "TRL":  # its scorer's start-up (readying the users) is part of its job
                run["wall_s"] += r.get("serve_env_start_s", 0.0)
            mem = run["peak_rss_mib"]
            mem_text = f"{mem:.0f}"
            if stack == "TRL":
                mem += r["serve_env_peak_rss_mib"]
                mem_text = f"{mem:.0f} ({run['peak_rss_mib']:.0f} + {r['serve_env_peak_rss_mib']:.0f})"
            step = med(rows, "t_step_s")
            tok = statistics.median(x["policy_tokens"] / x["t_step_s"] for x in rows[1:] or rows)
            cells[stack] = (step, mem, tok)
            p(f"| {rnd} | {stack} | {step:.2f} | {med(rows, 't_generate_s'):.2f} | "
              f"{med(rows, 't_score_s'):.2f} | {med(rows, 't_update_s'):.2f} | {tok:.1f} | "
              f"{mem_text} | {run['wall_s']:.0f} | {run['load_before']:.2f} -> "
              f"{run['load_after']:.2f} |")
        ratios.append((cells["TRL"][0] / cells["empathy-gym"][0],
                       cells["empathy-gym"][1] / cells["TRL"][1]))
    p("")
    p("| round | step time, TRL / empathy-gym | peak memory, empathy-gym / TRL |")
    p("|---:|---:|---:|")
    for r, (speed, mem) in zip(rounds, ratios):
        p(f"| {r['round']} | {speed:.2f}x | {mem:.2f} |")
    p("")
    share = {stack: statistics.median(x["t_generate_s"] / x["t_step_s"] for (st, _), rows in
                                      data.items() if st == stack for x in rows[1:])
             for stack in STACKS}
    met = sum(speed >= 2.0 and mem <= 1.0 for speed, mem in ratios)
    p(f"The target (a step at least 2x as fast as TRL's with no more memory) holds in {met} of "
      f"{len(ratios)} rounds. Generation takes {share['empathy-gym']:.0%} of the project's step "
      f"and {share['TRL']:.0%} of TRL's (medians over all rounds).\n")
    p("## Reward curves\n")
    p(f"![reward per step]({os.path.basename(stem)}-reward.svg)\n")
    p("Mean reward of the step's 8 replies, per round (seed) and stack; the raw rows are in "
      f"`{os.path.basename(stem)}-steps.csv`.\n")
    p("| stack | " + " | ".join(f"seed {r['seed']}: all steps / last 4" for r in rounds) + " |")
    p("|---|" + "---:|" * len(rounds))
    means = {}
    for stack in STACKS:
        cells = []
        for r in rounds:
            rew = [x["reward_mean"] for x in data[(stack, r["round"])]]
            means.setdefault(stack, []).append(statistics.mean(rew))
            cells.append(f"{statistics.mean(rew):.3f} / {statistics.mean(rew[-4:]):.3f}")
        p(f"| {stack} | " + " | ".join(cells) + " |")
    p("")
    diffs = [a - b for a, b in zip(means["empathy-gym"], means["TRL"])]
    p("Difference of the mean reward over all steps, empathy-gym - TRL, per seed: "
      + ", ".join(f"{d:+.3f}" for d in diffs) + ".")
    for stack in STACKS:
        if len(means[stack]) > 1:
            p(f"Spread between seeds, {stack}: {min(means[stack]):.3f} to {max(means[stack]):.3f}.")
    p("")
    p(f"{steps} steps are a check that both stacks learn the same thing from the same reward, not "
      "a training result: the curves move by a few hundredths, inside the noise of a step's 8 "
      "replies, and the reward is the simulator's own judgement, no independent evidence that "
      "the replies got more empathetic (results/runs/hardened-100 reads 100 steps' replies).\n")
    p("## What each stack's policy says at its last step (round 1)\n")
    d = os.path.join(logs, "round-1")
    ours_last = replies(os.path.join(d, "compare-trl", "episodes.jsonl"), steps)
    trl_all = replies(os.path.join(d, "trl-served.jsonl"), None)
    trl_last = trl_all[-batch:]
    for stack, rs in (("empathy-gym", ours_last), ("TRL", trl_last)):
        p(f"**{stack}**\n")
        for profile, emotion, text in rs[:3]:
            p(f"- {profile}, emotion after {emotion}: \"{' '.join(text.split())}\"")
        p("")
    p("## Checks\n")
    for r in rounds:
        v = " ".join(r["replay_verify"])
        p(f"- Round {r['round']}: TRL's {len(data[('TRL', r['round'])]) * batch} "
          f"scored replies, logged by serve-env; `replay verify`: {v}"
          f"{'' if r['replay_verify_ok'] else ' (FAILED)'}. Every step's replies were scored on "
          f"the users of the project's same step: {'yes' if r['same_users'] else 'NO'}.")


if __name__ == "__main__":
    main()
