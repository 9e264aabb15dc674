#!/usr/bin/env python3
"""The cases of `cargo bench --bench model`, in PyTorch + transformers + peft.

Same weights (the SmolLM2-135M-Instruct Q4_1 GGUF, dequantized by transformers through the `gguf`
package, as the project dequantizes it), same prompt, same number of new tokens, same sampling
(temperature 1.0, top-p 0.9, no stop token), same LoRA (rank 16, alpha 32, all seven projections,
f32 adapters) and the same loss (-mean of the per-token log-probabilities), same AdamW step.

Prints one markdown row per case, and `case NAME START_MS END_MS` lines on stderr so that an
outside GPU-memory sampler can attribute its peak to a case (as benches/model.rs does).

  python3 bench_torch.py --gguf models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf \
      [--device cpu|cuda] [--dtype f32|bf16] [--autocast bf16] [--batches 1,16,32] [--threads 2]

`--autocast bf16` keeps the f32 weights and runs every case under `torch.autocast(device,
dtype=torch.bfloat16)`, PyTorch's mixed precision (on a CPU with AMX, oneDNN's bf16 matmuls): the
counterpart of the project's `model.cpu_matmul: bf16` (BENCH_CPU_MATMUL=bf16).
"""

import argparse
import contextlib
import os
import resource
import statistics
import sys
import time

import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, AutoTokenizer

PROMPT = "I lost my job today and I feel awful. What should I do?"
DECODE_TOKENS = 32
TRAIN_LEN = 512
MEASURE_S = 5.0  # criterion's measurement_time in benches/model.rs
MIN_SAMPLES = 10


def peak_rss_mib():
    """VmHWM of this process (reset by reset_peak), as benches/model.rs reads it."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def run_case(name, tokens, device, fn):
    """One warm-up, then at least MIN_SAMPLES timed calls or MEASURE_S seconds; the median."""
    reset_peak()
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    start_ms = int(time.time() * 1000)
    fn()
    sync(device)
    times = []
    t_end = time.perf_counter() + MEASURE_S
    while len(times) < MIN_SAMPLES or time.perf_counter() < t_end:
        t0 = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - t0)
    print(f"case {name} {start_ms} {int(time.time() * 1000)}", file=sys.stderr, flush=True)
    med = statistics.median(times)
    torch_peak = torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else float("nan")
    return (name, tokens, med, tokens / med, peak_rss_mib(), torch_peak)


def print_phases(name, device, x, model, opt, precision):
    """As benches/model.rs: five more steps, synchronized after the forward, the backward and the
    optimizer; each phase's median to stderr as `phases NAME: forward X ms, ...`."""
    ms = [[], [], []]
    for _ in range(5):
        t0 = time.perf_counter()
        with precision():
            logits = model(input_ids=x).logits[:, :-1].float()
        loss = -torch.log_softmax(logits, dim=-1).gather(-1, x[:, 1:, None]).squeeze(-1).mean()
        sync(device)
        t1 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        sync(device)
        t2 = time.perf_counter()
        opt.step()
        sync(device)
        t3 = time.perf_counter()
        for v, (a, b) in zip(ms, [(t0, t1), (t1, t2), (t2, t3)]):
            v.append((b - a) * 1e3)
    f, b, o = (statistics.median(v) for v in ms)
    print(f"phases {name}: forward {f:.1f} ms, backward {b:.1f} ms, optimizer {o:.1f} ms",
          file=sys.stderr, flush=True)


def load(path, device, dtype):
    folder, name = os.path.split(os.path.abspath(path))
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    return tok, model.to(device=device, dtype=dtype)


def decode_case(model, tok, b, how, device, precision):
    """Sampled decoding of b copies of PROMPT, DECODE_TOKENS new tokens each."""
    model.eval()
    text = tok.apply_chat_template(
        [{"role": "user", "content": PROMPT}], tokenize=False, add_generation_prompt=True
    )
    ids = tok(text, return_tensors="pt", add_special_tokens=False).input_ids.to(device)
    batch = ids.repeat(b, 1)
    attn = torch.ones_like(batch)

    def decode():
        with torch.no_grad(), precision():
            model.generate(
                input_ids=batch,
                attention_mask=attn,
                do_sample=True,
                temperature=1.0,
                top_p=0.9,
                top_k=0,
                max_new_tokens=DECODE_TOKENS,
                min_new_tokens=DECODE_TOKENS,
                pad_token_id=tok.eos_token_id,
            )

    name = f"decode batch {b}{how} ({ids.shape[1]}-token prompt, {DECODE_TOKENS} new)"
    return run_case(name, b * DECODE_TOKENS, device, decode)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
    ap.add_argument("--batches", default="1,16,32")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cases", default="decode,train", help="decode, train or both")
    ap.add_argument("--autocast", choices=["bf16"], help="mixed precision: f32 weights, bf16 matmuls")
    args = ap.parse_args()
    if args.autocast:
        def precision():
            return torch.autocast(args.device, dtype=torch.bfloat16)
    else:
        precision = contextlib.nullcontext
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    rows = []
    if "decode" in args.cases:
        tok, model = load(args.gguf, args.device, dtype)
        for b in [int(x) for x in args.batches.split(",")]:
            rows.append(decode_case(model, tok, b, "", args.device, precision))
        del model
    if "train" in args.cases:
        tok, model = load(args.gguf, args.device, dtype)
        cfg = LoraConfig(
            r=16,
            lora_alpha=32,
            lora_dropout=0.0,
            target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        )
        model = get_peft_model(model, cfg)  # adapters in f32 (peft's autocast_adapter_dtype)
        if "decode" in args.cases:
            # As rollouts decode: through the adapters (peft's unmerged LoRA layers).
            rows.append(decode_case(model, tok, 16, " through LoRA r16", args.device, precision))
        model.train()
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
        ids = tok("I hear how much this hurts. " * 200, add_special_tokens=False).input_ids[:TRAIN_LEN]
        for rows_per_step in [1, 4]:
            x = torch.tensor([ids] * rows_per_step, device=args.device)

            def step():
                with precision():
                    logits = model(input_ids=x).logits[:, :-1].float()
                lp = torch.log_softmax(logits, dim=-1).gather(-1, x[:, 1:, None]).squeeze(-1)
                loss = -lp.mean()
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()

            name = f"train LoRA r16 fwd+bwd+AdamW, {rows_per_step}x{TRAIN_LEN}"
            rows.append(run_case(name, rows_per_step * TRAIN_LEN, args.device, step))
            if args.device == "cuda" or os.environ.get("BENCH_PHASES") == "1":
                print_phases(name, args.device, x, model, opt, precision)
    mixed = f", autocast {args.autocast}" if args.autocast else ""
    print(f"\ntorch {torch.__version__}, device {args.device}, dtype {args.dtype}{mixed}, threads {args.threads}")
    print("| case | tokens/iter | median s/iter | tokens/s | peak RSS (MiB) | torch peak allocated (MiB) |")
    print("|---|---|---|---|---|---|")
    for name, tokens, med, tps, rss, tpk in rows:
        print(f"| {name} | {tokens} | {med:.3f} | {tps:.1f} | {rss:.0f} | {tpk:.0f} |")


if __name__ == "__main__":
    main()
