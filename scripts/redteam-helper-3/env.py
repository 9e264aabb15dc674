import json, urllib.request
import os
BASE=os.environ.get("EMPATHY_GYM_ENV", "http://localhost:8795")
def post(path, body):
    r=urllib.request.Request(BASE+path, data=json.dumps(body).encode(), headers={"Content-Type":"application/json"}, method="POST")
    return json.loads(urllib.request.urlopen(r, timeout=300).read())
def run(policy, split="train", seed=1, turns=8, verbose=False, diff="moderate", name="remote"):
    ep=post("/v1/episodes", {"split":split,"difficulty":diff,"seed":seed,"policy":name})
    eid=ep["episode_id"]; hist=[ep["observation"]["text"]]; replies=[]
    emo=ep["observation"]["emotion"]; log=[]
    if verbose: print("PROFILE",ep["profile"], "\nUSER:",hist[-1])
    for t in range(turns):
        rep=policy(hist, replies)
        s=post(f"/v1/episodes/{eid}/step", {"reply":rep})
        replies.append(rep); emo=s["observation"]["emotion"]
        log.append((rep,s))
        if verbose:
            print("BOT:",rep); print(" delta",s["delta"],"emo",emo, json.dumps(s["appraisal"])[:1500]); print("USER:",s["observation"]["text"])
        hist.append(s["observation"]["text"])
        if s["terminated"] or s["truncated"]: break
    return emo, log
def train_main(pol):
    """Plays `pol` on the train seeds given as the first argument (comma-separated) and prints each
    dialogue's final emotion and deltas, then the mean."""
    import sys, statistics
    seeds=[int(x) for x in sys.argv[1].split(",")]
    res=[]
    for s in seeds:
        e,log=run(pol, seed=s); res.append(e); print(s,e, [x[1]["delta"] for x in log], flush=True)
    print("mean",statistics.mean(res))
