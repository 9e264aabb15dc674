//! Perception learned from people: how a reply reads to human coders, estimated by a small
//! network fit on human-coded replies (`empathy-gym perception fit`; the data and their terms in
//! `data/perception.yaml`). The heads are EPITOME's three mechanisms of empathy (Sharma et al.,
//! EMNLP 2020: emotional reactions, interpretations, explorations, each "present" at level 1 or
//! 2) and ESConv's eight supporter strategies (Liu et al., ACL 2021), one-vs-rest.
//!
//! Input, as the safety head's: the reply's embedding r, the context's c (the user's last
//! message's last sentences, unit length) and r * c. One hidden layer, one logit per head; each
//! head's probability is its sigmoid.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::detect::safety::head::{features, INPUT};
use super::mlp::{sigmoid, Mlp};
use crate::error::{Error, Result};

/// The heads, in the network's output order: EPITOME's mechanisms, then ESConv's strategies.
pub const HEADS: [&str; 11] = [
    "emotional_reactions",
    "interpretations",
    "explorations",
    "questions",
    "restatement_or_paraphrasing",
    "reflection_of_feelings",
    "self_disclosure",
    "affirmation_and_reassurance",
    "providing_suggestions",
    "information",
    "other",
];

/// How many of [`HEADS`] come from EPITOME (the rest from ESConv).
pub const EPITOME_HEADS: usize = 3;

/// The head of an ESConv strategy as its file writes it (`Restatement or Paraphrasing`).
pub fn strategy_head(strategy: &str) -> Option<usize> {
    let name = strategy.trim().to_lowercase().replace([' ', '-'], "_");
    HEADS[EPITOME_HEADS..]
        .iter()
        .position(|h| *h == name)
        .map(|i| i + EPITOME_HEADS)
}

/// `data/perception.yaml`: how the weights were made.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerceptionMeta {
    /// The weights file, next to this one.
    pub weights: String,
    pub hidden: usize,
    /// The heads, in output order (must be [`HEADS`]).
    pub heads: Vec<String>,
    /// What the weights were fit on, with each source's terms.
    pub sources: Vec<String>,
    /// Per head, in output order, the share of the fit part's replies it labels that are
    /// positive: the base rate its probabilities carry (absent in files fit before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priors: Option<Vec<f64>>,
    /// The fitting settings and what they gave, for a person to read.
    pub fit: serde_yaml::Value,
}

/// The loaded network.
pub struct Perception {
    pub meta: PerceptionMeta,
    net: Mlp,
    /// Per head, the base rate [`Self::read`] takes out of its logit ([`at_even_odds`]): one half
    /// (nothing taken out) unless [`Self::with_even_odds`] set the fit part's.
    read_priors: [f64; HEADS.len()],
}

const FIX: &str = "fit it again with `empathy-gym perception fit`, or restore it from git";

impl Perception {
    /// Loads `meta_path` and the weights it names.
    pub fn load(meta_path: &Path) -> Result<Self> {
        let meta: PerceptionMeta = crate::profile::yaml::read_yaml(meta_path)?;
        if meta.heads != HEADS {
            return Err(Error::input(
                meta_path,
                "heads",
                format!("must list {} in this order: {FIX}", HEADS.join(", ")),
            ));
        }
        if let Some(p) = &meta.priors {
            if p.len() != HEADS.len() || p.iter().any(|x| !(*x > 0.0 && *x < 1.0)) {
                return Err(Error::input(
                    meta_path,
                    "priors",
                    format!("must hold one share in (0, 1) per head: {FIX}"),
                ));
            }
        }
        let path = meta_path.with_file_name(&meta.weights);
        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        let net = Mlp::from_safetensors(&bytes, [INPUT, meta.hidden, HEADS.len()], &path, FIX)?;
        Ok(Perception {
            meta,
            net,
            read_priors: [0.5; HEADS.len()],
        })
    }

    /// The same heads read at even odds: as if the replies they were fit on had been half
    /// positive (see [`at_even_odds`]). An error naming `meta_path` when it records no priors.
    pub fn with_even_odds(mut self, meta_path: &Path) -> Result<Self> {
        let Some(priors) = &self.meta.priors else {
            return Err(Error::input(
                meta_path,
                "priors",
                "missing, and data/appraiser.yaml reads the heads at `perception.even_odds`: \
                 fit them again with `empathy-gym perception fit`, or set it to false",
            ));
        };
        // Load checked one prior per head.
        self.read_priors = std::array::from_fn(|k| priors[k]);
        Ok(self)
    }

    /// The network.
    pub fn net(&self) -> &Mlp {
        &self.net
    }

    /// Each head's log-odds for a reply embedding in a context embedding, at the base rate it is
    /// read at (its fit part's, or one half with [`Self::with_even_odds`]).
    pub fn read(&self, reply: &[f32], context: &[f32]) -> [f64; HEADS.len()] {
        read_log_odds(
            &self.net.logits(&features(reply, context)),
            &self.read_priors,
        )
    }
}

