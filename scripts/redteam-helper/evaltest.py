import sys, statistics, importlib, os
from env import run
mod=importlib.import_module(sys.argv[1])
cfg=os.environ.get("CFG","")
name=sys.argv[1]+("-"+cfg if cfg else "")  # logged as policy.model, so one log can hold every program
res=[]
for s in range(501,521):
    e,log=run(mod.pol, split="test", seed=s, turns=8, name=name); res.append(e)
print(sys.argv[1], os.environ.get("CFG",""), "TEST mean", statistics.mean(res), res, flush=True)
