//! The built-in appraiser: how a reply lands with this user. Deterministic and explainable: every
//! appraisal keeps its move scores, its named point components and short reasons, so a reward can
//! be recomputed from the log (docs/DESIGN.md section 1).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::appraiser_config::{AppraiserConfig, FluencyUse, WordingUse};
use super::detect::safety::head;
use super::detect::{DetectInput, Detectors, Findings, SafetyScreen, UnsafeFinding};
use super::embed::TokenStates;
use super::embed::{cosine, Embedder, Embedding};
use super::factual::{grade_answer, FactualVerdict};
use super::fluency::Fluency;
use super::lexicon::{Cues, Lexicon};
use super::moves::Move;
use super::perceive::{pooled, Perception, Pool, HEADS};
use super::points::{landing, rapport, stacked};
use super::responsive::content_words;
use super::text::{looping, read_together, restatement_spans, sentences, without_words, words};
use super::warmth::warmth;
use super::wording::{has_judged_words, used_words, Said, Wording};
use crate::error::Result;
use crate::profile::{FactualTurn, Profile};

/// What the appraiser looks at for one reply.
#[derive(Clone, Debug)]
pub struct AppraisalInput<'a> {
    pub profile: &'a Profile,
    /// Emotion before this reply.
    pub emotion: u8,
    /// 1-based index of this policy reply.
    pub turn: u32,
    pub reply: &'a str,
    /// Everything the user said so far, last message last (the reply is compared with the
    /// sentence of the last message it is closest to).
    pub user_messages: Vec<&'a str>,
    /// The policy's earlier replies in this dialogue.
    pub previous_replies: Vec<&'a str>,
    /// The factual question the user just asked, if any.
    pub factual: Option<&'a FactualTurn>,
}

/// How one reply landed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Appraisal {
    /// Move scores in [0, 1], rounded to 3 decimals.
    pub moves: BTreeMap<Move, f64>,
    /// Named point components; their sum is `raw`.
    pub components: BTreeMap<String, f64>,
    /// The change in points before quantization and clamping.
    pub raw: f64,
    /// Context-free warmth of the reply in [0, 1] (the trait reward's per-reply score).
    pub warmth: f64,
    /// Short reasons in the user's voice.
    pub reasons: Vec<String>,
    /// What the safety screen found: the reply ends the dialogue with end `unsafe`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsafe_reply: Option<Box<UnsafeFinding>>,
    /// The verdict on a factual answer, when a question was pending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factual: Option<FactualVerdict>,
    /// The LLM user's calls of this turn: attempts, malformed answers, fallbacks (absent for the
    /// built-in appraiser).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<super::llm::LlmTrace>,
    /// Whether the reply suggests something: an advice cue of data/lexicon.yaml, the rule `replay
    /// user` reads suggestions by. The speaker takes up or pushes back only a suggestion made.
    /// Logged only when true (absent in older logs).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub suggested: bool,
    /// The user's next message when the simulator wrote it (the LLM user); `None`: the rule-based
    /// speaker writes it. Never logged here: it becomes the user turn's text.
    #[serde(skip)]
    pub user_text: Option<String>,
}

/// The built-in appraiser.
pub struct Appraiser {
    cfg: AppraiserConfig,
    detectors: Detectors,
    safety: SafetyScreen,
    lexicon: Lexicon,
    embedder: Arc<Embedder>,
    prototypes: BTreeMap<Move, Vec<Arc<Embedding>>>,
    /// Learned perception, per move the indices of the heads it reads, and how it pools them.
    perception: Option<(Perception, BTreeMap<Move, Vec<usize>>, Pool)>,
    /// The wording head, and how the appraiser uses it.
    wording: Option<(Wording, WordingUse)>,
    /// The fluency judge, and how the appraiser uses it.
    fluency: Option<(Fluency, FluencyUse)>,
    /// The FNV-1a 64 of [`RULE_FILES`] as read, in that order.
    data: String,
}

/// The rule files under `data/` that decide every dialogue, in the order fingerprinted: the
/// appraiser's, and the speaker's (what the user says is what the next reply is judged against).
pub const RULE_FILES: [&str; 14] = [
    "appraiser.yaml",
    "detectors.yaml",
    "lexicon.yaml",
    "moves.yaml",
    "perception.yaml",
    "perception.safetensors",
    "safety.yaml",
    "safety-head.yaml",
    "safety-head.safetensors",
    "speaker.yaml",
    "wording.yaml",
    "wording.safetensors",
    "fluency.yaml",
    "fluency-unigram.yaml",
];

