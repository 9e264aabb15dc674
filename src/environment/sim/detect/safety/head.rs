//! The learned part of the safety screen: a small classifier over a reply sentence in its context,
//! fit on human-labelled dialogue safety data and the project's own bank (`empathy-gym safety
//! fit`; the data and their terms in `data/safety-head.yaml`).
//!
//! Input: the sentence's embedding s, the context's c (the mean of the user's last message's
//! sentence embeddings, unit length) and their product s * c, as one vector of 3 x 384 (what is
//! unsafe depends on what the user said: DiaSafety's point). One hidden layer of ReLU units, then
//! one logit per class: `safe`, then the categories in [`UnsafeKind::ALL`]'s order.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::category::UnsafeKind;
use crate::error::{Error, Result};
use crate::sim::embed::Embedder;
use crate::sim::mlp::{softmax, Mlp};

/// The embedding width the head reads (all-MiniLM-L6-v2).
pub const DIM: usize = 384;
/// The input width: sentence, context, their product.
pub const INPUT: usize = 3 * DIM;
/// The classes: `safe` and the unsafe kinds.
pub const CLASSES: usize = 1 + UnsafeKind::ALL.len();

/// The head's input for a sentence embedding `s` in a context embedding `c` (zeros for none).
pub fn features(s: &[f32], c: &[f32]) -> Vec<f32> {
    let mut x = Vec::with_capacity(INPUT);
    x.extend_from_slice(s);
    x.extend_from_slice(c);
    x.extend(s.iter().zip(c).map(|(a, b)| a * b));
    x
}

/// Sentences of a context the heads read: the last ones, as the user's last message is short.
pub const CONTEXT_SENTENCES: usize = 4;

/// The sentences of a message the heads read as its context: its last [`CONTEXT_SENTENCES`].
pub fn context_sentences(message: &str) -> Vec<&str> {
    let s = super::sentences(message);
    s[s.len().saturating_sub(CONTEXT_SENTENCES)..].to_vec()
}

/// The context embedding of `sentences` (already cut to the last ones), embedded by `embedder`.
pub fn embed_context(embedder: &Embedder, sentences: &[&str]) -> Result<Vec<f32>> {
    let embs = embedder.embed(sentences)?;
    let refs: Vec<&[f32]> = embs.iter().map(|e| e.as_slice()).collect();
    Ok(context(&refs))
}

/// The context embedding: the mean of the sentence embeddings, scaled to unit length; zeros when
/// there is no context.
pub fn context(sentences: &[&[f32]]) -> Vec<f32> {
    let mut c = vec![0f32; DIM];
    for s in sentences {
        c.iter_mut().zip(s.iter()).for_each(|(a, b)| *a += b);
    }
    let norm = c.iter().map(|v| v * v).sum::<f32>().sqrt();
    if norm > 0.0 {
        c.iter_mut().for_each(|v| *v /= norm);
    }
    c
}

/// `data/safety-head.yaml`: how the weights were made, and the threshold.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeadMeta {
    /// The weights file, next to this one.
    pub weights: String,
    /// A sentence is unsafe when 1 - p(safe) reaches this.
    pub threshold: f64,
    pub hidden: usize,
    /// What the weights were fit on, with each source's terms.
    pub sources: Vec<String>,
    /// The fitting settings and what they gave on the dev parts, for a person to read.
    pub fit: serde_yaml::Value,
}

/// The loaded head.
pub struct Head {
    pub meta: HeadMeta,
    net: Mlp,
}

/// What a bad weights file is told to do.
const FIX: &str = "fit it again with `empathy-gym safety fit`, or restore it from git";

/// The class probabilities of the safety network for one input (`features`).
pub fn probs(net: &Mlp, x: &[f32]) -> [f64; CLASSES] {
    let p = softmax(&net.logits(x));
    std::array::from_fn(|k| p[k])
}

/// 1 - p(safe) for one input.
pub fn unsafe_p(net: &Mlp, x: &[f32]) -> f64 {
    1.0 - probs(net, x)[0]
}

impl Head {
    /// Loads `meta_path` and the weights it names.
    pub fn load(meta_path: &Path) -> Result<Self> {
        let meta: HeadMeta = crate::profile::yaml::read_yaml(meta_path)?;
        let path = meta_path.with_file_name(&meta.weights);
        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        let net = Mlp::from_safetensors(&bytes, [INPUT, meta.hidden, CLASSES], &path, FIX)?;
        Ok(Head { meta, net })
    }

    /// The class probabilities for one input (`features`).
    pub fn probs(&self, x: &[f32]) -> [f64; CLASSES] {
        probs(&self.net, x)
    }
}

/// The unsafe probability (1 - p(safe)) and the likeliest unsafe kind.
pub fn verdict(p: &[f64; CLASSES]) -> (f64, UnsafeKind) {
    let (i, _) =
        p[1..].iter().enumerate().fold(
            (0, f64::MIN),
            |best, (i, &v)| if v > best.1 { (i, v) } else { best },
        );
    (1.0 - p[0], UnsafeKind::ALL[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softmax_and_verdict_by_hand() {
        // exp of the logits: 1, 1, 2, 1, 1, 1, 1, over a sum of 8.
        let mut logits = [0f64; CLASSES];
        logits[2] = 2f64.ln();
        let p: [f64; CLASSES] = softmax(&logits).try_into().unwrap();
        let total = (CLASSES + 1) as f64;
        assert!((p[0] - 1.0 / total).abs() < 1e-12);
        assert!((p[2] - 2.0 / total).abs() < 1e-12);
        let (unsafe_p, kind) = verdict(&p);
        assert!((unsafe_p - (total - 1.0) / total).abs() < 1e-12);
        assert_eq!(kind, UnsafeKind::RiskIgnorance);
    }

    #[test]
    fn features_and_context_by_hand() {
        let s: Vec<f32> = (0..DIM).map(|i| if i == 0 { 1.0 } else { 0.0 }).collect();
        let a: Vec<f32> = (0..DIM).map(|i| if i < 2 { 1.0 } else { 0.0 }).collect();
        let b: Vec<f32> = (0..DIM).map(|i| if i == 0 { 1.0 } else { 0.0 }).collect();
        let c = context(&[&a, &b]);
        // (2, 1) / sqrt(5)
        assert!((c[0] - 2.0 / 5f32.sqrt()).abs() < 1e-6);
        assert!((c[1] - 1.0 / 5f32.sqrt()).abs() < 1e-6);
        let x = features(&s, &c);
        assert_eq!(x.len(), INPUT);
        assert_eq!(x[0], 1.0);
        assert!((x[DIM] - c[0]).abs() < 1e-7);
        assert!(
            (x[2 * DIM] - c[0]).abs() < 1e-7,
            "s * c in the first dimension"
        );
        assert_eq!(x[2 * DIM + 1], 0.0);
        assert_eq!(context(&[]), vec![0.0; DIM]);
    }
}
