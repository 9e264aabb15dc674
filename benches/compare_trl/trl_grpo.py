#!/usr/bin/env python3
"""TRL's side of benches/compare_trl: the GRPO job of `empathy-gym train`, run by TRL's GRPOTrainer.

Every setting comes from the resolved config of the project's run (its `config.yaml`), mapped onto
GRPOConfig key by key (`grpo_config`); a setting TRL cannot express is refused, not silently
changed. The prompts are the project's run's: `--rows` is a JSONL of dataset rows in step order
(harness.py writes it from the run's episodes), and the dataset is not shuffled, so step k of both
stacks starts from the same openings and is judged by the same simulated users (serve-env, through
examples/python/trl_reward.py, with the same profiles and simulator seeds).

Writes to --out: `steps.csv` (one row per step: reward, the step's seconds split into generation,
scoring and the rest, completion tokens), `summary.json` (versions, peak memory, the whole job's
seconds) and `prompts.jsonl` (the profile and seed of every scored completion, in order).

  python3 trl_grpo.py --config RUN/config.yaml --rows rows.jsonl --url http://127.0.0.1:8700 \\
      --gguf models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf --hf-dir DIR \\
      --out DIR [--threads 2]
"""

import argparse
import csv
import json
import os
import sys
import time

T_START = time.perf_counter()

import torch  # noqa: E402
import yaml  # noqa: E402
from datasets import Dataset  # noqa: E402
from peft import LoraConfig  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback  # noqa: E402

import trl  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "compare_torch"))
from bench_torch import peak_rss_mib  # noqa: E402
from trl_check import hf_folder  # noqa: E402
from trl_reward import EmpathyReward  # noqa: E402

# The project's LoRA target names and transformers' Llama module names.
PROJECTIONS = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj",
               "gate": "gate_proj", "up": "up_proj", "down": "down_proj"}

# The project's token aggregations and TRL's loss types that compute the same normalizer.
AGGREGATION = {"token_mean": "dapo", "seq_mean_token_mean": "grpo"}


def refuse(key, value, why):
    sys.exit(f"{key}: {value!r} has no TRL equivalent here ({why}); change it in the project's "
             "config or in trl_grpo.py's mapping")


def grpo_config(cfg, out):
    """GRPOConfig for the project's resolved config `cfg` (a dict)."""
    g, loss, optim, sampling = cfg["grpo"], cfg["grpo"]["loss"], cfg["optim"], cfg["sampling"]
    if cfg["algorithm"] != "grpo":
        refuse("algorithm", cfg["algorithm"], "GRPOTrainer runs GRPO")
    if loss["kind"] != "clip":
        refuse("grpo.loss.kind", loss["kind"], "only the clipped token ratio is mapped")
    if loss["aggregation"] not in AGGREGATION:
        refuse("grpo.loss.aggregation", loss["aggregation"], "no TRL loss_type normalizes so")
    if g["drop_zero_std"]:
        refuse("grpo.drop_zero_std", True, "TRL keeps equal-reward groups in the token count")
    if g["dynamic_sampling_draws"]:
        refuse("grpo.dynamic_sampling_draws", g["dynamic_sampling_draws"], "TRL does not redraw")
    if optim["schedule"]["kind"] != "constant":
        refuse("optim.schedule.kind", optim["schedule"]["kind"], "only constant is mapped")
    env = cfg["env"]
    if env["knobs"].get("max_turns") != 1:
        refuse("env.knobs.max_turns", env["knobs"].get("max_turns"),
               "TRL's reward function scores one completion per prompt")
    for knob, value in env["knobs"].items():
        if knob != "max_turns" and value is not None:
            refuse(f"env.knobs.{knob}", value, "the reward function sends max_turns alone")
    for key, want in (("reward_mode", "behavior"), ("aggregate", "final"), ("think", False)):
        if env[key] != want:
            refuse(f"env.{key}", env[key], f"the reward function scores {want!r} only")
    if env["difficulty"] == "auto":
        refuse("env.difficulty", "auto", "serve-env's episodes take a fixed preset")
    if cfg["simulator"]["kind"] != "appraiser":
        refuse("simulator.kind", cfg["simulator"]["kind"], "serve-env here runs the appraiser")
    if cfg["stability"]["kl_sample"]:
        refuse("stability.kl_sample", cfg["stability"]["kl_sample"],
               "TRL computes no KL estimate with beta 0; set it to 0 for a like-for-like step")
    scale = {"group": "group", "batch": "batch", "none": "none"}[g["advantage_scale"]]
    batch = g["profiles_per_step"] * g["group_size"]
    micro = min(g["micro_batch"], batch)
    if batch % micro:
        refuse("grpo.micro_batch", micro, "TRL needs the step's completions in whole micro-batches")
    return GRPOConfig(
        output_dir=out,
        max_steps=g["steps"],
        per_device_train_batch_size=micro,       # completions per forward/backward
        gradient_accumulation_steps=batch // micro,  # one optimizer step per GRPO step
        num_generations=g["group_size"],
        num_iterations=g["iterations"],
        max_completion_length=sampling["max_new_tokens"],
        temperature=sampling["temperature"],
        top_p=sampling["top_p"],
        top_k=0,
        beta=loss["beta"],
        epsilon=loss["eps_low"],
        epsilon_high=loss["eps_high"],
        loss_type=AGGREGATION[loss["aggregation"]],
        scale_rewards=scale,
        learning_rate=optim["lr"],
        adam_beta1=optim["beta1"],
        adam_beta2=optim["beta2"],
        adam_epsilon=float(optim["eps"]),
        weight_decay=optim["weight_decay"],
        max_grad_norm=optim["max_grad_norm"] if optim["max_grad_norm"] is not None else 0.0,
        lr_scheduler_type="constant_with_warmup" if optim["schedule"]["warmup_steps"] else "constant",
        warmup_steps=optim["schedule"]["warmup_steps"],
        shuffle_dataset=False,
        seed=cfg["seed"],
        data_seed=cfg["seed"],
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=cfg["model"]["device"] == "cpu",
        bf16=cfg["model"]["dtype"] == "bf16",
        disable_tqdm=True,
    )


