import re
SYN = {
 # people
 "mum":"mother","mom":"mother","mother":"mum","dad":"father","father":"dad","brother":"sibling","sister":"sibling",
 "daughter":"girl","son":"boy","kid":"child","child":"kid","children":"kids","grandchildren":"grandkids",
 "manager":"boss","boss":"manager","colleague":"coworker","coworker":"colleague","partner":"other half",
 "landlord":"property owner","examiner":"tester","friend":"mate","friends":"mates","everyone":"everybody",
 "team":"group","leadership":"the higher-ups","neighbour":"neighbor","teen":"teenager","people":"folks",
 # things
 "job":"work","work":"job","role":"position","email":"message","letter":"notice","rent":"housing cost",
 "money":"cash","payments":"income","pension":"retirement","house":"home","home":"house","room":"bedroom",
 "test":"exam","exam":"test","results":"findings","biopsy":"tissue test","dementia":"memory loss",
 "meeting":"session","proposal":"pitch","reports":"updates","shoes":"footwear","door":"doorway",
 "cabin":"lodge","lake":"water","card":"account","debt":"owing","statement":"bill","photo":"picture",
 "birthday":"celebration","dinner":"supper","car":"vehicle","stomach":"gut","heart":"chest","life":"path",
 "hours":"shifts","shifts":"hours","evenings":"nights","nights":"evenings","days":"daytime","weeks":"stretch",
 "years":"long stretch","year":"twelve months","month":"few weeks","months":"while","morning":"early today",
 "mistake":"error","idea":"clue","time":"moment","form":"paperwork","name":"credit","plates":"dishes",
 "television":"TV","floor":"ground","queue":"line","tests":"checks","problems":"issues","opinion":"view",
 "marriage":"relationship","married":"wed","separation":"split","trainee":"beginner","school":"classes",
 # verbs
 "snapped":"lost your temper","snap":"lose your temper","screamed":"yelled","shouted":"yelled","yelled":"shouted",
 "failed":"didn't pass","fail":"not pass","lost":"lost","died":"passed","fainted":"passed out",
 "sold":"got rid of","told":"said to","asked":"wondered","looked":"glanced","found":"came across",
 "spent":"put in","presented":"showed","loved":"adored","love":"adore","worked":"put in","quit":"left",
 "replaced":"filled in for","crying":"in tears","cry":"weep","cried":"wept","hate":"can't stand",
 "feel":"sense","feeling":"sensing","know":"understand","understand":"grasp","think":"believe","thinking":"wondering",
 "want":"wish","need":"have to have","keep":"continue","keeps":"continues","lived":"stayed","living":"staying",
 "missed":"wasn't there for","left":"walked out","ignored":"brushed aside","stopped":"quit","stop":"halt",
 "talk":"speak","talking":"speaking","speaks":"talks","said":"claimed","saying":"stating","reading":"going through",
 "read":"gone through","cover":"pay for","pay":"cover","leave":"go","coming":"returning","moved":"shifted",
 "eliminated":"cut","sign":"put your name on","offered":"given","worry":"fret","worried":"anxious","scared":"frightened",
 "afraid":"frightened","care":"bother","caring":"giving a toss","trying":"attempting","try":"attempt",
 # feelings / adjectives
 "monster":"terrible person","guilty":"to blame","guilt":"self-blame","useless":"worthless","stupid":"foolish",
 "alone":"on your own","lonely":"isolated","tired":"exhausted","exhausted":"drained","worn":"run down",
 "angry":"furious","furious":"livid","sad":"low","upset":"shaken","embarrassed":"humiliated","ashamed":"mortified",
 "terrible":"awful","awful":"dreadful","horrible":"dreadful","hard":"tough","difficult":"rough","bad":"rough",
 "selfish":"self-centred","silent":"quiet","quiet":"silent","dead":"shut off","empty":"hollow","hurt":"wounded",
 "betrayed":"let down","stressed":"under pressure","anxious":"on edge","nervous":"jittery","overwhelmed":"swamped",
 "stuck":"trapped","lost":"adrift","smart":"clever","wrong":"mistaken","whole":"entire","new":"fresh","old":"former",
 "best":"closest","first":"only","third":"three-times","small":"tiny","big":"huge","nothing":"no big deal",
 "forever":"endlessly","again":"once more","anymore":"these days","barely":"hardly","honestly":"truly","even":"still",
 "straight":"in a row","probably":"likely","terrible":"awful","scary":"frightening","unfair":"unjust","fair":"just",
 "ready":"prepared","broken":"shattered","numb":"flat","panic":"dread","fear":"dread","shame":"embarrassment",
}
PRON = {"i":"you","i'm":"you're","im":"you're","i've":"you've","i'd":"you'd","i'll":"you'll","me":"you","my":"your",
        "mine":"yours","myself":"yourself","we":"you","we're":"you're","our":"your","us":"you","am":"are","was":"were"}
