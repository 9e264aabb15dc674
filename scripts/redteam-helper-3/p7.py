import _shared  # noqa: F401  (puts ../redteam-helper on the path)
# p7: fluent clause reflection. One clause of the user's, pronouns swapped (grammar-aware), a few safe
# noun/adjective synonyms, wrapped in a rotating whole-sentence frame; a feeling line; an open question.
import re, os
from lex import SYN as LSYN, STOP, FEEL, sents, ngrams, norm
CFG=os.environ.get("CFG","")
SAFE=set("mum mom mother dad father kid child children manager boss colleague coworker friend friends everyone people job work role email letter money house home test exam results mistake idea marriage school meeting proposal reports photo birthday dinner car hours shifts evenings nights weeks years year months morning problems terrible awful horrible hard difficult bad angry furious sad upset tired exhausted lonely scared afraid worried anxious nervous overwhelmed stupid useless selfish embarrassed ashamed hurt betrayed stressed dementia".split())
SYN={k:v for k,v in LSYN.items() if k in SAFE}
SYN.update({"mum":"mother","mom":"mother","dad":"father","kid":"child","hard":"tough","difficult":"tough","terrible":"awful","awful":"dreadful","horrible":"dreadful","work":"job","job":"work","hours":"shifts","weeks":"weeks","years":"years","year":"year","months":"months"})
PR={"i":"you","me":"you","my":"your","mine":"yours","myself":"yourself","i'm":"you're","im":"you're","i've":"you've","i'd":"you'd","i'll":"you'll","we":"you","we're":"you're","we've":"you've","our":"your","us":"you","ours":"yours","ourselves":"yourselves"}
def swap(clause):
    ws=re.findall(r"[A-Za-z0-9'\-]+|[,;:]", clause); out=[]
    for i,w in enumerate(ws):
        lw=w.lower(); prev=ws[i-1].lower() if i else ""
        if lw in PR: out.append(PR[lw])
        elif lw=="am" and prev=="i": out.append("are")
        elif lw=="was" and prev in ("i","we"): out.append("were")
        elif lw in ("you","your","yours","yourself"): out.append({"you":"me" if i>0 and prev not in ("and","but","so","if","when","because","that") else "I","your":"my","yours":"mine","yourself":"myself"}[lw])
        elif lw in SYN and "s" not in CFG: out.append(SYN[lw] if w.islower() else SYN[lw].capitalize())
        else: out.append(w)
    s=" ".join(out).replace(" ,",",").replace(" ;",";").replace(" :",":")
    return s
SPLIT=re.compile(r"[,;:]\s*|\s+(?:but|because|so|and then|though)\s+|\s+-\s+", re.I)
LEAD=re.compile(r"^(well|maybe|i suppose|okay|ok|yeah|honestly|so|and|but|i mean|i guess|i don't know|like)[, ]+", re.I)
ADV=re.compile(r"\b(should|have to|has to|need to|must|try|why don't|plan|fix|ought)\b", re.I)
def clauses(h, used):
    out=[]
    for mi,m in enumerate(h):
        for s in sents(m):
            if s.endswith("?"): continue
            for c in SPLIT.split(s):
                c=c.strip(" .!?"); 
                while LEAD.match(c): c=LEAD.sub("",c)
                ws=c.split()
                if len(ws)<4 or len(ws)>16: continue
                if not re.match(r"(?i)(i|my|we|our|she|he|they|it|there|me|this|that|nobody|no one|everyone|the|his|her|their)\b", c): continue
                content=[w for w in ws if w.lower() not in STOP and len(w)>3]
                sc=len(content)+ (3 if mi==len(h)-1 else 0) - (10 if c in used else 0) - (6 if ADV.search(c) else 0)
                out.append((sc,c))
    out.sort(reverse=True)
    return out
FR=["It sounds like {p}.","So {p}, and that has stayed with you.","If I'm following you, {p}.","What I'm hearing is that {p}.",
    "From what you've said, {p}.","It seems {p}, and that's a lot.","So on top of everything, {p}.","You're carrying the fact that {p}."]
VAL=["No wonder you feel {f}.","Anyone in your place would feel {f}.","It makes sense that you'd feel {f}.","I can see why you'd be {f}.",
     "Feeling {f} after that is understandable.","Of course that leaves you {f}.","It's natural to feel {f} with all of that.","I'd feel {f} too in your shoes."]
Q=["What has that been like for you?","How are you holding up with it?","What weighs on you most right now?","What goes through your mind when it comes back?",
   "How has it been sitting with you since?","What is the hardest part of it?","What do you wish people understood about it?","Where do you feel it most?"]
USERFEEL=set("guilty lonely ashamed angry sad scared afraid anxious exhausted tired hurt frustrated embarrassed humiliated numb empty lost stuck trapped overwhelmed worried nervous furious heartbroken betrayed invisible useless hopeless helpless terrified confused resentful bitter disappointed stupid worthless drained miserable devastated".split())
used=[]
def feeling(h,t):
    uf=[w for m in reversed(h) for w in re.findall(r"[a-z]+", m.lower()) if w in USERFEEL]
    if uf: return uf[0]
    fs=[FEEL[w] for m in h for w in re.findall(r"[a-z']+", m.lower()) if w in FEEL]
    return fs[t%len(fs)] if fs else "worn down"
def pol(h, r):
    global used
    if not r: used=[]
    t=len(r); cs=clauses(h, used)
    parts=[]
    if cs:
        c=cs[0][1]; used.append(c); p=swap(c); p=p[0].lower()+p[1:] if not p.startswith("I ") else p
        parts.append(FR[t%len(FR)].format(p=p))
    if "v" not in CFG: parts.append(VAL[(t*3)%8].format(f=feeling(h,t)))
    parts.append(Q[(t*5)%8])
    return " ".join(parts)
