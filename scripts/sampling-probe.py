#!/usr/bin/env python3
"""Learning signal in a run's first dialogues: per run folder, the mean reward, the mean
population std of rewards inside a group (what GRPO's advantages are made of), the share of groups
with no spread, the share of replies the appraiser found "too generic to land", the share of turns
that raised / lowered the emotion, and the mean reply length in words. Standard library only.
  python3 scripts/sampling-probe.py RUN_DIR...
"""
import json, sys, os, statistics as st
def analyze(run, maxtok=None):
    recs=[json.loads(l) for l in open(os.path.join(run,'episodes.jsonl'))]
    groups={}
    for r in recs: groups.setdefault((r['step'],r['group']),[]).append(r['reward'])
    stds=[st.pstdev(v) for v in groups.values()]
    replies=[t for r in recs for t in r['turns'] if t['role']=='assistant']
    reasons=[x for r in recs for t in r['turns'] if t['role']=='user' and t.get('appraisal') for x in t['appraisal'].get('reasons',[])]
    users=[t for r in recs for t in r['turns'] if t['role']=='user' and t.get('appraisal')]
    generic=sum('too generic to land' in (t['appraisal'].get('reasons') or []) for t in users)/max(1,len(users))
    deltas=[t.get('delta',0) for t in users]
    return dict(n=len(recs), reward=st.mean(r['reward'] for r in recs), group_std=st.mean(stds),
        zero_std=sum(s==0 for s in stds)/len(stds), generic=generic,
        pos=sum(d>0 for d in deltas)/len(deltas), neg=sum(d<0 for d in deltas)/len(deltas),
        words=st.mean(len(t['text'].split()) for t in replies))
for run in sys.argv[1:]:
    try: a=analyze(run)
    except Exception as e: print(run, 'ERR', e); continue
    print(f"{os.path.basename(run.rstrip('/')):14s} n={a['n']:3d} reward={a['reward']:.3f} group_std={a['group_std']:.3f} zero_std={a['zero_std']:.2f} generic={a['generic']:.2f} up={a['pos']:.2f} down={a['neg']:.2f} words={a['words']:.1f}")
