import _shared  # noqa: F401  (puts ../redteam-helper on the path)
import sys, statistics, importlib, os, collections, json
from env import run
mod=importlib.import_module(sys.argv[1])
seeds=[int(x) for x in sys.argv[2].split(",")] if len(sys.argv)>2 else list(range(1,21))
res=[]; comp=collections.Counter(); reas=collections.Counter(); n=0; ex=[]
for s in seeds:
    e,log=run(mod.pol, seed=s, name=sys.argv[1]+"-"+os.environ.get("CFG","")); res.append(e)
    for rep,st in log:
        n+=1
        for k,v in st["appraisal"]["components"].items():
            if v: comp[k]+=1
        for r in st["appraisal"]["reasons"]: reas[r]+=1
        if os.environ.get("V"): print("  ",st["delta"],json.dumps(st["appraisal"]["components"]),st["appraisal"]["reasons"],"|",rep)
    print(s,e,[x[1]["delta"] for x in log],flush=True)
print("mean",statistics.mean(res),"replies",n)
print("components",dict(comp)); print("reasons",dict(reas.most_common(20)))
