#!/usr/bin/env python3
"""The TRL path, run for real: a few GRPOTrainer steps against `empathy-gym serve-env`, single-turn
(trl_reward.py's EmpathyReward) and multi-turn (trl_multiturn.py's EmpathyRollout), each checked:

1. rewards arrive: every step logs a finite mean reward in [0, 1], and the server logged one
   finished episode per completion;
2. a group shares a simulated user: the episodes of each (profile, seed) number a multiple of the
   group size and open with the same message;
3. the logs verify: `empathy-gym replay verify` re-runs the server's log identically.

Not run in CI (it needs TRL and a few minutes); its output from the last run is trl_check.out.

  target/torch-venv/bin/python examples/python/trl_check.py --binary target/release/empathy-gym \\
      --gguf models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf \\
      --hf-dir target/smollm2-135m-instruct-hf --out target/trl-check [--steps 3] [--turns 3]
"""

import argparse
import json
import math
import os
import signal
import subprocess
import sys
from collections import defaultdict

import torch
from datasets import Dataset
from peft import LoraConfig
from transformers import AutoModelForCausalLM, AutoTokenizer

import trl
from trl import GRPOConfig, GRPOTrainer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from empathy_env import EmpathyEnv  # noqa: E402
from trl_multiturn import EmpathyRollout, episode_reward  # noqa: E402
from trl_reward import EmpathyReward, make_rows  # noqa: E402

GROUP = 4
PROMPTS_PER_STEP = 2


def hf_folder(gguf, hf_dir):
    """The GGUF dequantized to f32 and saved as an HF folder, once. Trainer refuses a model loaded
    straight from a GGUF ("quantized with GGUF", which does not support training) although
    transformers dequantizes it at load."""
    if not os.path.exists(os.path.join(hf_dir, "config.json")):
        d, name = os.path.split(os.path.abspath(gguf))
        AutoTokenizer.from_pretrained(d, gguf_file=name).save_pretrained(hf_dir)
        model = AutoModelForCausalLM.from_pretrained(d, gguf_file=name, dtype=torch.float32)
        model.hf_quantizer = None
        model.config.quantization_config = None
        model.save_pretrained(hf_dir)
    return hf_dir


def serve_env(binary, log):
    p = subprocess.Popen([binary, "serve-env", "--port", "0", "--out", log],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    first = p.stdout.readline()
    url = next((w for w in first.split() if w.startswith("http://")), None)
    if url is None:
        p.kill()
        sys.exit(f"serve-env did not start: {first!r}")
    return p, url


def train(hf_dir, rows, steps, out, **trainer_kwargs):
    tok = AutoTokenizer.from_pretrained(hf_dir)
    tok.padding_side = "left"
    args = GRPOConfig(output_dir=out, max_steps=steps, per_device_train_batch_size=GROUP * PROMPTS_PER_STEP,
                      num_generations=GROUP, max_completion_length=40, temperature=0.7, top_p=0.9,
                      learning_rate=3e-4, beta=0.0, epsilon=0.2, epsilon_high=0.28, shuffle_dataset=False,
                      logging_steps=1, save_strategy="no", report_to=[], use_cpu=True, disable_tqdm=True,
                      seed=0)
    lora = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, task_type="CAUSAL_LM",
                      target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                      "down_proj"])
    trainer = GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32),
                          processing_class=tok, train_dataset=Dataset.from_list(rows), args=args,
                          peft_config=lora, **trainer_kwargs)
    trainer.train()
    return [h["reward"] for h in trainer.state.log_history if "reward" in h]


def check(name, binary, log, rewards, steps, turns):
    """The three checks on one phase; returns the failures."""
    failures = []
    with open(log) as f:
        records = [json.loads(line) for line in f]
    print(f"### {name}\n")
    print("mean reward per step: " + ", ".join(f"{r:.3f}" for r in rewards))
    if len(rewards) != steps or not all(math.isfinite(r) and 0.0 <= r <= 1.0 for r in rewards):
        failures.append(f"{name}: expected {steps} step rewards in [0, 1], got {rewards}")
    want = steps * GROUP * PROMPTS_PER_STEP
    print(f"episodes logged by serve-env: {len(records)} (want {want})")
    if len(records) != want:
        failures.append(f"{name}: {len(records)} episodes logged, want {want}")
    groups = defaultdict(list)
    for rec in records:
        groups[(rec["profile"]["scenario"], rec["profile"]["persona"], rec["simulator"]["seed"])].append(rec)
    shared = all(len(g) % GROUP == 0 and len({r["turns"][0]["text"] for r in g}) == 1
                 for g in groups.values())
    print(f"groups: {len(groups)} users, each judging a multiple of {GROUP} dialogues with one "
          f"opening: {'yes' if shared else 'NO'}")
    if not shared:
        failures.append(f"{name}: a group's episodes do not share one simulated user")
    replies = [sum(t["role"] == "assistant" for t in r["turns"]) for r in records]
    print(f"policy replies per episode: min {min(replies)}, max {max(replies)} (at most {turns})")
    if max(replies) > turns:
        failures.append(f"{name}: an episode ran past {turns} replies")
    v = subprocess.run([binary, "replay", "verify", log], capture_output=True, text=True)
    summary = (v.stdout.strip().splitlines() or [v.stderr.strip()])[-1]
    print(f"`empathy-gym replay verify`: {summary}")
    if v.returncode != 0:
        failures.append(f"{name}: replay verify failed: {summary}")
    last = records[-1]
    print("\nthe last episode logged:\n")
    for t in last["turns"]:
        emotion = f" ({t['emotion']})" if "emotion" in t else ""
        print(f"> {t['role']}{emotion}: {' '.join(t['text'].split())}")
    print()
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", required=True)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--hf-dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--turns", type=int, default=3)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    hf_dir = hf_folder(args.gguf, args.hf_dir)
    import peft
    import transformers
    print(f"## TRL {trl.__version__} (transformers {transformers.__version__}, peft "
          f"{peft.__version__}, torch {torch.__version__}), {args.steps} steps of "
          f"{PROMPTS_PER_STEP} prompts x {GROUP} completions, SmolLM2-135M-Instruct with LoRA r16\n")
    failures = []
    for name, turns in (("single-turn: EmpathyReward", 1), ("multi-turn: EmpathyRollout", args.turns)):
        log = os.path.join(args.out, f"served-{turns}.jsonl")
        if os.path.exists(log):
            os.remove(log)
        server, url = serve_env(args.binary, log)
        try:
            env = EmpathyEnv(url)
            rows, seen = [], set()
            for r in make_rows(env, split="train", n=4 * args.steps * PROMPTS_PER_STEP, seed=0):
                if r["prompt"][-1]["content"] not in seen:  # EmpathyRollout finds rows by opening
                    seen.add(r["prompt"][-1]["content"])
                    rows.append(r)
            rows = rows[:args.steps * PROMPTS_PER_STEP]
            if turns == 1:
                rewards = train(hf_dir, rows, args.steps, os.path.join(args.out, "single"),
                                reward_funcs=EmpathyReward(url))
            else:
                rewards = train(hf_dir, rows, args.steps, os.path.join(args.out, "multi"),
                                reward_funcs=episode_reward,
                                rollout_func=EmpathyRollout(env, rows, max_turns=turns))
        finally:
            server.send_signal(signal.SIGINT)
            server.wait(timeout=60)
        failures += check(name, args.binary, log, rewards, args.steps, turns)
    if failures:
        print("FAILED:\n" + "\n".join(f"- {f}" for f in failures))
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