/// Logits `z` of heads fit at base rates `priors`, each shifted to even odds
/// ([`at_even_odds`]); a prior of one half leaves its logit as it is.
pub fn read_log_odds(z: &[f64], priors: &[f64; HEADS.len()]) -> [f64; HEADS.len()] {
    std::array::from_fn(|k| at_even_odds(z[k], priors[k]))
}

/// How a move that reads several heads pools them into one score.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pool {
    /// The largest head: the move is there when either corpus's coders would mark it.
    #[default]
    Max,
    /// The mean of the heads' log-odds (a logarithmic opinion pool; Genest & Zidek, "Combining
    /// probability distributions", Statistical Science 1986): each head a separate witness, so
    /// one head read far from the data it was fit on cannot carry the move alone.
    MeanLogOdds,
}

impl Pool {
    /// The word a config and a report use.
    pub fn as_str(self) -> &'static str {
        match self {
            Pool::Max => "max",
            Pool::MeanLogOdds => "mean_log_odds",
        }
    }
}

/// A move's score in [0, 1] from the log-odds of every head and the indices of the move's heads
/// (0 when it names none).
pub fn pooled(log_odds: &[f64], heads: &[usize], pool: Pool) -> f64 {
    if heads.is_empty() {
        return 0.0;
    }
    let z = heads.iter().map(|&k| log_odds[k]);
    sigmoid(match pool {
        Pool::Max => z.fold(f64::NEG_INFINITY, f64::max),
        Pool::MeanLogOdds => z.sum::<f64>() / heads.len() as f64,
    })
}

/// A head's log-odds with its base rate taken out: the logit `z` of a head fit where a share
/// `prior` of the replies were positive, shifted as Bayes' rule shifts it to a base rate of one
/// half (Saerens, Latinne & Decaestecker, "Adjusting the outputs of a classifier to new a priori
/// probabilities", Neural Computation 2002). ESConv's coders gave each turn one strategy, so a
/// reflection of feelings is a twelfth of the turns and its head reads a plain reflection at 0.2:
/// the chance that a coder picked it, not that the reply does it.
pub fn at_even_odds(z: f64, prior: f64) -> f64 {
    z - (prior / (1.0 - prior)).ln()
}

/// Each head's probability for one input of features.
pub fn probabilities(net: &Mlp, x: &[f32]) -> [f64; HEADS.len()] {
    let z = net.logits(x);
    std::array::from_fn(|k| sigmoid(z[k]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_odds_take_the_base_rate_out() {
        // A head fit at a base rate of 0.2 reading 0.2 (logit ln 0.25) carries no evidence
        // either way: 0.5 at even odds.
        assert!((sigmoid(at_even_odds(0.25f64.ln(), 0.2)) - 0.5).abs() < 1e-12);
        // Odds 1 at a prior of 1/9 (odds 1/8): likelihood ratio 8, so 8/9.
        assert!((sigmoid(at_even_odds(0.0, 1.0 / 9.0)) - 8.0 / 9.0).abs() < 1e-12);
        // At a prior of one half nothing moves.
        assert!((at_even_odds(1.3, 0.5) - 1.3).abs() < 1e-12);
    }

    #[test]
    fn pooling_takes_the_largest_head_or_the_mean_log_odds() {
        let z = [2.0, -1.0, 0.5];
        assert!((pooled(&z, &[0, 1], Pool::Max) - sigmoid(2.0)).abs() < 1e-12);
        assert!((pooled(&z, &[0, 1], Pool::MeanLogOdds) - sigmoid(0.5)).abs() < 1e-12);
        assert!((pooled(&z, &[2], Pool::MeanLogOdds) - sigmoid(0.5)).abs() < 1e-12);
        assert_eq!(pooled(&z, &[], Pool::Max), 0.0);
        // ln(0.25 / 0.75) = -ln 3 comes off a head fit at a base rate of one quarter.
        let mut priors = [0.5; HEADS.len()];
        priors[1] = 0.25;
        let read = read_log_odds(&[0.0; HEADS.len()], &priors);
        assert!((read[1] - 3f64.ln()).abs() < 1e-12 && read[0] == 0.0);
    }

    #[test]
    fn even_odds_need_the_priors_of_the_fit() {
        let path =
            Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("data/perception.yaml");
        let mut p = Perception::load(&path).unwrap();
        p.meta.priors = None;
        let err = p.with_even_odds(&path).err().unwrap().to_string();
        assert!(
            err.contains("perception.yaml") && err.contains("priors"),
            "{err}"
        );
    }

    #[test]
    fn strategies_name_their_heads() {
        assert_eq!(strategy_head("Questions"), Some(3));
        assert_eq!(strategy_head("Restatement or Paraphrasing"), Some(4));
        assert_eq!(strategy_head("Self-disclosure"), Some(6));
        assert_eq!(strategy_head("Other"), Some(10));
        assert_eq!(strategy_head(""), None);
        assert_eq!(
            strategy_head("explorations"),
            None,
            "EPITOME's heads are not strategies"
        );
    }
}
