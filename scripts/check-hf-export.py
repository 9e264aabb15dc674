#!/usr/bin/env python3
"""Checks that Hugging Face transformers loads a folder written by `empathy-gym export` and
answers exactly as empathy-gym's own loader does.

    python3 scripts/check-hf-export.py EXPORT_DIR [--bin target/release/empathy-gym]

Needs `pip install torch transformers`. For each prompt below, both sides decode greedily, with
the same system prompt, from the chat template in the folder: transformers with
AutoModelForCausalLM / AutoTokenizer, and `empathy-gym chat --model EXPORT_DIR --temperature 0`.
Exit status 0 when every reply matches, 1 otherwise.
"""

import argparse
import subprocess
import sys

# Both sides get this system prompt, so the token ids match exactly.
SYSTEM = "You are a helpful assistant. Answer briefly."

PROMPTS = [
    "What is the capital of France?",
    "I failed my driving test again and I feel stupid.",
    "My sister never calls me back. What should I do?",
]


def hf_replies(folder, max_new_tokens):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32)
    model.eval()
    print(f"transformers loaded {type(model).__name__} from {folder}", flush=True)
    out = []
    for prompt in PROMPTS:
        ids = tok.apply_chat_template(
            [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}],
            add_generation_prompt=True,
            return_tensors="pt",
            return_dict=True,
        )["input_ids"]
        with torch.no_grad():
            gen = model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=max_new_tokens,
                do_sample=False,
                eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
                pad_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
            )
        out.append(tok.decode(gen[0, ids.shape[1] :], skip_special_tokens=True).strip())
    return out


def eg_reply(binary, folder, prompt, max_new_tokens):
    res = subprocess.run(
        [
            binary,
            "chat",
            "--model",
            folder,
            "--temperature",
            "0",
            "--max-new-tokens",
            str(max_new_tokens),
            "--system",
            SYSTEM,
        ],
        input=prompt + "\n",
        capture_output=True,
        text=True,
        check=True,
    )
    lines = [l for l in res.stdout.splitlines() if l.startswith("model: ")]
    if not lines:
        sys.exit(f"no 'model: ' line in empathy-gym chat output:\n{res.stdout}{res.stderr}")
    return lines[0][len("model: ") :].strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", help="a folder written by `empathy-gym export`")
    ap.add_argument("--bin", default="target/release/empathy-gym")
    ap.add_argument("--max-new-tokens", type=int, default=32)
    args = ap.parse_args()

    hf = hf_replies(args.folder, args.max_new_tokens)
    ok = True
    for prompt, h in zip(PROMPTS, hf):
        e = eg_reply(args.bin, args.folder, prompt, args.max_new_tokens)
        same = h == e
        ok &= same
        print(f"\nuser: {prompt}\n  transformers: {h}\n  empathy-gym:  {e}\n  {'same' if same else 'DIFFERENT'}")
    print("\nall replies identical" if ok else "\nreplies differ")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
