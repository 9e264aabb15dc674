import _shared  # noqa: F401  (puts ../redteam-helper on the path)
import sys, statistics, importlib, os, collections, json
from env import run
mod=importlib.import_module(sys.argv[1])
cfg=os.environ.get("CFG","")
name=sys.argv[1]+("-"+cfg if cfg else "")  # logged as policy.model
res=[]; comp=collections.Counter(); reas=collections.Counter(); n=0
for s in range(501,521):
    e,log=run(mod.pol, split="test", seed=s, turns=8, name=name); res.append(e)
    for rep,st in log:
        n+=1
        for k,v in st["appraisal"]["components"].items():
            if v: comp[k]+=1
        for r in st["appraisal"]["reasons"]: reas[r]+=1
print(name, "TEST mean", statistics.mean(res), res, "replies", n, flush=True)
print("components",dict(comp)); print("reasons",dict(reas.most_common(20)))
