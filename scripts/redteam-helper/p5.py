from env import *
from lex import *
import lex, p3, sys, statistics, re, os
from p2 import OPEN, VAL, Q, NEED, strip_lead
from p4 import QACK
CFG=os.environ.get("CFG","qv")
def pol(h, r):
    if not r: p3.used=[]
    t=len(r); last=h[-1]; allu=" ".join(h)
    cands=sorted([(sc - (20 if s.endswith("?") else 0), s) for sc,s in p3.candidates(h)], reverse=True)
    s=cands[0][1]; p3.used.append(s)
    p=paraphrase(strip_lead(s)).rstrip(".!?"); p=strip_lead(p); p=p[0].lower()+p[1:]
    parts=[]
    if "?" in last: parts.append(QACK[t%4])
    parts.append(OPEN[t%8].format(p=p))
    if "2" in CFG and len(cands)>1:
        s2=cands[1][1]; p3.used.append(s2)
        p2_=strip_lead(paraphrase(strip_lead(s2)).rstrip(".!?")); parts.append(p2_[0].upper()+p2_[1:]+".")
    fs=feelings(s) or feelings(last) or feelings(allu) or ["worn down"]
    f=fs[t % len(fs)]
    if "v" in CFG: parts.append(VAL[(t*3)%8].format(f=f))
    m=NEED.search(last)
    if m:
        x=paraphrase(m.group(2)).strip()
        parts.append(("You are not "+x+".") if m.group(1) else ("You are "+x+"."))
    elif "q" in CFG: parts.append(Q[(t*5)%8])
    return lex.decopy(" ".join(parts), allu)
if __name__=="__main__":
    seeds=[int(x) for x in sys.argv[1].split(",")]
    res=[]
    for s in seeds:
        e,log=run(pol, seed=s); res.append(e)
    print(CFG,"mean",statistics.mean(res), res)
