#!/usr/bin/env python3
"""Which reading of SmolLM2-135M's hidden states best tells unsafe replies from safe ones?
Reads the features `cargo run --release --example safety_features` wrote to DIR and fits a
logistic regression (scikit-learn, standardized features, bank replies weighted) on four fifths
(by the FNV-1a hash of the reply, as the safety fit splits), then reads the fifth kept apart:
AUC of the tuning banks' unsafe replies against their safe replies to the same contexts and
against honest human replies, and recall and safe-bank replies flagged at the threshold that flags
1% and 0.5% of the honest replies. The never-tuned banks are not read.

    scripts/validation/safety_lm_probe.py DIR
"""
import json
import sys

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.preprocessing import StandardScaler

LM, MINI = 2 * 576, 384
# A reply that points to help or asks about safety, as data/safety.yaml's `help` list says it.
HELP = ["crisis line", "crisis text", "hotline", "helpline", "lifeline", "988", "samaritans",
        "emergency", "911", "999", "112", "doctor", "gp", "therapist", "counselor", "counsellor",
        "professional", "reach out", "are you safe", "are you thinking", "having thoughts",
        "thoughts of", "thinking of", "thinking about", "stay safe", "keep you safe", "a&e",
        "pharmacist", "nurse"]


def fnv1a64(b):
    h = 0xCBF29CE484222325
    for c in b:
        h = ((h ^ c) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def load(d):
    raw = np.fromfile(f"{d}/feats.f32", dtype="<f4")
    pos, items = 0, []
    for line in open(f"{d}/meta.jsonl"):
        m = json.loads(line)
        n = m["n_sent"]
        m["rep"] = raw[pos:pos + LM]
        pos += LM
        m["sents"] = raw[pos:pos + LM * n].reshape(n, LM)
        pos += LM * n
        m["ctx"], m["rmini"] = raw[pos:pos + MINI], raw[pos + MINI:pos + 2 * MINI]
        pos += 2 * MINI
        m["apart"] = fnv1a64(m["reply"].encode()) % 5 == 0
        m["y"] = int(m["kind"] is not None)
        items.append(m)
    return items


def feat(i, variant, x=None):
    x = i["rep"] if x is None else x
    return {"lm": x,
            "lm+ctx": np.concatenate([x, i["ctx"]]),
            "lm+ctx+minilm": np.concatenate([x, i["ctx"], i["rmini"], i["rmini"] * i["ctx"]])}[variant]


def run(items, variant, dia, c, sentence_max=False, veto=False, bank_weight=3.0):
    fit = [i for i in items if not i["apart"] and (dia or i["src"] != "diasafety")]
    dev = [i for i in items if i["apart"] and i["src"] != "diasafety"]
    x = np.array([feat(i, variant) for i in fit])
    w = np.array([bank_weight if i["src"] == "bank" else 1.0 for i in fit])
    sc = StandardScaler().fit(x)
    clf = LogisticRegression(C=c, max_iter=3000).fit(sc.transform(x), [i["y"] for i in fit],
                                                     sample_weight=w)

    def score(i):
        rows = [feat(i, variant)]
        if sentence_max:
            rows += [feat(i, variant, s) for s in i["sents"]]
        s = clf.predict_proba(sc.transform(rows))[:, 1].max()
        return 0.0 if veto and any(h in i["reply"].lower() for h in HELP) else s

    un = [score(i) for i in dev if i["src"] == "bank" and i["y"]]
    sb = [score(i) for i in dev if i["src"] == "bank" and not i["y"]]
    ho = sorted((score(i) for i in dev if i["src"] == "honest"), reverse=True)
    a1 = roc_auc_score([1] * len(un) + [0] * len(sb), un + sb)
    a2 = roc_auc_score([1] * len(un) + [0] * len(ho), un + ho)
    cells = []
    for q in (0.01, 0.005):
        t = ho[int(q * len(ho))]
        cells += [np.mean(np.array(un) > t), np.mean(np.array(sb) > t)]
    name = f"{variant}{', sentence max' if sentence_max else ''}{', help veto' if veto else ''}" \
           f"{', + DiaSafety train' if dia else ''}, C={c}"
    print(f"| {name} | {a1:.3f} | {a2:.3f} | " + " | ".join(f"{v:.1%}" for v in cells) + " |")


def main():
    items = load(sys.argv[1])
    dev = [i for i in items if i["apart"] and i["src"] != "diasafety"]
    print(f"dev fifth: {sum(i['src'] == 'bank' and i['y'] for i in dev)} unsafe and "
          f"{sum(i['src'] == 'bank' and not i['y'] for i in dev)} safe bank replies, "
          f"{sum(i['src'] == 'honest' for i in dev)} honest human replies\n")
    print("| reading | AUC unsafe vs safe bank | AUC unsafe vs honest | recall at 1% honest | "
          "safe bank flagged there | recall at 0.5% honest | safe bank flagged there |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for args in [("lm", False, 0.1), ("lm+ctx", False, 0.1), ("lm+ctx", False, 0.003),
                 ("lm+ctx+minilm", False, 0.1)]:
        run(items, *args)
    run(items, "lm+ctx", False, 0.1, sentence_max=True)
    run(items, "lm+ctx", False, 0.003, veto=True)
    run(items, "lm+ctx", True, 0.003)


if __name__ == "__main__":
    main()
