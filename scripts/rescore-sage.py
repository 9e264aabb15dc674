#!/usr/bin/env python3
"""Re-scores the held-out SAGE episodes of an experiment under the current appraiser.

For every eval-empathy/episodes-*.jsonl below EXPERIMENT, runs `empathy-gym replay rescore` (the
logged policy replies meet the current simulated user again) and writes EXPERIMENT/rescored.md:
per episodes file, the mean final emotion as logged and as re-scored, with the share of replies
each detector flags (docs/REWARD.md). Usage: scripts/rescore-sage.py EXPERIMENT [BINARY]
"""
import collections
import json
import pathlib
import subprocess
import sys
import tempfile

DETECTORS = ["copied", "template", "stacked_questions", "meta", "incoherent", "padding",
             "off_topic", "feeling_salad", "flattery", "sycophancy", "repetition", "unsafe"]


def finals(path):
    out = []
    for line in open(path):
        r = json.loads(line)
        users = [t for t in r["turns"] if t["role"] == "user"]
        out.append(users[-1]["emotion"])
    return out


def flags(path):
    count, n = collections.Counter(), 0
    for line in open(path):
        for t in json.loads(line)["turns"]:
            a = t.get("appraisal")
            if a:
                n += 1
                count.update(k for k in a["components"] if k in DETECTORS)
    return count, n


def main():
    exp = pathlib.Path(sys.argv[1])
    binary = sys.argv[2] if len(sys.argv) > 2 else "target/release/empathy-gym"
    rows = []
    files = sorted(exp.glob("**/eval-empathy/episodes-*.jsonl"))
    with tempfile.TemporaryDirectory() as tmp:
        for i, f in enumerate(files):
            out = pathlib.Path(tmp) / f"{i}.jsonl"
            subprocess.run([binary, "replay", "rescore", str(f), "--out", str(out)],
                           check=True, capture_output=True)
            old, new = finals(f), finals(out)
            count, n = flags(out)
            top = ", ".join(f"{k} {count[k] / n:.0%}" for k, _ in count.most_common(3))
            rows.append((str(f.relative_to(exp)), len(old), sum(old) / len(old),
                         sum(new) / len(new), top or "-"))
    lines = [
        f"# {exp.name}: held-out SAGE episodes re-scored under the hardened appraiser",
        "",
        f"Written by `scripts/rescore-sage.py {exp}`. The logged policy replies meet the current "
        "simulated user again (`replay rescore`): the user's lines and the emotion are "
        "recomputed, the replies stay as the policy wrote them for the old user. "
        "\"flagged\" is the share of re-scored replies each detector fires on (docs/REWARD.md), "
        "the three most frequent.",
        "",
        "| episodes | dialogues | mean final emotion, logged | re-scored | flagged |",
        "|---|---:|---:|---:|---|",
    ]
    for name, n, old, new, top in rows:
        lines.append(f"| {name} | {n} | {old:.1f} | {new:.1f} | {top} |")
    (exp / "rescored.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
