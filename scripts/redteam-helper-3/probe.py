import _shared  # noqa: F401  (puts ../redteam-helper on the path)
import json, sys
from env import post
def probe(seed, replies, split="train"):
    out=[]
    for r in replies:
        ep=post('/v1/episodes',{'split':split,'seed':seed,'policy':'probe','knobs':{'max_turns':1}})
        s=post('/v1/episodes/'+ep['episode_id']+'/step',{'reply':r})
        a=s['appraisal']
        out.append((s['delta'],a.get('raw'),a['components'],a['reasons'],{k:v for k,v in a['moves'].items() if v>0.05}))
        print(s['delta'], a.get('raw'), json.dumps(a['components']), a['reasons'], '|', r[:100], flush=True)
    return out
if __name__=="__main__":
    seed=int(sys.argv[1]); probe(seed, [l.strip() for l in sys.stdin if l.strip()])
