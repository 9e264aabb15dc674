# p6: reflect a CLAUSE (not a whole sentence) of the user's, synonym-swapped; optional split into <5-word sentences;
# name a feeling (prefer one the user said); one open question from a rotating bank.
from env import *
from lex import *
import lex, p3, sys, statistics, re, os
from p2 import OPEN, VAL, Q, NEED, strip_lead
from p4 import QACK
CFG=os.environ.get("CFG","c")
SPLIT=re.compile(r",\s*|\s+(?:and|but|because|so|then|when|while|since|though)\s+", re.I)
def clauses(s):
    return [c.strip() for c in SPLIT.split(s) if c and len(c.split())>=3]
def cscore(c):
    return len(feelings(c))*3+len([w for w in c.split() if w.lower() not in STOP])
def chunk(ws, n=4):
    out=[]; i=0
    while i<len(ws):
        out.append(ws[i:i+n]); i+=n
    if len(out)>1 and len(out[-1])<2: out[-2]+=out[-1]; out.pop()
    return out
def pol(h, r):
    if not r: p3.used=[]
    t=len(r); last=h[-1]; allu=" ".join(h)
    cands=sorted([(sc - (20 if s.endswith("?") else 0), s) for sc,s in p3.candidates(h)], reverse=True)
    s=cands[0][1]; p3.used.append(s)
    cl=clauses(strip_lead(s)) or [strip_lead(s)]
    if "c" in CFG:
        cl=sorted(cl, key=cscore, reverse=True)[:1]
    p=" ".join(paraphrase(strip_lead(c)).rstrip(".!?") for c in cl)
    p=strip_lead(p); p=p[0].lower()+p[1:]
    parts=[]
    if "?" in last: parts.append(QACK[t%4])
    if "f" in CFG:
        if ("2" in CFG or ("L" in CFG and len(p.split())<10)) and len(cands)>1:
            s2=cands[1][1]; p3.used.append(s2); p=p+" "+paraphrase(strip_lead(s2)).rstrip(".!?")
        ws=p.split(); ch=chunk(ws,3 if "3" in CFG else 4)
        parts.append(" ".join(ch[0])[0].upper()+" ".join(ch[0])[1:]+".")
        for c in ch[1:]: parts.append(("Then " if "n" not in CFG else "")+" ".join(c)+".") if len(c)<4 else parts.append(" ".join(c)+".")
    else:
        parts.append(OPEN[t%8].format(p=p))
    uf=[w for w in re.findall(r"[a-z]+", last.lower()) if w in USERFEEL]
    fs=(uf if "u" in CFG else [])+ (feelings(s) or feelings(last) or feelings(allu) or ["worn down"])
    f=fs[0] if "u" in CFG and uf else fs[t % len(fs)]
    parts.append(VAL[(t*3)%8].format(f=f))
    m=NEED.search(last)
    if m:
        x=paraphrase(m.group(2)).strip()
        parts.append(("You are not "+x+".") if m.group(1) else ("You are "+x+"."))
    else: parts.append(Q[(t*5)%8])
    return lex.decopy(" ".join(parts), allu)
USERFEEL=set("guilty lonely ashamed angry sad scared afraid anxious exhausted tired hurt frustrated embarrassed humiliated jealous numb empty lost stuck trapped overwhelmed worried nervous furious heartbroken betrayed invisible useless hopeless helpless terrified confused resentful bitter disappointed relieved grateful proud stupid worthless drained miserable devastated".split())
if __name__=="__main__":
    pass
