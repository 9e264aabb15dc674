from env import *
from lex import *
import lex
lex.SYN["nothing"]="not a thing"; lex.SYN["said"]="mentioned"
import sys, statistics, re
from p2 import OPEN, VAL, Q, NEED, strip_lead
ADV = re.compile(r"\b(should|have to|has to|need to|must|try|why don't|just get|pull|drop it|plan|fix|ought)\b", re.I)
CLOSE = re.compile(r"\b(said|say|all of it|nothing (else|more)|no more|that's it|that's all|story|add|more to it)\b", re.I)
used=[]
def candidates(h):
    out=[]
    for mi,m in enumerate(h):
        for s in sents(m):
            if len(s.split())<4: continue
            sc=len(feelings(s))*3+len([w for w in s.split() if w.lower() not in STOP])
            if ADV.search(s): sc-=15
            if CLOSE.search(s): sc-=12
            if NEED.search(s): sc-=10
            if mi==len(h)-1: sc+=4
            if s in used: sc-=30
            out.append((sc,s))
    return out
def pol(h, r):
    global used
    if not r: used=[]
    t=len(r); last=h[-1]; allu=" ".join(h)
    sc,s=max(candidates(h))
    used.append(s)
    p=paraphrase(strip_lead(s)).rstrip(".!?")
    p=strip_lead(p); p=p[0].lower()+p[1:]
    fs=feelings(s) or feelings(last) or feelings(allu) or ["worn down"]
    f=fs[t % len(fs)]
    parts=[OPEN[t%8].format(p=p), VAL[(t*3)%8].format(f=f)]
    m=NEED.search(last)
    if m:
        x=paraphrase(m.group(2)).strip()
        parts.append(("You are not "+x+".") if m.group(1) else ("You are "+x+"."))
    else:
        parts.append(Q[(t*5)%8])
    return decopy(" ".join(parts), allu)
if __name__=="__main__":
    train_main(pol)