STOP = set("a an the and or but if of to in on at for with by from as is are was were be been being it its it's this that these those so just really very not no do does did don't doesn't didn't can can't could would should will have has had there their they them he she her his him you your yours what when where why how who which than then too also up out over about into".split())
FEEL = {"monster":"ashamed","guilty":"guilty","guilt":"guilty","snapped":"ashamed","useless":"humiliated","failed":"discouraged",
 "fail":"discouraged","alone":"lonely","lonely":"lonely","tired":"exhausted","worn":"exhausted","exhausted":"exhausted",
 "crying":"overwhelmed","scared":"scared","afraid":"scared","worried":"anxious","anxious":"anxious","angry":"angry",
 "screamed":"humiliated","shouted":"humiliated","sold":"betrayed","betrayed":"betrayed","lost":"grief-stricken",
 "silent":"lonely","empty":"empty","selfish":"guilty","stupid":"discouraged","smart":"discouraged","biopsy":"scared",
 "fainted":"frightened","heart":"frightened","rent":"anxious","money":"anxious","debt":"betrayed","idea":"blindsided",
 "eliminated":"blindsided","dead":"blindsided","credit":"overlooked","theirs":"overlooked","trainee":"undermined",
 "reports":"undermined","birthday":"left out","without":"left out","separation":"heartbroken","married":"heartbroken",
 "quit":"stretched thin","straight":"stretched thin","hours":"drained","knot":"dread","wrong":"lost","forever":"lonely",
 "door":"shut out","vape":"worried","understand":"confused","review":"anxious","plates":"grief"}
def toks(s): return re.findall(r"[A-Za-z0-9'\-,]+|[.!?]", s)
def sents(t): return [x.strip() for x in re.split(r"(?<=[.!?])\s+", t) if x.strip()]
def paraphrase(sent):
    out=[]
    for w in re.findall(r"[A-Za-z0-9'\-]+|[,]", sent):
        lw=w.lower()
        if lw in PRON: out.append(PRON[lw]); continue
        if lw in SYN: out.append(SYN[lw]); continue
        out.append(w)
    s=" ".join(out).replace(" ,", ",")
    return s
def feelings(text):
    f=[]
    for w in re.findall(r"[a-z']+", text.lower()):
        if w in FEEL and FEEL[w] not in f: f.append(FEEL[w])
    return f

FOLD = {"i":"you","me":"you","my":"your","mine":"yours","myself":"yourself","i'm":"you're","i've":"you've","i'd":"you'd","i'll":"you'll","am":"are","was":"were","we":"you","us":"you","our":"your"}
def norm(w):
    w=w.lower().strip(".,!?;:'\"")
    return FOLD.get(w,w)
def ngrams(text,n=4):
    ws=[norm(w) for w in re.findall(r"[A-Za-z0-9'\-]+", text)]
    return set(tuple(ws[i:i+n]) for i in range(len(ws)-n+1))
DROP=set("just really the a that so even well very still all".split())
FILL=["kind of","sort of","basically","pretty much","more or less","somehow"]
def decopy(reply, usertext, n=4):
    G=ngrams(usertext,n)
    ws=reply.split()
    k=0
    for _ in range(40):
        nw=[norm(w) for w in ws]
        bad=None
        for i in range(len(nw)-n+1):
            if tuple(nw[i:i+n]) in G: bad=i; break
        if bad is None: return " ".join(ws)
        # try dropping a droppable word in window
        done=False
        for j in range(bad, bad+n):
            if nw[j] in DROP and not ws[j][-1] in ".,!?":
                del ws[j]; done=True; break
        if not done:
            ws.insert(bad+2, FILL[k%len(FILL)]); k+=1
    return " ".join(ws)
