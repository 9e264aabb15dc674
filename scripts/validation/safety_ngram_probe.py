#!/usr/bin/env python3
"""A probe, not part of the screen: can a linear classifier over Snowball stems and stem bigrams
tell the tuning banks' unsafe replies from their safe ones (results/validation/safety-ngram-probe.md)?
Fit on four fifths of the four tuning banks (data/safety/bank*.yaml, the fifth by the MD5 of the
reply), honest ESConv dev supporter turns and EPITOME emotional-reactions responses (four fifths),
with or without DiaSafety's train part; read on the kept fifth. The never-tuned bank and the
safe-messaging file are not read. Needs scikit-learn, snowballstemmer and PyYAML.

    python3 scripts/validation/safety_ngram_probe.py DIASAFETY_DIR ESCONV_DIR EPITOME_DIR
"""
import json, yaml, re, random, csv, sys, hashlib, os
import numpy as np, snowballstemmer
from sklearn.linear_model import LogisticRegression
from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer
from sklearn.metrics import roc_auc_score
st = snowballstemmer.stemmer('english')
R=os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),'data/safety/')
DIA,ESC,EPI=sys.argv[1:4]
def bank(f):
    return [(i['context'], i['reply'], i['category']) for i in yaml.safe_load(open(R+f))['items']]
B=[]
for f in ['bank.yaml','bank-self-harm.yaml','bank-advice-isolation.yaml','bank-degrading-agreement.yaml']: B+=bank(f)
dia=json.load(open(os.path.join(DIA,'train.json')))
diav=json.load(open(os.path.join(DIA,'val.json')))
kmap={"Risk Ignorance":"risk_ignorance","Unauthorized Expertise":"dangerous_advice","Toxicity Agreement":"harmful_agreement","Offending User":"degrading"}
def diarows(d):
    out=[]
    for r in d:
        if r['label']=='Safe': out.append((r['context'],r['response'],'safe'))
        elif r['category'] in kmap: out.append((r['context'],r['response'],kmap[r['category']]))
    return out
D=diarows(dia); DV=diarows(diav)
# honest: ESConv dev supporter turns, EPITOME responses
H=[]
for line in open(os.path.join(ESC,'devWithStrategy_short.tsv')):
    segs=line.rstrip('\n').split(' EOS ')
    last=segs[-1].split(' ',3)
    if len(last)==4 and last[1]=='1':
        t=re.sub(r'^\[[^\]]*\]\s*','',last[3]); H.append(('',t,'safe'))
for f in ['emotional-reactions-reddit.csv']:
    for r in csv.DictReader(open(os.path.join(EPI,f))):
        H.append((r['seeker_post'],r['response_post'],'safe'))
def h5(s): return int(hashlib.md5(s.encode()).hexdigest(),16)%5==0
CONTR={"n't":" not","'re":" are","'m":" am","'ll":" will","'ve":" have","'d":" would"}
def toks(s):
    s=s.lower().replace("’","'")
    s=s.replace("can't","can not").replace("won't","will not")
    for k,v in CONTR.items(): s=s.replace(k,v)
    w=re.findall(r"[a-z0-9]+",s)
    return st.stemWords(w)
def sents(r): return [x.strip() for x in re.split(r'(?<=[.!?;\n])',r) if re.search(r'\w',x)]
def feat(text):
    t=toks(text); return ' '.join(t+[a+'_'+b for a,b in zip(t,t[1:])])
# units: sentences of safe replies; unsafe whole reply (single-sent) -- first round
def units(rows,w):
    X=[];y=[];W=[]
    for c,r,k in rows:
        ss=sents(r)
        if k=='safe':
            for s in ss: X.append(feat(s)); y.append(0); W.append(w)
        else:
            X.append(feat(ss[0] if len(ss)==1 else r)); y.append(1); W.append(w)
    return X,y,W
bfit=[b for b in B if not h5(b[1])]; bdev=[b for b in B if h5(b[1])]
hfit=[h for h in H if not h5(h[1])]; hdev=[h for h in H if h5(h[1])]
print(len(B),len(bfit),len(bdev),len(D),len(H))
hv=HashingVectorizer(n_features=2**16, analyzer=str.split, alternate_sign=False, norm=None, binary=True)
def fitrun(bw, use_dia, C, mil=True):
    X=[];y=[];W=[]
    for rows,w in [(bfit,bw),(hfit,1.0)]+([(D,1.0)] if use_dia else []):
        a,b,c=units(rows,w); X+=a;y+=b;W+=c
    M=hv.transform(X)
    clf=LogisticRegression(C=C,max_iter=3000,class_weight='balanced'); clf.fit(M,y,sample_weight=W)
    if mil:
        X2=list(X);y2=list(y);W2=list(W)
        for rows,w in [(bfit,bw)]+([(D,1.0)] if use_dia else []):
            for c,r,k in rows:
                ss=sents(r)
                if k!='safe' and len(ss)>1:
                    p=clf.decision_function(hv.transform([feat(s) for s in ss]))
                    X2.append(feat(ss[int(np.argmax(p))])); y2.append(1); W2.append(w)
        clf=LogisticRegression(C=C,max_iter=3000,class_weight='balanced'); clf.fit(hv.transform(X2),y2,sample_weight=W2)
    return clf
def score(clf,rows):
    return np.array([clf.decision_function(hv.transform([feat(s) for s in sents(r)] or [''])).max() for c,r,k in rows])
for bw in [5.0,20.0]:
  for use_dia in [False,True]:
    for C in [0.3,1.0,3.0]:
        clf=fitrun(bw,use_dia,C)
        hs=score(clf,hdev); bs=score(clf,bdev); by=np.array([k!='safe' for c,r,k in bdev])
        out=[]
        for fp in [0.003,0.01]:
            th=np.quantile(hs,1-fp)
            out.append(f"fp{fp}: unsafe {np.mean(bs[by]>th):.2f} safe {np.mean(bs[~by]>th):.2f}")
        auc=roc_auc_score(by,bs)
        print(bw,use_dia,C,f"bank-dev AUC {auc:.3f}",*out, flush=True)
