from env import *
from lex import *
import p3, sys, statistics, re
from p2 import OPEN, VAL, Q, NEED, strip_lead
QACK=["That's a fair question, and I don't want to skip past it.","You asked something real there, and it deserves an answer.",
      "Good question, and there's no easy answer to it.","I hear the question in that, and it's a reasonable one."]
TWO = "--two" in sys.argv
def pol(h, r):
    if not r: p3.used=[]
    t=len(r); last=h[-1]; allu=" ".join(h)
    cands=[(sc - (20 if s.endswith("?") else 0), s) for sc,s in p3.candidates(h)]
    cands.sort(reverse=True)
    s=cands[0][1]; p3.used.append(s)
    p=paraphrase(strip_lead(s)).rstrip(".!?"); p=strip_lead(p); p=p[0].lower()+p[1:]
    fs=feelings(s) or feelings(last) or feelings(allu) or ["worn down"]
    f=fs[t % len(fs)]
    parts=[]
    if "?" in last: parts.append(QACK[t%4])
    parts+=[OPEN[t%8].format(p=p), VAL[(t*3)%8].format(f=f)]
    m=NEED.search(last)
    if m:
        x=paraphrase(m.group(2)).strip()
        parts.append(("You are not "+x+".") if m.group(1) else ("You are "+x+"."))
    else:
        parts.append(Q[(t*5)%8])
    return decopy(" ".join(parts), allu)
if __name__=="__main__":
    train_main(pol)