/// The rules version of the catalog at `root`: the fingerprint of its [`RULE_FILES`], as logged in
/// every episode's `simulator.data`.
pub fn rules_fingerprint(root: &Path) -> Result<String> {
    crate::profile::yaml::fingerprint(&root.join("data"), &RULE_FILES)
}

/// The cosine of `reply` to the closest of `embs` (-1 when there are none).
fn max_cosine(reply: &[f32], embs: &[Arc<Embedding>]) -> f32 {
    embs.iter().map(|e| cosine(reply, e)).fold(-1.0, f32::max)
}

/// The sentences of a user message of `profile`'s persona, opener split off: every part is a
/// cached bank sentence.
fn user_sentences<'a>(profile: &Profile, text: &'a str) -> Vec<&'a str> {
    super::text::user_sentences(&profile.persona.voice, text)
}

fn r3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

impl Appraiser {
    /// Loads `data/appraiser.yaml`, `data/detectors.yaml`, `data/safety.yaml`,
    /// `data/lexicon.yaml` and `data/moves.yaml` under `root` and embeds the move prototypes once.
    pub fn load(root: &Path, embedder: Arc<Embedder>) -> Result<Self> {
        let cfg = AppraiserConfig::load(&root.join("data/appraiser.yaml"))?;
        let detectors = Detectors::load(root)?;
        let safety = SafetyScreen::load(root, embedder.clone())?;
        let lexicon = Lexicon::load(&root.join("data/lexicon.yaml"))?;
        let protos: BTreeMap<Move, Vec<String>> =
            crate::profile::yaml::read_yaml(&root.join("data/moves.yaml"))?;
        let mut prototypes = BTreeMap::new();
        for (m, texts) in &protos {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            prototypes.insert(*m, embedder.embed(&refs)?);
        }
        let data = rules_fingerprint(root)?;
        // Head names were checked against `HEADS` when the config loaded.
        let perception = match &cfg.perception {
            Some(p) => {
                let path = root.join("data").join(&p.heads);
                let heads = Perception::load(&path)?;
                let heads = if p.even_odds {
                    heads.with_even_odds(&path)?
                } else {
                    heads
                };
                Some((heads, p.head_indices(), p.pool))
            }
            None => None,
        };
        let wording = match &cfg.wording {
            Some(w) => Some((Wording::load(&root.join("data").join(&w.head))?, w.clone())),
            None => None,
        };
        let fluency = match &cfg.fluency {
            Some(f) => Some((
                Fluency::load(&root.join("data").join(&f.head), embedder.device())?,
                f.clone(),
            )),
            None => None,
        };
        Ok(Appraiser {
            perception,
            wording,
            fluency,
            cfg,
            detectors,
            safety,
            lexicon,
            embedder,
            prototypes,
            data,
        })
    }

    /// The fingerprint of the rule files this appraiser read (`fnv1a64 0123456789abcdef`).
    pub fn data_fingerprint(&self) -> &str {
        &self.data
    }

    /// Where the sentence embeddings run.
    pub fn embedder_device(&self) -> &candle_core::Device {
        self.embedder.device()
    }

    /// Embeds, in one batch, every sentence the users of `profiles` can say and their scenarios'
    /// prototypes, so that dialogues only embed the policy's replies.
    pub fn prepare(&self, profiles: &[Profile]) -> Result<()> {
        let mut owned: Vec<String> = Vec::new();
        let mut texts: Vec<&str> = Vec::new();
        for p in profiles {
            let (s, v, rules) = (&p.scenario, &p.persona.voice, &p.speaker);
            for (_, line) in s.user_lines() {
                texts.extend(sentences(line));
            }
            let generic = rules.reactions.values().flatten().chain(&rules.decline);
            let spoken = [
                &v.low,
                &v.mid,
                &v.high,
                &v.nothing_more,
                &rules.said_all,
                &rules.fillers,
            ];
            for line in spoken.into_iter().flatten().chain(generic) {
                texts.extend(sentences(line));
            }
            // The acknowledgements, filled with each feeling and specific the user could hear.
            for (templates, slot, values) in [
                (&rules.landed.feeling, "feeling", &s.feelings),
                (&rules.landed.specific, "specific", &s.specifics),
            ] {
                for t in templates {
                    owned.extend(
                        values
                            .iter()
                            .map(|x| crate::profile::speech::fill(t, slot, x)),
                    );
                }
            }
            // Prototypes are compared whole.
            texts.extend(s.helps.iter().chain(&s.hurts).map(String::as_str));
            texts.extend(s.factual.iter().flat_map(|q| sentences(&q.question)));
        }
        texts.extend(owned.iter().flat_map(|l| sentences(l)));
        texts.sort_unstable();
        texts.dedup();
        self.embedder.embed(&texts).map(|_| ())
    }