class StepLog(TrainerCallback):
    """Per-step wall time, and the reward and lengths TRL logs for the step."""

    def __init__(self, timers):
        self.timers, self.rows, self.t0, self.pending = timers, [], None, None

    def on_step_begin(self, args, state, control, **kw):
        self.t0 = time.perf_counter()
        self.timers["generate"] = self.timers["score"] = 0.0

    def on_step_end(self, args, state, control, **kw):
        step_s = time.perf_counter() - self.t0
        gen, score = self.timers["generate"], self.timers["score"]
        self.pending = {"step": state.global_step, "t_step_s": step_s, "t_generate_s": gen,
                        "t_score_s": score, "t_update_s": step_s - gen - score}

    def on_log(self, args, state, control, logs=None, **kw):
        if self.pending is None or logs is None or "reward" not in logs:
            return
        row = dict(self.pending)
        row["reward_mean"] = logs["reward"]
        row["reward_std"] = logs.get("reward_std", float("nan"))
        row["completion_len_mean"] = logs.get("completions/mean_length", float("nan"))
        self.rows.append(row)
        self.pending = None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", required=True, help="the project's run's resolved config.yaml")
    ap.add_argument("--rows", required=True, help="dataset rows in step order (JSONL)")
    ap.add_argument("--url", required=True, help="serve-env")
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--hf-dir", required=True, help="where the dequantized GGUF is saved, once")
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    with open(args.config) as f:
        cfg = yaml.safe_load(f)
    with open(args.rows) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    os.makedirs(args.out, exist_ok=True)

    hf_dir = hf_folder(args.gguf, args.hf_dir)
    tok = AutoTokenizer.from_pretrained(hf_dir)
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    dtype = torch.bfloat16 if cfg["model"]["dtype"] == "bf16" else torch.float32
    model = AutoModelForCausalLM.from_pretrained(hf_dir, dtype=dtype)
    lora = cfg["lora"]
    peft_config = LoraConfig(r=lora["rank"], lora_alpha=lora["alpha"], lora_dropout=lora["dropout"],
                             target_modules=[PROJECTIONS[t] for t in lora["targets"]],
                             task_type="CAUSAL_LM")

    reward = EmpathyReward(args.url, policy="trl")
    timers = {"generate": 0.0, "score": 0.0}
    scored = []

    def reward_func(prompts=None, completions=(), profile=(), seed=(), difficulty=None, **kw):
        before = reward.seconds
        out = reward(prompts=prompts, completions=completions, profile=profile, seed=seed,
                     difficulty=difficulty)
        timers["score"] += reward.seconds - before
        scored.extend({"profile": p, "seed": s, "reward": r} for p, s, r in zip(profile, seed, out))
        return out

    reward_func.__name__ = reward.__name__
    log = StepLog(timers)
    trainer = GRPOTrainer(model=model, processing_class=tok, reward_funcs=reward_func,
                          train_dataset=Dataset.from_list(rows),
                          args=grpo_config(cfg, args.out), peft_config=peft_config,
                          callbacks=[log])
    generate = trainer._generate

    def timed_generate(*a, **kw):
        t0 = time.perf_counter()
        try:
            return generate(*a, **kw)
        finally:
            timers["generate"] += time.perf_counter() - t0

    trainer._generate = timed_generate
    t_loaded = time.perf_counter()
    trainer.train()
    t_end = time.perf_counter()

    with open(os.path.join(args.out, "steps.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(log.rows[0]))
        w.writeheader()
        w.writerows(log.rows)
    with open(os.path.join(args.out, "prompts.jsonl"), "w") as f:
        for s in scored:
            f.write(json.dumps(s) + "\n")
    import peft
    import transformers
    summary = {
        "versions": {"trl": trl.__version__, "transformers": transformers.__version__,
                     "peft": peft.__version__, "torch": torch.__version__},
        "threads": args.threads,
        "peak_rss_mib": peak_rss_mib(),
        "load_s": t_loaded - T_START,
        "train_s": t_end - t_loaded,
        "steps": len(log.rows),
    }
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
