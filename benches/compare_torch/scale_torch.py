#!/usr/bin/env python3
"""The cases of benches/scale.rs in PyTorch + transformers + peft, for results/perf/scale.md.

The same random-weight decoders (transformers' Qwen3ForCausalLM from a Qwen3Config at the shapes
of Qwen3-0.6B, 1.7B, 4B and 8B; N(0, 0.02) weights), rank-16 LoRA (alpha 32) on all seven
projections, and the same cases:
- `update:BxT`: one LoRA update over B rows of T random tokens: loss = -mean token log-prob,
  backward, AdamW; with `gradient_checkpointing_enable()` off and on (`--checkpoint`);
- `decode:B`: B prompts of 256 random tokens, 64 new tokens each, greedy, KV-cached.

Each row: the seconds of the last of --steps repetitions, tokens per second (decode: new tokens),
and the peak memory of that repetition (CUDA: `torch.cuda.max_memory_allocated`, above what was
allocated before it and in all; CPU: the process's peak resident set, both columns).

  python3 scale_torch.py --shape qwen3-0.6b --cases update:1x2048,decode:8 \\
      [--checkpoint both] [--steps 2] [--device cpu|cuda] [--dtype f32|bf16] [--threads N]
"""

import argparse
import os
import sys
import time

import torch
from peft import LoraConfig, get_peft_model
from transformers import Qwen3Config, Qwen3ForCausalLM

from bench_torch import peak_rss_mib

# (hidden, MLP width, layers, heads, KV heads, tied embeddings), as benches/scale.rs.
SHAPES = {
    "qwen3-0.6b": (1024, 3072, 28, 16, 8, True),
    "qwen3-1.7b": (2048, 6144, 28, 16, 8, True),
    "qwen3-4b": (2560, 9728, 36, 32, 8, True),
    "qwen3-8b": (4096, 12288, 36, 32, 8, False),
}
VOCAB = 151936
PROMPT, NEW_TOKENS = 256, 64


def rss_gib():
    return peak_rss_mib() / 1024.0


def model_for(shape, dtype, device):
    h, i, layers, heads, kv, tied = SHAPES[shape]
    cfg = Qwen3Config(hidden_size=h, intermediate_size=i, num_hidden_layers=layers,
                      num_attention_heads=heads, num_key_value_heads=kv, head_dim=128,
                      vocab_size=VOCAB, tie_word_embeddings=tied, rope_theta=1_000_000.0,
                      max_position_embeddings=40960, rms_norm_eps=1e-6, initializer_range=0.02,
                      use_cache=True)
    with torch.device(device):
        model = Qwen3ForCausalLM(cfg).to(dtype)
    lora = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, task_type="CAUSAL_LM",
                      target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                      "up_proj", "down_proj"])
    model = get_peft_model(model, lora)
    for p in model.parameters():  # adapters in f32, as the project keeps them
        if p.requires_grad:
            p.data = p.data.float()
    return model


def measured(device, fn):
    """(seconds, tokens, peak GiB above what was allocated before, peak GiB in all)."""
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
    t0 = time.perf_counter()
    tokens = fn()
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    if device == "cuda":
        peak = torch.cuda.max_memory_allocated()
        return seconds, tokens, (peak - before) / 2**30, peak / 2**30
    return seconds, tokens, float("nan"), rss_gib()


def update(model, device, batch, length, checkpoint, steps, dtype):
    if checkpoint:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.enable_input_require_grads()
    else:
        model.gradient_checkpointing_disable()
    model.train()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
    ids = torch.randint(0, VOCAB, (batch, length), device=device)

    def step():
        with torch.autocast(device, dtype=dtype, enabled=dtype != torch.float32):
            logits = model(input_ids=ids[:, :-1]).logits.float()
        lp = torch.log_softmax(logits, -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        (-lp.mean()).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return batch * length

    return [measured(device, step) for _ in range(steps)][-1]


@torch.no_grad()
def decode(model, device, rows, steps):
    model.eval()
    model.gradient_checkpointing_disable()
    ids = torch.randint(0, VOCAB, (rows, PROMPT), device=device)

    def run():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                             max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, pad_token_id=0)
        return (out.shape[1] - PROMPT) * rows

    return [measured(device, run) for _ in range(steps)][-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", default="qwen3-0.6b", choices=sorted(SHAPES))
    ap.add_argument("--cases", default="update:1x2048")
    ap.add_argument("--checkpoint", default="both", choices=["off", "on", "both"])
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    t0 = time.perf_counter()
    model = model_for(args.shape, dtype, args.device)
    n = sum(p.numel() for p in model.parameters() if not p.requires_grad)
    print(f"{args.shape}: {n / 1e9:.2f}B parameters in {args.dtype}, built in "
          f"{time.perf_counter() - t0:.0f} s (PyTorch {torch.__version__})", file=sys.stderr)
    checkpoints = {"off": [False], "on": [True], "both": [False, True]}[args.checkpoint]
    for case in args.cases.split(","):
        kind, arg = case.split(":")
        rows = []
        if kind == "update":
            b, t = (int(x) for x in arg.split("x"))
            for c in checkpoints:
                rows.append((f"update {arg}, checkpointing {'on' if c else 'off'}",
                             update(model, args.device, b, t, c, args.steps, dtype)))
        elif kind == "decode":
            rows.append((f"decode {arg} x ({PROMPT} + {NEW_TOKENS})",
                         decode(model, args.device, int(arg), args.steps)))
        else:
            sys.exit(f"case kind {kind}: expected update or decode")
        for label, (s, tok, above, total) in rows:
            print(f"| {args.shape} | torch {args.dtype} | {label} | {s:.1f} | {tok / s:.1f} | "
                  f"{above:.2f} | {total:.2f} | {rss_gib():.2f} |", flush=True)


if __name__ == "__main__":
    main()