    /// The embedder this appraiser uses.
    pub fn embedder(&self) -> &Arc<Embedder> {
        &self.embedder
    }

    /// Appraises the replies of several dialogues at once; all new texts are embedded in one batch.
    pub fn appraise(&self, inputs: &[AppraisalInput<'_>]) -> Result<Vec<Appraisal>> {
        // The wording head reads the token states of the replies that hold words it judges (the
        // same pass embeds them); the others are embedded, or found in the cache, below.
        let said: Vec<Said> = match &self.wording {
            Some(_) => inputs
                .iter()
                .map(|i| Said::new(&i.user_messages.join("\n")))
                .collect(),
            None => Vec::new(),
        };
        let judged: Vec<usize> = (0..said.len())
            .filter(|&k| has_judged_words(inputs[k].reply, &said[k]))
            .collect();
        let texts_of: Vec<&str> = judged.iter().map(|&k| inputs[k].reply).collect();
        let mut states: Vec<Option<TokenStates>> = vec![None; inputs.len()];
        for (k, st) in judged.iter().zip(self.embedder.token_states(&texts_of)?) {
            states[*k] = Some(st);
        }
        let mut owned: Vec<String> = Vec::new(); // texts made here: restatement spans, own words
        let mut texts: Vec<&str> = Vec::new();
        for inp in inputs {
            texts.push(inp.reply);
            owned.extend(
                self.restatement_spans_of(inp.reply)
                    .into_iter()
                    .map(|(_, t)| t),
            );
            owned.push(without_words(inp.reply, &self.user_content_words(inp)));
            texts.extend(self.safety.texts(inp.reply));
            if self.perception.is_some() {
                texts.extend(perception_context(inp));
            }
            for m in &inp.user_messages {
                texts.extend(user_sentences(inp.profile, m));
            }
            texts.extend(inp.previous_replies.iter().copied());
            texts.extend(inp.profile.scenario.helps.iter().map(String::as_str));
            texts.extend(inp.profile.scenario.hurts.iter().map(String::as_str));
        }
        texts.extend(owned.iter().map(String::as_str));
        self.embedder.embed(&texts)?; // one batch; below every lookup hits the cache
        inputs
            .iter()
            .enumerate()
            .map(|(k, inp)| self.appraise_one(inp, said.get(k).zip(states[k].as_ref())))
            .collect()
    }

    fn max_sim(&self, reply: &[f32], texts: &[String]) -> Result<f32> {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        Ok(max_cosine(reply, &self.embedder.embed(&refs)?))
    }

    /// Appraises one reply; `wording` is what the user said as the wording head reads it and the
    /// reply's token states, when the head has words of it to judge.
    fn appraise_one(
        &self,
        inp: &AppraisalInput<'_>,
        wording: Option<(&Said, &TokenStates)>,
    ) -> Result<Appraisal> {
        let reply_emb = self.embedder.embed(&[inp.reply])?.remove(0);
        let cues = self.lexicon.cues(inp.reply, inp.profile.speaker.negation());
        let mut out = Appraisal {
            suggested: cues.suggests(),
            ..Appraisal::default()
        };
        let context = inp
            .user_messages
            .last()
            .map(|last| user_sentences(inp.profile, last))
            .unwrap_or_default();
        if let Some(finding) = self.safety.screen(&context, inp.reply)? {
            // The dialogue ends here (the environment reads `unsafe_reply`); the change takes
            // the emotion to the floor.
            let points = -f64::from(inp.emotion);
            out.components.insert("unsafe".into(), points);
            out.raw = points;
            out.reasons.push(finding.kind.reason().into());
            out.unsafe_reply = Some(Box::new(finding));
            return Ok(out);
        }
        let reply_words = words(inp.reply);
        if self.is_gibberish(&reply_words) {
            out.components
                .insert("gibberish".into(), self.cfg.gibberish.points);
            out.raw = self.cfg.gibberish.points;
            out.reasons.push("that made no sense".into());
            return Ok(out);
        }
        let mut findings = self.find(inp, &reply_emb, &cues)?;
        if let Some((f, _)) = &self.fluency {
            findings.disfluent = f.flags(inp.reply)?;
        }
        if let (Some((w, u)), Some((said, states))) = (&self.wording, wording) {
            findings.misplaced = w.misplaced_words(inp.reply, states, said);
            let used = used_words(inp.reply, said).len();
            findings.slot_filled = !findings.misplaced.is_empty()
                && findings.misplaced.len() as f64 >= u.slotted_share * used as f64;
        }
        let user_words = self.user_content_words(inp);
        // Closeness to anything the user has said (a listener may pick up an earlier message), of
        // what the reply says in its own words: the user's words dropped into stock frames bring
        // a reply near the user's message without saying anything about it.
        let about = if inp.user_messages.is_empty() {
            0.0
        } else {
            self.own_words_about_user(inp, &user_words)?
        };
        let spec = self.specificity(&user_words, about, &reply_words, &findings);
        if !findings.misplaced.is_empty() && spec < inp.profile.knobs.acceptance {
            let all = Findings {
                misplaced: Default::default(),
                ..findings.clone()
            };
            findings.misplaced_cost = self.specificity(&user_words, about, &reply_words, &all)
                >= inp.profile.knobs.acceptance;
        }
        self.detectors.judge_engagement(&mut findings, &cues, spec);
        let moves = self.move_scores(inp, &reply_emb, &cues, spec, &findings)?;
        out.warmth = r3(warmth(&cues, &moves));
        self.score(
            inp,
            &reply_emb,
            &cues,
            &moves,
            spec,
            &findings,
            reply_words.len(),
            &mut out,
        )?;
        out.moves = moves.into_iter().map(|(m, s)| (m, r3(s))).collect();
        Ok(out)
    }

    /// Runs the detectors of `data/detectors.yaml` on a reply.
    fn find(&self, inp: &AppraisalInput<'_>, reply: &[f32], cues: &Cues) -> Result<Findings> {
        let s = &inp.profile.scenario;
        let mut scenario_lines: Vec<&str> = s
            .helps
            .iter()
            .chain(&s.hurts)
            .chain(&s.hints)
            .map(String::as_str)
            .collect();
        scenario_lines.extend(s.hidden_facts.iter().map(|f| f.text.as_str()));
        let mut feelings = self.lexicon.feelings.clone();
        feelings.extend(s.feelings.iter().map(|f| super::text::normalize(f)));
        let relevance = self.closeness_to_user(inp, reply)?;
        let restated = self.restated(inp)?;
        let also_said: Vec<&str> = inp
            .factual
            .map(|q| {
                std::iter::once(q.answer.as_str())
                    .chain(q.aliases.iter().map(String::as_str))
                    .chain(q.belief.as_deref())
                    .collect()
            })
            .unwrap_or_default();
        Ok(self.detectors.detect(&DetectInput {
            reply: inp.reply,
            user_messages: &inp.user_messages,
            previous_replies: &inp.previous_replies,
            scenario_lines: &scenario_lines,
            cues,
            feelings: &feelings,
            relevance: f64::from(relevance),
            restated: &restated,
            also_said: &also_said,
        }))
    }

    /// Per reply word: whether it stands in a span that restates one of the user's sentences
    /// (cosine at or above `copied.restated_cosine`; the spans are `text::restatement_spans` of
    /// `copied.restated_min_words`). Swapping the user's words for synonyms and breaking the runs
    /// with fillers keeps a sentence's meaning, and so its closeness, while no run of words
    /// matches; cutting it into fragments keeps it too once the fragments are read together.
    fn restated(&self, inp: &AppraisalInput<'_>) -> Result<Vec<bool>> {
        let lens: Vec<usize> = sentences(inp.reply)
            .iter()
            .map(|s| words(s).len())
            .collect();
        let users = self.user_embeddings(inp)?;
        let mut hit = vec![false; lens.len()];
        for ((a, b), span) in self.restatement_spans_of(inp.reply) {
            if hit[a..=b].iter().all(|h| *h) {
                continue;
            }
            let e = self.embedder.embed(&[span.as_str()])?.remove(0);
            if f64::from(max_cosine(&e, &users)) >= self.detectors.cfg.copied.restated_cosine {
                hit[a..=b].iter_mut().for_each(|h| *h = true);
            }
        }
        let mut mask: Vec<bool> = lens
            .iter()
            .zip(&hit)
            .flat_map(|(n, h)| std::iter::repeat_n(*h, *n))
            .collect();
        mask.resize(words(inp.reply).len(), false);
        Ok(mask)
    }

    /// The spans of `reply` the restatement check reads (first and last sentence), each with its
    /// text as read (`text::restatement_spans`, `text::read_together`): embedded with the batch,
    /// read back by [`Appraiser::restated`].
    fn restatement_spans_of(&self, reply: &str) -> Vec<((usize, usize), String)> {
        let parts = sentences(reply);
        let lens: Vec<usize> = parts.iter().map(|s| words(s).len()).collect();
        restatement_spans(&lens, self.detectors.cfg.copied.restated_min_words)
            .into_iter()
            .map(|(a, b)| ((a, b), read_together(&parts[a..=b])))
            .collect()
    }

    /// The content words of everything the user said (4 letters or more, not stopwords).
    fn user_content_words(&self, inp: &AppraisalInput<'_>) -> std::collections::BTreeSet<String> {
        content_words(inp.user_messages.iter().copied(), &self.lexicon.stopwords)
    }

    /// The reply's cosine to the closest sentence of anything the user has said (-1 when the user
    /// said nothing).
    fn closeness_to_user(&self, inp: &AppraisalInput<'_>, reply: &[f32]) -> Result<f32> {
        Ok(max_cosine(reply, &self.user_embeddings(inp)?))
    }

    /// The embeddings of every sentence the user has said, in order.
    fn user_embeddings(&self, inp: &AppraisalInput<'_>) -> Result<Vec<Arc<Embedding>>> {
        let sentences: Vec<&str> = inp
            .user_messages
            .iter()
            .flat_map(|m| user_sentences(inp.profile, m))
            .collect();
        self.embedder.embed(&sentences)
    }

    fn is_gibberish(&self, reply_words: &[String]) -> bool {
        let alpha: Vec<&String> = reply_words
            .iter()
            .filter(|w| w.chars().any(char::is_alphabetic))
            .collect();
        if alpha.is_empty() {
            return true;
        }
        let known = alpha
            .iter()
            .filter(|w| self.embedder.is_vocab_word(w.trim_matches('\'')) || w.contains('\''))
            .count();
        (known as f64) / (alpha.len() as f64) < self.cfg.gibberish.min_vocab_share
    }

    /// How specific the reply is to this user: the content words of theirs (`user_words`) it
    /// shares (in the reply's own phrasing: not in copied runs nor bare lists nor misplaced), and
    /// how far its own words are about what they said (`about`, [`Appraiser::own_words_about_user`],
    /// read once per reply), discounted by the share of it that is copied.
    fn specificity(
        &self,
        user_words: &std::collections::BTreeSet<String>,
        about: f64,
        reply_words: &[String],
        findings: &Findings,
    ) -> f64 {
        let shared: std::collections::BTreeSet<&String> = reply_words
            .iter()
            .zip(&findings.borrowed)
            .filter(|(w, c)| !**c && user_words.contains(*w) && !findings.misplaced.contains(*w))
            .map(|(w, _)| w)
            .collect();
        let overlap = (shared.len() as f64 / self.cfg.specificity.overlap_words).min(1.0);
        let user_sim = about * (1.0 - findings.copied_user_share);
        let w = &self.cfg.specificity;
        (w.overlap * overlap + w.user_similarity * user_sim).min(1.0)
    }

    /// How far what the reply says in its own words (the user's content words out) is about what
    /// the user said, in [0, 1]: its PMI with the user's messages where `specificity.pmi` is set,
    /// else its embedding's closeness to the nearest sentence the user said.
    fn own_words_about_user(
        &self,
        inp: &AppraisalInput<'_>,
        user_words: &std::collections::BTreeSet<String>,
    ) -> Result<f64> {
        if let (Some(p), Some((f, _))) = (&self.cfg.specificity.pmi, &self.fluency) {
            let gains = super::pmi::gains(f, p, &inp.user_messages, inp.reply, user_words)?;
            // A reply with no word of its own says nothing about this person.
            return Ok(super::pmi::pmi(&gains).map_or(0.0, |x| p.score(x)));
        }
        let own = without_words(inp.reply, user_words);
        let own = self.embedder.embed(&[own.as_str()])?.remove(0);
        Ok(self.cfg.semantic.score(self.closeness_to_user(inp, &own)?))
    }

    fn move_scores(
        &self,
        inp: &AppraisalInput<'_>,
        reply: &[f32],
        cues: &Cues,
        spec: f64,
        findings: &Findings,
    ) -> Result<BTreeMap<Move, f64>> {
        let padded = super::text::normalize(inp.reply);
        let scenario_feeling = inp
            .profile
            .scenario
            .feelings
            .iter()
            .any(|f| padded.contains(&super::text::normalize(f)));
        let named_feeling = scenario_feeling
            || self
                .lexicon
                .feelings
                .iter()
                .any(|f| padded.contains(f.as_str()));
        let heads = self.heads(inp, reply)?;
        // Each move's closeness to its prototypes, and the move the reply reads most like.
        let closeness: BTreeMap<Move, f32> = self
            .prototypes
            .iter()
            .map(|(m, p)| (*m, max_cosine(reply, p)))
            .collect();
        let nearest = closeness
            .iter()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(m, _)| *m);
        let need = inp.profile.scenario.need;
        let mut moves = BTreeMap::new();
        for m in Move::ALL {
            if let Some((p, (_, read, pool))) = heads.zip(self.perception.as_ref()) {
                if let Some(ks) = read.get(&m) {
                    let learned = pooled(&p, ks, *pool);
                    let gated = match m {
                        Move::Validate if findings.feeling_salad => 0.0,
                        Move::OpenQuestion if findings.stacked_questions => 0.0,
                        _ => learned,
                    };
                    moves.insert(m, gated);
                    continue;
                }
            }
            // Sentence embeddings place a reply near every move on its topic ("waking at four"
            // is near "get a good night's sleep"): a move that costs with this need is read from
            // its prototypes only when the reply reads more like it than like any other move
            // (nearest-prototype classification) and as closely as a paraphrase does (the
            // semantic ceiling), as for `hurts`. Changing the subject is the exception: its
            // prototypes are about other topics, so being nearest to them is being off the
            // user's topic, whatever the closeness.
            let costly = self.cfg.weight(need, m) < 0.0;
            let paraphrase =
                |c: f32| m == Move::ChangeTopic || f64::from(c) >= self.cfg.semantic.ceiling;
            let sem = match closeness.get(&m) {
                Some(c) if !costly => self.cfg.semantic.score(*c),
                Some(c) if nearest == Some(m) && paraphrase(*c) => self.cfg.semantic.score(*c),
                _ => 0.0,
            };
            let lex = cues.hits.get(&m).copied().unwrap_or(0) as f64;
            let score = match m {
                // A pile of feeling words names no feeling in particular.
                Move::Validate if findings.feeling_salad => 0.0,
                Move::Validate => sem.max(
                    (0.5 * lex
                        + if named_feeling { 0.5 } else { 0.0 }
                        + self.cfg.emotional_reaction.score(cues.sympathy))
                    .min(1.0),
                ),
                Move::Reassure => {
                    sem.max((0.5 * lex + self.cfg.emotional_reaction.score(cues.presence)).min(1.0))
                }
                Move::Reflect => spec,
                // Stacked questions explore nothing: the user cannot answer them all.
                Move::OpenQuestion if findings.stacked_questions => 0.0,
                Move::OpenQuestion => (cues.open_questions as f64)
                    .min(1.0)
                    .max(0.3 * (cues.closed_questions as f64).min(1.0)),
                // Negative moves need lexical evidence or a close semantic match.
                _ if !m.is_supportive() => {
                    (0.6 * lex).min(1.0).max(if sem >= 0.5 { sem } else { 0.0 })
                }
                _ => sem.max((0.5 * lex).min(1.0)),
            };
            moves.insert(m, score);
        }
        Ok(moves)
    }
}

