#!/usr/bin/env python3
"""The blind read-through set of results/experiments/user-voice/: 100 user turns (after the
opening) from the logs before the one-voice speaker and 100 from the same dialogues re-played
after it, by log (listener 20, advice-first 15, base model 20, trained seed 2 15, honest 30),
shuffled into readthrough-items.md with the key apart in readthrough-key.json. Seeded: the same
logs give the same set.

    python3 scripts/user-voice-readthrough.py
    python3 scripts/user-voice-readthrough.py SIDE SIDE NAME [SALT]

The second form compares two re-played sides of results/experiments/user-voice/ (folders written
by scripts/user-voice.sh, e.g. `after` and a later rules version) and writes NAME-items.md and
NAME-key.json. SALT draws other dialogue turns than the earlier read-throughs (still the same ones
on both sides), so that a rule change aimed at the failures an earlier read-through quoted is
measured on turns nobody read.
"""
import json, random, sys, os, yaml, zlib
random.seed(20261129)
M=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
B=M+'/results/experiments/user-realism/after'
def replayed(side):
    A=M+'/results/experiments/user-voice/'+side
    return {'listener':A+'/listener.jsonl','advice-first':A+'/advice-first.jsonl','base':A+'/base.jsonl','trained':A+'/trained-seed2.jsonl','honest':A+'/honest.jsonl'}
salt=sys.argv[4] if len(sys.argv)==5 else ''
if len(sys.argv) in (4,5):
    sets={sys.argv[1]:replayed(sys.argv[1]),sys.argv[2]:replayed(sys.argv[2])}
    set_name=sys.argv[3]
else:
    sets={'before':{'listener':B+'/listener.jsonl','advice-first':B+'/advice-first.jsonl','base':B+'/eval/episodes-0.jsonl','trained':B+'/eval/episodes-1.jsonl','honest':M+'/results/experiments/user-voice/before/honest.jsonl'},
          'after':replayed('after')}
    set_name='readthrough'
quota={'listener':20,'advice-first':15,'base':20,'trained':15,'honest':30}
personas={}
for f in os.listdir(M+'/personas'):
    d=yaml.safe_load(open(M+'/personas/'+f)); personas[d['id']]=f"{d['name']}, {d['age']}, {d['occupation']}; style: {d['style']}"
items=[]
for side,logs in sets.items():
    for name,path in logs.items():
        recs=[json.loads(l) for l in open(path)]
        cand=[]
        for ri,r in enumerate(recs):
            t=r['turns']
            for i in range(2,len(t)):
                if t[i]['role']=='user':
                    cand.append((ri,i))
        # the same dialogue turns on both sides: pick by a seeded choice over (record, turn)
        random.seed(zlib.crc32((name+salt).encode()))
        picks=random.sample(cand, quota[name])
        for ri,i in picks:
            r=recs[ri]; t=r['turns']
            items.append({'side':side,'log':name,'profile':f"{r['profile']['scenario']}:{r['profile']['persona']}",'turn':i,
              'persona':personas.get(r['profile']['persona'],''),'previous':t[i-2]['text'],'reply':t[i-1]['text'],'message':t[i]['text'],
              'delta':t[i].get('delta')})
random.seed(99); random.shuffle(items)
for k,it in enumerate(items): it['id']=k+1
key=[{k:it[k] for k in ('id','side','log','profile','turn','delta')} for it in items]
blind=[{k:it[k] for k in ('id','persona','previous','reply','message')} for it in items]
out=M+'/results/experiments/user-voice'
json.dump(key,open(out+f'/{set_name}-key.json','w'),indent=1)
with open(out+f'/{set_name}-items.md','w') as f:
    f.write(f'# Read-through items (blind: which build wrote each turn is in {set_name}-key.json)\n\n')
    for it in blind:
        f.write(f"## Item {it['id']}\n\n- persona: {it['persona']}\n- user before: {it['previous']}\n- listener: {it['reply']}\n- **user next:** {it['message']}\n\n")
print(len(items))
