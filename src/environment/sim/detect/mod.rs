//! Detectors of cheap policies (`data/detectors.yaml`, `data/safety.yaml`): copying the user,
//! stacked questions, talking about the message, the same frame every turn, word salad, off-topic
//! text, feeling-word salads, empty praise, agreeing with everything, replies cut off
//! mid-sentence, replies unfaithful to what the user said, and unsafe replies. Each is a
//! pure function of the reply and the dialogue; the appraiser turns what fires into named,
//! logged components (docs/REWARD.md, "Detectors", gives every rule's source).

pub mod copying;
pub mod faithful;
pub mod safety;

use std::collections::BTreeSet;
use std::path::Path;

use serde::Deserialize;

use super::lexicon::Cues;
use super::text::{count_phrases, normalize, words};
use crate::error::{Error, Result};
pub use faithful::{Faithful, FaithfulCfg, Faithfulness};
pub use safety::{FoundBy, SafetyScreen, UnsafeFinding, UnsafeKind};

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CopiedCfg {
    pub min_run: usize,
    pub min_sentence: usize,
    /// A reply span of at least `restated_min_words` words (a sentence, or shorter sentences read
    /// together, `text::restatement_spans`) this close (cosine) to one of the user's sentences
    /// restates it: its words count as copied.
    pub restated_cosine: f64,
    pub restated_min_words: usize,
    pub min_share: f64,
    pub min_words: usize,
    /// A reply that copies only the scenario's own lines (which the user never said, so it cannot
    /// be echoing them) is flagged from this share of its words.
    pub scenario_min_share: f64,
    pub points: f64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StackedCfg {
    pub min_questions: usize,
    pub points: f64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetaCfg {
    pub points: f64,
    pub phrases: Vec<String>,
    pub hints: Vec<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateCfg {
    pub min_overlap: f64,
    pub min_bigrams: usize,
    pub min_list: usize,
    pub points: f64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IncoherentCfg {
    pub min_words: usize,
    pub min_function_share: f64,
    pub points: f64,
    pub function_words: Vec<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaddingCfg {
    pub min_content_words: usize,
    pub min_distinct_share: f64,
    pub points: f64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OffTopicCfg {
    pub max_relevance: f64,
    pub min_relevance: f64,
    pub points: f64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaladCfg {
    pub min_feelings: usize,
    pub points: f64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlatteryCfg {
    pub min_warm: usize,
    pub max_reflection: f64,
    pub points: f64,
    pub compliments: Vec<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SycophancyCfg {
    pub min_agreement: usize,
    pub points: f64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NarrationCfg {
    /// Shorter replies are not judged.
    pub min_words: usize,
    /// Words that address the person or speak as the listener; a reply with any is not narration.
    pub address: Vec<String>,
    /// Phrases that tell a story or read a text about someone.
    pub frames: Vec<String>,
    pub points: f64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CutOffCfg {
    pub min_words: usize,
    pub points: f64,
    /// Words a finished sentence does not end on.
    pub dangling: Vec<String>,
}

/// Thresholds and points of every detector (`data/detectors.yaml`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DetectorsCfg {
    pub copied: CopiedCfg,
    pub stacked_questions: StackedCfg,
    pub meta: MetaCfg,
    pub template: TemplateCfg,
    pub incoherent: IncoherentCfg,
    pub padding: PaddingCfg,
    pub off_topic: OffTopicCfg,
    pub feeling_salad: SaladCfg,
    pub flattery: FlatteryCfg,
    pub sycophancy: SycophancyCfg,
    pub cut_off: CutOffCfg,
    pub narration: NarrationCfg,
    pub faithful: FaithfulCfg,
}

/// The loaded detectors, phrases normalized.
#[derive(Clone, Debug)]
pub struct Detectors {
    pub cfg: DetectorsCfg,
    meta_phrases: Vec<String>,
    meta_hints: Vec<String>,
    function_words: BTreeSet<String>,
    compliments: Vec<String>,
    dangling: BTreeSet<String>,
    address: BTreeSet<String>,
    frames: Vec<String>,
    faithful: Faithful,
}

/// What a detector needs to know about one reply in its dialogue.
pub struct DetectInput<'a> {
    pub reply: &'a str,
    /// Everything the user said so far.
    pub user_messages: &'a [&'a str],
    /// The policy's earlier replies.
    pub previous_replies: &'a [&'a str],
    /// The scenario's own lines a policy could quote (its `helps`, `hurts`, hints, facts).
    pub scenario_lines: &'a [&'a str],
    pub cues: &'a Cues,
    /// Normalized feeling words (the lexicon's and the scenario's).
    pub feelings: &'a [String],
    /// Cosine of the reply to the closest sentence the user said.
    pub relevance: f64,
    /// Per reply word (as `text::words` splits it): in a span that restates one of the user's
    /// sentences in other words (`copied.restated_cosine`); empty when not judged.
    pub restated: &'a [bool],
    /// Texts whose words count as said though the user did not say them: the answer to the
    /// factual question the user just asked.
    pub also_said: &'a [&'a str],
}

/// Which detectors fired on a reply, with the measures behind them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Findings {
    /// Share of the reply's words in runs copied from the user or the scenario.
    pub copied_share: f64,
    /// Share of the reply's words copied from the user alone.
    pub copied_user_share: f64,
    pub copied: bool,
    /// The reply copies `copied.min_share` of its words from the scenario's own lines (more than
    /// from the user): it earns no `helps` points, flagged as `copied` or not.
    pub copied_scenario: bool,
    /// Per reply word (as `text::words` splits it): copied from the user or listed bare from
    /// their words. Such words earn no reflection credit.
    pub borrowed: Vec<bool>,
    /// The reply lists the user's words bare, as a slot would ("thousand, minimums and
    /// statements").
    pub slotted: bool,
    pub stacked_questions: bool,
    pub meta: bool,
    pub template: bool,
    pub incoherent: bool,
    pub padding: bool,
    pub off_topic: bool,
    pub feeling_salad: bool,
    /// Warm words and compliments counted.
    pub warm: usize,
    /// Set by [`Detectors::judge_engagement`].
    pub flattery: bool,
    /// Set by [`Detectors::judge_engagement`].
    pub sycophancy: bool,
    /// The reply stops mid-sentence.
    pub cut_off: bool,
    /// The reply tells the user's story about them, or reads it as a text, without a word to them.
    pub narration: bool,
    /// What the reply asserts that the user did not say, contradicts, or alarms them with.
    pub faithful: Faithfulness,
    /// The user's words the reply puts out of place (the wording head, lowercase; set by the
    /// appraiser): they earn no specificity.
    pub misplaced: BTreeSet<String>,
    /// Without its misplaced words discounted the reply would have landed as specific (set by
    /// the appraiser): the user says why it did not.
    pub misplaced_cost: bool,
    /// Most of the user's words in the reply are misplaced: a frame with them slotted in (set by
    /// the appraiser).
    pub slot_filled: bool,
    /// The reply does not read as one person talking: the fluency judge flags it (set by the
    /// appraiser). Its moves earn nothing.
    pub disfluent: bool,
}

fn norm_all(v: &[String]) -> Vec<String> {
    v.iter()
        .map(|p| normalize(p))
        .filter(|p| !p.trim().is_empty())
        .collect()
}

/// Word bigrams of a word list.
fn bigrams(ws: &[String]) -> BTreeSet<(String, String)> {
    ws.windows(2)
        .map(|w| (w[0].clone(), w[1].clone()))
        .collect()
}

/// Jaccard overlap of two sets.
fn jaccard<T: Ord>(a: &BTreeSet<T>, b: &BTreeSet<T>) -> f64 {
    let inter = a.intersection(b).count();
    let union = a.len() + b.len() - inter;
    if union == 0 {
        0.0
    } else {
        inter as f64 / union as f64
    }
}

impl Detectors {
    /// Loads `data/detectors.yaml` under `root`.
    pub fn load(root: &Path) -> Result<Self> {
        let path = root.join("data/detectors.yaml");
        let cfg: DetectorsCfg = crate::profile::yaml::read_yaml(&path)?;
        for (field, share) in [
            ("copied.min_share", cfg.copied.min_share),
            ("copied.scenario_min_share", cfg.copied.scenario_min_share),
        ] {
            if !(0.0..=1.0).contains(&share) {
                return Err(Error::input(
                    &path,
                    field,
                    "must be a share between 0 and 1",
                ));
            }
        }
        if !(cfg.copied.restated_cosine > 0.0 && cfg.copied.restated_cosine <= 1.0) {
            return Err(Error::input(
                &path,
                "copied.restated_cosine",
                "must be a cosine in (0, 1]",
            ));
        }
        if cfg.copied.min_run < 2 {
            return Err(Error::input(
                &path,
                "copied.min_run",
                "must be at least 2 words (1 would flag every shared word)",
            ));
        }
        // The faithfulness checks read a negation as the user does.
        let speaker = crate::profile::SpeakerRules::load(&root.join("data/speaker.yaml"))?;
        let function_words: BTreeSet<String> = cfg
            .incoherent
            .function_words
            .iter()
            .map(|w| w.to_lowercase())
            .collect();
        Ok(Detectors {
            meta_phrases: norm_all(&cfg.meta.phrases),
            meta_hints: norm_all(&cfg.meta.hints),
            function_words: function_words.clone(),
            compliments: norm_all(&cfg.flattery.compliments),
            dangling: cfg
                .cut_off
                .dangling
                .iter()
                .map(|w| w.to_lowercase())
                .collect(),
            address: cfg
                .narration
                .address
                .iter()
                .map(|w| w.to_lowercase())
                .collect(),
            frames: norm_all(&cfg.narration.frames),
            faithful: Faithful::new(cfg.faithful.clone(), function_words, speaker.negation()),
            cfg,
        })
    }

    /// The faithfulness checks alone.
    pub fn faithful_checks(&self) -> &Faithful {
        &self.faithful
    }

    /// Runs every detector but the safety screen ([`SafetyScreen`]) and the ones that need the
    /// reflection score ([`Self::judge_engagement`]).
    pub fn detect(&self, inp: &DetectInput<'_>) -> Findings {
        let c = &self.cfg;
        let padded = normalize(inp.reply);
        let reply_words = words(inp.reply);
        let mut f = Findings::default();
        let questions = inp.cues.open_questions + inp.cues.closed_questions;
        // One mask per source kind: what the user said, and the scenario's own lines.
        let (run, sentence) = (c.copied.min_run, c.copied.min_sentence);
        let mut from_user = copying::copied_mask(inp.reply, inp.user_messages, run, sentence);
        for (w, r) in from_user.iter_mut().zip(inp.restated) {
            *w |= *r;
        }
        let from_scenario = copying::copied_mask(inp.reply, inp.scenario_lines, run, sentence);
        let from_either: Vec<bool> = from_user
            .iter()
            .zip(&from_scenario)
            .map(|(u, s)| *u || *s)
            .collect();
        let (n_user, user_share) = copying::coverage(&from_user);
        let (_, share) = copying::coverage(&from_either);
        (f.copied_share, f.copied_user_share) = (share, user_share);
        // Echoing the user is judged on what the user said; the scenario's lines (example replies
        // a good listener may come close to by chance) only when quoted at length.
        f.copied = user_share >= c.copied.min_share
            || n_user >= c.copied.min_words
            || share >= c.copied.scenario_min_share;
        f.copied_scenario = share >= c.copied.min_share && share > user_share;
        // Any word the user said but the pronouns, which a list of things never holds.
        let user_words: BTreeSet<String> = inp
            .user_messages
            .iter()
            .flat_map(|m| words(m))
            .filter(|w| !matches!(w.as_str(), "i" | "you" | "me" | "we" | "they" | "it"))
            .collect();
        let listed =
            copying::bare_list_mask(inp.reply, c.template.min_list, |w| user_words.contains(w));
        f.slotted = listed.iter().any(|l| *l);
        f.borrowed = from_user
            .iter()
            .zip(&listed)
            .map(|(a, b)| *a || *b)
            .collect();
        f.stacked_questions = questions >= c.stacked_questions.min_questions;
        f.meta = count_phrases(&padded, &self.meta_phrases) >= 1
            || count_phrases(&padded, &self.meta_hints) >= 2;
        f.narration = reply_words.len() >= c.narration.min_words
            && !reply_words.iter().any(|w| self.address.contains(w))
            && count_phrases(&padded, &self.frames) >= 1;
        f.template = f.slotted || self.same_frame(inp);
        let content: Vec<&String> = reply_words
            .iter()
            .filter(|w| !self.function_words.contains(w.as_str()))
            .collect();
        let function = reply_words.len() - content.len();
        f.incoherent = reply_words.len() >= c.incoherent.min_words
            && (function as f64) < c.incoherent.min_function_share * reply_words.len() as f64;
        let distinct: BTreeSet<&&String> = content.iter().collect();
        f.padding = content.len() >= c.padding.min_content_words
            && (distinct.len() as f64) < c.padding.min_distinct_share * content.len() as f64;
        // Addressed to the person: in the second person, or asking them something.
        let addressed = questions > 0
            || reply_words.iter().any(|w| {
                matches!(
                    w.as_str(),
                    "you"
                        | "your"
                        | "you're"
                        | "yourself"
                        | "you've"
                        | "you'll"
                        | "you'd"
                        | "yours"
                )
            });
        f.off_topic = inp.relevance < c.off_topic.min_relevance
            || (inp.relevance < c.off_topic.max_relevance && !addressed);
        let named: BTreeSet<&String> = inp
            .feelings
            .iter()
            .filter(|w| padded.contains(w.as_str()))
            .collect();
        f.feeling_salad = named.len() >= c.feeling_salad.min_feelings;
        f.warm = inp.cues.warm + count_phrases(&padded, &self.compliments);
        f.cut_off = super::text::cut_off(inp.reply, c.cut_off.min_words, &self.dangling);
        f.faithful = self
            .faithful
            .judge(inp.reply, inp.user_messages, inp.also_said);
        f
    }

    /// Sets the detectors that need the reflection score: empty praise (warm words and
    /// compliments) and agreement, each judged against engagement (some reflection or an open
    /// question). Several agreement phrases are sycophantic whatever else the reply does.
    pub fn judge_engagement(&self, f: &mut Findings, cues: &Cues, reflection: f64) {
        let engaged = reflection >= self.cfg.flattery.max_reflection || cues.open_questions > 0;
        f.flattery = f.warm >= self.cfg.flattery.min_warm && !engaged;
        f.sycophancy = cues.agreement >= self.cfg.sycophancy.min_agreement
            || (cues.agreement >= 1 && !engaged);
    }

    /// The reply shares its frame (its words with everything the user said taken out) with an
    /// earlier reply of the dialogue.
    fn same_frame(&self, inp: &DetectInput<'_>) -> bool {
        let t = &self.cfg.template;
        let frame = |text: &str| bigrams(&copying::own_words(text, inp.user_messages));
        let mine = frame(inp.reply);
        if mine.len() < t.min_bigrams {
            return false;
        }
        inp.previous_replies.iter().any(|p| {
            let theirs = frame(p);
            theirs.len() >= t.min_bigrams && jaccard(&mine, &theirs) >= t.min_overlap
        })
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