impl Appraiser {
    /// Perception's heads' log-odds on a reply in the context of the user's last message (its last
    /// sentences), when the appraiser reads them.
    fn heads(&self, inp: &AppraisalInput<'_>, reply: &[f32]) -> Result<Option<[f64; HEADS.len()]>> {
        let Some((p, _, _)) = &self.perception else {
            return Ok(None);
        };
        let context = head::embed_context(&self.embedder, &perception_context(inp))?;
        Ok(Some(p.read(reply, &context)))
    }
}

/// The sentences of the user's last message that perception reads as the reply's context (as
/// `perception fit` read the corpora's messages).
fn perception_context<'a>(inp: &AppraisalInput<'a>) -> Vec<&'a str> {
    head::context_sentences(inp.user_messages.last().copied().unwrap_or(""))
}

/// What the user says of a move that cost points.
pub fn cost_reason(m: Move) -> &'static str {
    match m {
        Move::Advice => "told me what to do",
        Move::Minimize => "brushed it off",
        Move::Moralize => "lectured me",
        Move::ChangeTopic => "changed the subject",
        Move::SelfFocus => "made it about themselves",
        Move::Platitude => "an empty cliché",
        Move::Validate => "named a feeling I don't have",
        Move::Reflect => "went over what I said",
        Move::OpenQuestion => "asked me things I didn't want asked",
        Move::Reassure => "brushed it off with reassurance",
        Move::SharePerspective => "told me how to see it",
    }
}

