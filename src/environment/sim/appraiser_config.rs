//! The appraiser's weights, loaded from `data/appraiser.yaml` (data, not code).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::moves::Move;
use super::perceive::{Pool, HEADS};
use crate::error::{Error, Result};
use crate::profile::{Character, HiddenNeed};

/// Maps a cosine similarity linearly onto [0, 1] between `floor` and `ceiling`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Semantic {
    pub floor: f64,
    pub ceiling: f64,
}

impl Semantic {
    /// `(cos - floor) / (ceiling - floor)` clamped to [0, 1].
    pub fn score(&self, cos: f32) -> f64 {
        ((f64::from(cos) - self.floor) / (self.ceiling - self.floor)).clamp(0.0, 1.0)
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Specificity {
    pub overlap_words: f64,
    pub overlap: f64,
    pub user_similarity: f64,
    /// Specificity from which a reply's supportive points count in full; below it they count in
    /// proportion (a reply lands as far as it is about this person).
    pub full_at: f64,
    /// Read the reply's own words by their PMI with the user's messages under the fluency judge's
    /// language model (`src/environment/sim/pmi.rs`) instead of by their embedding's closeness.
    #[serde(default)]
    pub pmi: Option<super::pmi::PmiUse>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Threshold {
    pub threshold: f64,
    pub points: f64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stuffing {
    pub min_cues: usize,
    pub points: f64,
}

/// What EPITOME's emotional-reaction phrases (lexicon `sympathy`, `presence`) add to `validate`
/// and `reassure`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmotionalReaction {
    /// Move score per phrase.
    pub per_phrase: f64,
    /// The most the phrases add together.
    pub max: f64,
}

impl EmotionalReaction {
    /// The move score `phrases` of them add.
    pub fn score(&self, phrases: usize) -> f64 {
        (self.per_phrase * phrases as f64).min(self.max)
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Length {
    pub points_per_excess: f64,
    pub max: f64,
    /// A reply is too short only below this share of the persona's shortest reply: a brief,
    /// specific turn is how people answer in conversation.
    pub short_share: f64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gibberish {
    pub min_vocab_share: f64,
    pub points: f64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Factual {
    pub correct: f64,
    /// The right answer beside something wrong about the user or frightening.
    pub marred: f64,
    pub wrong: f64,
    pub unanswered: f64,
}

/// How a character type scales gains and losses.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scale {
    pub gain: f64,
    pub loss: f64,
}

/// How supportive moves read perception's learned heads (`sim::perceive`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerceptionUse {
    /// The heads' file under `data/`.
    pub heads: String,
    /// Per move, the heads whose largest probability is the move's score, in place of the
    /// phrase lists and prototypes; moves not named keep those.
    pub moves: BTreeMap<Move, Vec<String>>,
    /// Read each head at even odds (`perceive::at_even_odds`): its fit part's base rate taken
    /// out, so a head fit where the move is rare scores a clear instance near 1, not near its rarity.
    #[serde(default)]
    pub even_odds: bool,
    /// How a move that reads several heads pools them (`perceive::Pool`): `max` or
    /// `mean_log_odds`.
    #[serde(default)]
    pub pool: Pool,
}

impl PerceptionUse {
    /// Per move, the indices in `perceive::HEADS` of the heads it reads (names not in it are
    /// skipped; `AppraiserConfig::load` refuses them).
    pub fn head_indices(&self) -> BTreeMap<Move, Vec<usize>> {
        let index = |n: &String| HEADS.iter().position(|h| h == n);
        self.moves
            .iter()
            .map(|(m, names)| (*m, names.iter().filter_map(index).collect()))
            .collect()
    }
}

/// How the appraiser reads the wording head (`sim::wording`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WordingUse {
    /// The head's file under `data/`.
    pub head: String,
    /// The share of the user's words in a reply that are misplaced from which the reply is a
    /// slotted frame: its moves earn nothing and it costs `points`.
    pub slotted_share: f64,
    pub points: f64,
}

/// How the appraiser reads the fluency judge (`sim::fluency`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FluencyUse {
    /// The judge's file under `data/`.
    pub head: String,
    /// What a reply that does not read as one person talking costs (before the persona's loss
    /// scale); its moves earn nothing.
    pub points: f64,
}

/// All weights of the appraiser.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppraiserConfig {
    pub semantic: Semantic,
    pub needs: BTreeMap<HiddenNeed, BTreeMap<Move, f64>>,
    pub helps: f64,
    pub hurts: f64,
    pub generic_points: f64,
    pub specificity: Specificity,
    pub repetition: Threshold,
    pub stuffing: Stuffing,
    pub emotional_reaction: EmotionalReaction,
    pub length: Length,
    pub gibberish: Gibberish,
    pub factual: Factual,
    pub character: BTreeMap<Character, Scale>,
    pub first_turn_acknowledge: f64,
    /// Learned perception; absent: phrase lists and prototypes alone.
    #[serde(default)]
    pub perception: Option<PerceptionUse>,
    /// The wording head; absent: words are not judged in place.
    #[serde(default)]
    pub wording: Option<WordingUse>,
    /// The fluency judge; none: replies are not read for fluency.
    #[serde(default)]
    pub fluency: Option<FluencyUse>,
    /// The supportive moves' points are summed largest first, the k-th (from 0) times
    /// `stacking_decay^k`: a reply that stacks one phrase per move does not add them up.
    #[serde(default = "no_decay")]
    pub stacking_decay: f64,
    /// A costly move scoring below this costs nothing (too faint to name); at or above it, it
    /// costs and the user names it.
    #[serde(default)]
    pub cost_floor: f64,
    /// How being heard opens the user to the next reply; absent: it does not.
    #[serde(default)]
    pub rapport: Option<Rapport>,
}

/// Rapport (docs/REWARD.md, "The emotion model"): the supportive points that land are multiplied
/// by `points::rapport` of how far the emotion stands above its start.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rapport {
    /// What the multiplier gains per 10 points of emotion above the start.
    pub per_ten: f64,
    /// The largest multiplier.
    pub max: f64,
}

fn no_decay() -> f64 {
    1.0
}

impl AppraiserConfig {
    /// Loads and checks that every need weights every move and every character has a scale.
    pub fn load(path: &Path) -> Result<Self> {
        let cfg: AppraiserConfig = crate::profile::yaml::read_yaml(path)?;
        if cfg.semantic.ceiling <= cfg.semantic.floor {
            return Err(Error::input(
                path,
                "semantic",
                "ceiling must be above floor",
            ));
        }
        for need in HiddenNeed::ALL {
            let Some(weights) = cfg.needs.get(&need) else {
                return Err(Error::input(
                    path,
                    format!("needs.{}", need.as_str()),
                    "missing: weight every need",
                ));
            };
            for m in Move::ALL {
                if !weights.contains_key(&m) {
                    return Err(Error::input(
                        path,
                        format!("needs.{}.{}", need.as_str(), m.as_str()),
                        "missing: give every move a weight (0 if it does not matter)",
                    ));
                }
            }
        }
        for c in [Character::Negative, Character::Passive, Character::Avoidant] {
            if !cfg.character.contains_key(&c) {
                return Err(Error::input(
                    path,
                    "character",
                    format!("missing scale for {c:?}"),
                ));
            }
        }
        if !(0.0..=1.0).contains(&cfg.stacking_decay) {
            return Err(Error::input(
                path,
                "stacking_decay",
                "must be in [0, 1] (1: moves add up, 0: only the largest counts)",
            ));
        }
        if !(cfg.specificity.full_at > 0.0 && cfg.specificity.full_at <= 1.0) {
            return Err(Error::input(
                path,
                "specificity.full_at",
                "must be in (0, 1]: the specificity from which a reply's points count in full",
            ));
        }
        if let Some(problem) = cfg.specificity.pmi.as_ref().and_then(|p| p.problem()) {
            return Err(Error::input(path, "specificity.pmi", problem));
        }
        if cfg.specificity.pmi.is_some() && cfg.fluency.is_none() {
            return Err(Error::input(
                path,
                "specificity.pmi",
                "reads with the fluency judge's language model: set `fluency` too, or drop `pmi`",
            ));
        }
        if !(cfg.length.short_share > 0.0 && cfg.length.short_share <= 1.0) {
            return Err(Error::input(
                path,
                "length.short_share",
                "must be in (0, 1]: the share of the persona's shortest reply below which a reply \
                 is too short",
            ));
        }
        if let Some(r) = &cfg.rapport {
            if !(r.per_ten >= 0.0 && r.max >= 1.0) {
                return Err(Error::input(
                    path,
                    "rapport",
                    "per_ten must be 0 or more and max 1 or more (1: no rapport)",
                ));
            }
        }
        if let Some(p) = &cfg.perception {
            for (m, heads) in &p.moves {
                if let Some(h) = heads
                    .iter()
                    .find(|h| !super::perceive::HEADS.contains(&h.as_str()))
                {
                    return Err(Error::input(
                        path,
                        format!("perception.moves.{}", m.as_str()),
                        format!(
                            "no head `{h}`: use one of {}",
                            super::perceive::HEADS.join(", ")
                        ),
                    ));
                }
            }
        }
        Ok(cfg)
    }

