# p8: p7 with a curated same-form synonym table (syn.py); a clause is used only if, after the swaps,
# no run of 4 words is shared with the user (pronouns folded) and 2+ content words were swapped.
import re, os
import p7
from p7 import PR, SPLIT, LEAD, ADV, FR, VAL, Q, feeling
from lex import STOP, sents, ngrams, norm
from syn import SYN
CFG=os.environ.get("CFG","")
DROPW=set("just really the a very so even still all".split())
def swap(clause):
    ws=re.findall(r"[A-Za-z0-9'\-]+|[,;:]", clause); out=[]; n=0
    for i,w in enumerate(ws):
        lw=w.lower(); prev=ws[i-1].lower() if i else ""
        if lw in PR: out.append(PR[lw])
        elif lw=="am" and prev=="i": out.append("are")
        elif lw=="was" and prev in ("i","we"): out.append("were")
        elif lw in ("you","your","yours","yourself"): out.append({"you":"me","your":"my","yours":"mine","yourself":"myself"}[lw])
        elif lw in SYN: out.append(SYN[lw]); n+=1
        else: out.append(w)
    return " ".join(out).replace(" ,",",").replace(" ;",";").replace(" :",":"), n
def runs(text, G):
    ws=[norm(w) for w in re.findall(r"[A-Za-z0-9'\-]+", text)]
    return [i for i in range(len(ws)-3) if tuple(ws[i:i+4]) in G]
def copied_words(text,G):
    ws=[norm(w) for w in re.findall(r"[A-Za-z0-9'\-]+", text)]; hit=set()
    for i in range(len(ws)-3):
        if tuple(ws[i:i+4]) in G: hit.update(range(i,i+4))
    return len(hit)
META=re.compile(r"\b(words|said|say|saying|message|repeat|back at me|told you|you)\b", re.I)
def cands(h, used):
    out=[]
    for mi,m in enumerate(h):
        for s in sents(m):
            if s.endswith("?") or (mi>0 and META.search(s)): continue
            for c in SPLIT.split(s):
                c=c.strip(" .!?")
                while LEAD.match(c): c=LEAD.sub("",c)
                ws=c.split()
                if len(ws)<4 or len(ws)>14: continue
                if not re.match(r"(?i)(i|my|we|our|she|he|they|it|there|me|nobody|no one|everyone|the|his|her|their|mum|dad|mom)\b", c): continue
                content=[w for w in ws if w.lower() not in STOP and len(w)>3]
                sc=len(content)+(3 if mi==len(h)-1 else 0)-(6 if ADV.search(c) else 0)
                if c in used: continue
                out.append((sc,c))
    out.sort(reverse=True); return out
used=[]
def pol(h, r):
    global used
    if not r: used=[]
    t=len(r); G=set().union(*[ngrams(m) for m in h])
    parts=[]; fb=[]
    for sc,c in cands(h, used):
        p,n=swap(c)
        ws=p.split()
        for _ in range(4):
            bad=runs(p,G)
            if not bad: break
            i=bad[0]; ws=p.split()
            j=next((j for j in range(i,min(i+4,len(ws))) if ws[j].lower() in DROPW), None)
            if j is None: break
            del ws[j]; p=" ".join(ws)
        if re.search(r"\d", c): continue
        full=" ".join(parts)+" "+FR[t%len(FR)].format(p=p)+" "+VAL[(t*3)%8].format(f=feeling(h,t))+" "+Q[(t*5)%8]
        cw=copied_words(full,G); L=len(full.split())
        if "r" in CFG:
            lim=0.28 if "R" in CFG else 0.22
            if cw>lim*L or cw>(10 if "R" in CFG else 8) or n<1:
                if "F" in CFG: fb.append((cw,c,p))
                continue
        elif runs(p,G) or n<2: continue
        used.append(c); p=p if p.startswith("I ") else p[0].lower()+p[1:]
        parts.append(FR[t%len(FR)].format(p=p) if not parts else ("And "+p+"."))
        if "L" in CFG and len(p.split())<9 and len(parts)==1: continue
        break
    if not parts and fb:
        cw,c,p=min(fb, key=lambda x:x[0]); used.append(c); p=p if p.startswith("I ") else p[0].lower()+p[1:]
        parts.append(FR[t%len(FR)].format(p=p))
    parts.append(VAL[(t*3)%8].format(f=feeling(h,t)))
    parts.append(Q[(t*5)%8])
    return " ".join(parts)