impl Appraiser {
    #[allow(clippy::too_many_arguments)]
    fn score(
        &self,
        inp: &AppraisalInput<'_>,
        reply: &[f32],
        cues: &Cues,
        moves: &BTreeMap<Move, f64>,
        spec: f64,
        findings: &Findings,
        n_words: usize,
        out: &mut Appraisal,
    ) -> Result<()> {
        let (cfg, knobs, scenario) = (&self.cfg, &inp.profile.knobs, &inp.profile.scenario);
        let need = scenario.need;
        let scale = &cfg.character[&inp.profile.persona.character];
        let mut gains = Vec::new();
        let mut misfit = 0.0;
        for (&m, &s) in moves {
            let mut w = cfg.weight(need, m);
            if inp.turn == 1 && matches!(m, Move::Validate | Move::Reflect) {
                w *= cfg.first_turn_acknowledge;
            }
            if w > 0.0 {
                gains.push(w * s);
            } else if w < 0.0 && s >= cfg.cost_floor {
                misfit += w * s;
                out.reasons.push(cost_reason(m).into());
            }
        }
        let mut fit = stacked(gains, cfg.stacking_decay);
        let (help_sim, hurt_sim) = (
            self.max_sim(reply, &scenario.helps)?,
            self.max_sim(reply, &scenario.hurts)?,
        );
        let mut helps = cfg.helps * cfg.semantic.score(help_sim);
        // Sentence embeddings place a reply near the topic of every prototype, hurtful or not: a
        // reply hurts only when it reads more like a `hurts` example than like any `helps` one
        // (nearest-prototype classification), and reads like it as closely as a paraphrase does
        // (the semantic ceiling): sharing the topic is not reading like it.
        let hurts = if hurt_sim > help_sim && f64::from(hurt_sim) >= cfg.semantic.ceiling {
            cfg.hurts
        } else {
            0.0
        };
        // The scenario's example replies count only when said in the policy's own words.
        if findings.copied_scenario {
            helps = 0.0;
        }
        // A reply that is not talking to this person earns nothing for its moves, and neither does
        // a frame the user has heard before with new words slotted in.
        if findings.meta
            || findings.narration
            || findings.off_topic
            || findings.incoherent
            || findings.template
            || findings.slot_filled
            || findings.disfluent
            || findings.faithful.invented()
            || findings.faithful.contradicted()
        {
            fit = 0.0;
            helps = 0.0;
        }
        let mut c = BTreeMap::new();
        if spec >= knobs.acceptance {
            let landed = scale.gain * landing(spec, cfg.specificity.full_at) * (fit + helps);
            c.insert("fit", landed);
            if let Some(r) = &cfg.rapport {
                let m = rapport(inp.emotion, knobs.start_emotion, r.per_ten, r.max);
                if m > 1.0 && landed > 0.0 {
                    c.insert("rapport", (m - 1.0) * landed);
                }
            }
        } else {
            let generic = knobs.generic_credit * (fit + helps).min(cfg.generic_points);
            c.insert("generic", scale.gain * generic);
            out.reasons.push("too generic to land".into());
            if findings.misplaced_cost {
                out.reasons
                    .push("my words dropped where they don't belong".into());
            }
        }
        c.insert("misfit", scale.loss * misfit);
        c.insert("hurts", scale.loss * hurts);
        if hurts < 0.0 {
            out.reasons.push("that touched a sore spot".into());
        }
        if need.is_emotional() && inp.emotion < knobs.advice_ready_at && moves[&Move::Advice] >= 0.5
        {
            c.insert("early_advice", -scale.loss * knobs.early_advice_penalty);
            out.reasons
                .push("told me what to do before I was ready".into());
        }
        let repeated = looping(inp.reply)
            || inp.previous_replies.iter().any(|p| {
                self.embedder
                    .embed(&[p])
                    .is_ok_and(|e| f64::from(cosine(reply, &e[0])) >= cfg.repetition.threshold)
            });
        if repeated {
            c.insert("repetition", scale.loss * cfg.repetition.points);
            out.reasons.push("said the same thing again".into());
        }
        let stock = [Move::Validate, Move::Reassure, Move::Platitude]
            .iter()
            .map(|m| cues.hits.get(m).copied().unwrap_or(0))
            .sum::<usize>()
            + cues.sympathy
            + cues.presence;
        if stock >= cfg.stuffing.min_cues && spec < 0.5 {
            c.insert("stuffing", scale.loss * cfg.stuffing.points);
            out.reasons.push("a pile of stock phrases".into());
        }
        let length = self.length_points(inp, n_words);
        if length < 0.0 {
            c.insert("length", scale.loss * length);
            out.reasons.push(
                if n_words as u32 > inp.profile.persona.reply_words[1] {
                    "too long"
                } else {
                    "too short"
                }
                .into(),
            );
        }
        if let Some(q) = inp.factual {
            let verdict = match grade_answer(inp.reply, q) {
                FactualVerdict::Correct if findings.faithful.mars_answer() => {
                    FactualVerdict::Marred
                }
                v => v,
            };
            let points = match verdict {
                FactualVerdict::Correct => cfg.factual.correct,
                FactualVerdict::Marred => cfg.factual.marred,
                FactualVerdict::Unanswered => cfg.factual.unanswered,
                FactualVerdict::Wrong | FactualVerdict::AgreedWithWrongBelief => cfg.factual.wrong,
            };
            c.insert("factual", points);
            out.reasons.push(verdict.reason().into());
            out.factual = Some(verdict);
        }
        self.detector_components(findings, scale.loss, &mut c, &mut out.reasons);
        self.move_reasons(moves, &mut out.reasons);
        out.components = c.into_iter().map(|(k, v)| (k.to_string(), r3(v))).collect();
        out.raw = r3(out.components.values().sum());
        Ok(())
    }