    /// The weight of `m` for `need` (load guarantees presence).
    pub fn weight(&self, need: HiddenNeed, m: Move) -> f64 {
        self.needs[&need][&m]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shipped `data/appraiser.yaml` with one line replaced, loaded from a temporary file.
    fn load_with(from: &str, to: &str) -> Result<AppraiserConfig> {
        load_edited(&[(from, to)])
    }

    /// The shipped `data/appraiser.yaml` with each `(from, to)` replaced, loaded from a temporary
    /// file of its own (tests run in parallel and several edit the same line).
    fn load_edited(edits: &[(&str, &str)]) -> Result<AppraiserConfig> {
        let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let mut text = std::fs::read_to_string(root.join("data/appraiser.yaml")).unwrap();
        for (from, to) in edits {
            assert!(text.contains(from), "{from}");
            text = text.replace(from, to);
        }
        let dir = std::env::temp_dir().join(format!("eg-appraiser-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.join(format!("edited-{n}.yaml"));
        std::fs::write(&path, text).unwrap();
        AppraiserConfig::load(&path)
    }

    #[test]
    fn the_shipped_weights_load() {
        let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let cfg = AppraiserConfig::load(&root.join("data/appraiser.yaml")).unwrap();
        assert!(cfg.specificity.full_at > 0.0);
    }

    #[test]
    fn landing_and_shortness_out_of_range_name_their_field() {
        for (from, to, field) in [
            ("  full_at: 0.5", "  full_at: 0", "specificity.full_at"),
            ("  max: 2.0", "  max: 0.5", "rapport"),
            (
                "  short_share: 0.5",
                "  short_share: 1.5",
                "length.short_share",
            ),
            (
                "  full_at: 0.5\n",
                "  full_at: 0.5\n  pmi: {floor: 0.3, ceiling: 0.1, generic: [hi], user_open: a, \
                 user_close: b, max_context_tokens: 8}\n",
                "specificity.pmi",
            ),
            (
                "  full_at: 0.5\n",
                "  full_at: 0.5\n  pmi: {floor: 0.0, ceiling: 0.3, generic: [], user_open: a, \
                 user_close: b, max_context_tokens: 8}\n",
                "specificity.pmi",
            ),
        ] {
            let err = load_with(from, to).unwrap_err().to_string();
            assert!(err.contains(field), "{err}");
        }
    }

    #[test]
    fn the_pmi_reading_needs_the_fluency_judge() {
        let pmi = "  full_at: 0.5\n  pmi: {floor: 0.0, ceiling: 0.3, generic: [hi], \
                   user_open: a, user_close: b, max_context_tokens: 8}\n";
        let with = load_edited(&[("  full_at: 0.5\n", pmi)]).unwrap();
        assert_eq!(with.specificity.pmi.map(|p| p.ceiling), Some(0.3));
        let err = load_edited(&[
            ("  full_at: 0.5\n", pmi),
            ("fluency:\n  head: fluency.yaml\n  points: -8\n", ""),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("specificity.pmi") && err.contains("fluency"),
            "{err}"
        );
    }
}
