# curated same-form synonyms: a swapped word must fit where the original stood
S="""mum:mother mom:mother mother:mum dad:father father:dad kid:child kids:children child:kid children:kids son:boy daughter:girl
manager:boss boss:manager colleague:coworker coworker:colleague colleagues:coworkers friend:mate friends:mates everyone:everybody everybody:everyone
people:folks team:group landlord:property owner partner:other half husband:partner wife:partner family:family
job:work work:job role:position email:message emailed:messaged letter:notice money:cash house:home home:house place:flat room:bedroom
test:exam exam:test results:findings dementia:memory loss meeting:session proposal:pitch idea:plan photo:picture birthday:celebration
dinner:supper car:vehicle stomach:gut mistake:error problem:issue problems:issues shoes:boots morning:day evening:night night:evening
weeks:weeks months:months years:years hours:hours shifts:rotas rent:housing costs bills:costs debt:owing
snapped:lost your temper yelled:shouted shouted:yelled screamed:yelled cried:wept crying:weeping failed:flunked fail:flunk
told:said to asked:wondered looked:glanced found:discovered spent:put loved:adored love:adore hate:can't stand quit:left
stopped:quit started:began start:begin begin:start keep:continue kept:continued tried:attempted trying:attempting try:attempt
worry:fret worried:anxious scared:frightened afraid:frightened moved:relocated leave:go left:walked out ignored:brushed off
think:believe thought:believed know:realise knew:realised want:wish wanted:wished need:require needed:required
talk:speak talking:speaking talked:spoke help:support helped:supported helping:supporting lost:lost
terrible:awful awful:dreadful horrible:dreadful hard:tough difficult:tough bad:rough angry:furious furious:livid sad:low
upset:shaken tired:exhausted exhausted:drained lonely:isolated alone:on your own stupid:foolish useless:worthless selfish:self-centred
embarrassed:humiliated ashamed:mortified hurt:wounded betrayed:let down stressed:under pressure anxious:on edge nervous:jittery
overwhelmed:swamped stuck:trapped scary:frightening unfair:unjust ready:prepared broken:shattered numb:flat
whole:entire big:huge small:tiny tiny:small huge:enormous new:fresh old:former best:closest important:significant
every:each always:constantly never:not once again:once more anymore:any longer barely:hardly honestly:truly probably:likely
pretty:fairly really:truly just:only still:yet sure:certain different:other happy:glad fine:okay okay:fine"""
import re
SYN={}
for k,v in re.findall(r"([a-z']+):(.+?)(?=\s+[a-z']+:|\s*$)", S, re.S):
    SYN[k]=v.strip()
# multiword fixes
SYN.update({"landlord":"property owner","partner":"other half","rent":"housing costs","snapped":"lost your temper","hate":"can't stand","told":"said to","alone":"on your own","betrayed":"let down","stressed":"under pressure","anxious":"on edge","ignored":"brushed off","left":"walked out","dementia":"memory loss"})