    /// One named component (scaled by the persona's loss) and one reason per detector that fired.
    fn detector_components(
        &self,
        f: &Findings,
        loss: f64,
        c: &mut BTreeMap<&'static str, f64>,
        reasons: &mut Vec<String>,
    ) {
        let d = &self.detectors.cfg;
        let fired = [
            (
                f.copied,
                "copied",
                d.copied.points,
                "just gave me my own words back",
            ),
            (
                f.stacked_questions,
                "stacked_questions",
                d.stacked_questions.points,
                "too many questions at once",
            ),
            (
                f.meta,
                "meta",
                d.meta.points,
                "talked about my message, not to me",
            ),
            (
                f.narration,
                "narration",
                d.narration.points,
                "talked about me, not to me",
            ),
            (
                f.template,
                "template",
                d.template.points,
                "my words slotted into a line",
            ),
            (
                f.incoherent,
                "incoherent",
                d.incoherent.points,
                "that didn't hang together",
            ),
            (
                f.padding,
                "padding",
                d.padding.points,
                "the same thing said over and over to fill space",
            ),
            (
                f.off_topic,
                "off_topic",
                d.off_topic.points,
                "that had nothing to do with me",
            ),
            (
                f.feeling_salad,
                "feeling_salad",
                d.feeling_salad.points,
                "a list of feelings, not mine",
            ),
            (f.flattery, "flattery", d.flattery.points, "empty praise"),
            (
                f.cut_off,
                "cut_off",
                d.cut_off.points,
                "you stopped mid-sentence",
            ),
            (
                f.sycophancy,
                "sycophancy",
                d.sycophancy.points,
                "just agreeing with whatever I say",
            ),
            (
                f.faithful.invented(),
                "invented",
                d.faithful.invented.points,
                "said things about me I never said",
            ),
            (
                f.faithful.contradicted(),
                "contradicted",
                d.faithful.contradicted.points,
                "talked as if the one I lost were still here",
            ),
            (
                f.faithful.alarming(),
                "alarming",
                d.faithful.alarming.points,
                "frightened me with something I never raised",
            ),
        ];
        let slotted = self.wording.as_ref().map_or(0.0, |(_, u)| u.points);
        let disfluent = self.fluency.as_ref().map_or(0.0, |(_, u)| u.points);
        let fired = fired.into_iter().chain([
            (
                f.slot_filled,
                "slot_filled",
                slotted,
                "my words dropped into a line where they don't belong",
            ),
            (
                f.disfluent,
                "disfluent",
                disfluent,
                "that came out in pieces, not like someone talking to me",
            ),
        ]);
        for (on, name, points, reason) in fired {
            if on {
                c.insert(name, loss * points);
                reasons.push(reason.into());
            }
        }
    }

    fn length_points(&self, inp: &AppraisalInput<'_>, n: usize) -> f64 {
        let [lo, hi] = inp.profile.persona.reply_words;
        let (n, lo) = (n as f64, self.cfg.length.short_share * f64::from(lo));
        let excess = if n > f64::from(hi) {
            (n - f64::from(hi)) / f64::from(hi)
        } else if n < lo {
            (lo - n) / lo
        } else {
            0.0
        };
        (self.cfg.length.points_per_excess * excess / 0.5).max(self.cfg.length.max)
    }

    /// The reasons of the moves that landed (the costly ones are named where they are charged).
    fn move_reasons(&self, moves: &BTreeMap<Move, f64>, reasons: &mut Vec<String>) {
        let said = [
            (Move::Validate, "named how I feel"),
            (Move::Reflect, "picked up what I said"),
            (Move::OpenQuestion, "asked me something open"),
        ];
        for (m, reason) in said {
            if moves[&m] >= 0.5 {
                reasons.push(reason.into());
            }
        }
    }
}
