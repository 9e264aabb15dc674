from env import *
from lex import *
import sys, statistics, re
OPEN = ["So {p}.", "If I'm hearing right, {p}.", "What stands out is that {p}.", "It sounds like {p}.",
        "From what you're saying, {p}.", "So on top of everything, {p}.", "That means {p}.", "And now {p}."]
VAL = ["No wonder you feel {f}.", "Anyone in that spot would feel {f}.", "It makes sense that you'd be {f}.",
       "Feeling {f} about that is understandable.", "I can see why that leaves you {f}.", "Of course that would feel {f}.",
       "Being {f} after that is a very human reaction.", "That's a lot to carry, and {f} fits."]
Q = ["What has that been like for you?", "How are you holding up with it?", "What weighs on you most right now?",
     "What goes through your mind when it comes back?", "How has it been sitting with you since?",
     "What is the hardest part of it?", "What do you wish people understood about it?", "Where do you feel it most?"]
NEED = re.compile(r"(?:tell me|hear that|know that|say) (?:that )?(?:i'm|i am) (not )?([^.,!?]*?)(?: for [^.,!?]*)?[.,!?]", re.I)
def pick_sent(text):
    ss=sents(text)
    def score(s): return len(feelings(s))*3+len([w for w in s.split() if w.lower() not in STOP])-(10 if NEED.search(s) else 0)
    ss=[s for s in ss if len(s.split())>=4] or ss
    return max(ss, key=score)
def strip_lead(p):
    return re.sub(r"^(well|maybe|i suppose|you suppose|okay|yeah|honestly|so)[, ]+", "", p, flags=re.I)
def pol(h, r):
    t=len(r); last=h[-1]; allu=" ".join(h)
    p=paraphrase(strip_lead(pick_sent(last))).rstrip(".!?")
    p=strip_lead(p); p=p[0].lower()+p[1:]
    fs=feelings(last) or feelings(allu) or ["worn down"]
    f=fs[t % len(fs)]
    parts=[OPEN[t%8].format(p=p), VAL[(t*3)%8].format(f=f)]
    m=NEED.search(last)
    if m:
        x=paraphrase(m.group(2)).strip()
        parts.append(("You are not "+x+"." ) if m.group(1) else ("You are "+x+"."))
    else:
        parts.append(Q[(t*5)%8])
    return decopy(" ".join(parts), allu)
if __name__=="__main__":
    seeds=[int(x) for x in sys.argv[1].split(",")] if len(sys.argv)>1 else [1]
    v=len(seeds)==1
    res=[]
    for s in seeds:
        e,log=run(pol, seed=s, verbose=v); res.append(e); print(s,e, [x[1]["delta"] for x in log], flush=True)
    print("mean",statistics.mean(res))
