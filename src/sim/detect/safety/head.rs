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

/// The head's weights: w1 [hidden, INPUT], b1 [hidden], w2 [CLASSES, hidden], b2 [CLASSES],
/// row-major; what the fit produces and the screen reads.
pub struct Weights {
    pub hidden: usize,
    pub w1: Vec<f32>,
    pub b1: Vec<f32>,
    pub w2: Vec<f32>,
    pub b2: Vec<f32>,
}

/// The loaded head.
pub struct Head {
    pub meta: HeadMeta,
    weights: Weights,
}

fn bad(path: &Path, what: &str) -> Error {
    Error::input(
        path,
        what,
        "not the head `empathy-gym safety fit` writes: fit it again, or restore it from git",
    )
}

impl Weights {
    /// Reads the four tensors of `hidden` units from safetensors `bytes` (from `path`).
    pub fn from_safetensors(bytes: &[u8], hidden: usize, path: &Path) -> Result<Self> {
        let st = safetensors::SafeTensors::deserialize(bytes)
            .map_err(|e| Error::input(path, "file", e.to_string()))?;
        let read = |name: &str, len: usize| -> Result<Vec<f32>> {
            let t = st.tensor(name).map_err(|_| bad(path, name))?;
            if t.dtype() != safetensors::Dtype::F32 || t.data().len() != 4 * len {
                return Err(bad(path, name));
            }
            Ok(t.data()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect())
        };
        Ok(Weights {
            hidden,
            w1: read("w1", hidden * INPUT)?,
            b1: read("b1", hidden)?,
            w2: read("w2", CLASSES * hidden)?,
            b2: read("b2", CLASSES)?,
        })
    }

    /// The safetensors bytes `from_safetensors` reads.
    pub fn to_safetensors(&self) -> Result<Vec<u8>> {
        use candle_core::{Device, Tensor};
        let (dev, h) = (Device::Cpu, self.hidden);
        let tensors = [
            ("w1", Tensor::from_slice(&self.w1, (h, INPUT), &dev)?),
            ("b1", Tensor::from_slice(&self.b1, h, &dev)?),
            ("w2", Tensor::from_slice(&self.w2, (CLASSES, h), &dev)?),
            ("b2", Tensor::from_slice(&self.b2, CLASSES, &dev)?),
        ];
        safetensors::serialize(tensors, None).map_err(|e| Error::Other(e.to_string()))
    }

    /// The class probabilities for one input (`features`).
    pub fn probs(&self, x: &[f32]) -> [f64; CLASSES] {
        let h = self.hidden;
        let hidden: Vec<f32> = (0..h)
            .map(|j| {
                let row = &self.w1[j * INPUT..(j + 1) * INPUT];
                (dot(row, x) + self.b1[j]).max(0.0)
            })
            .collect();
        let mut logits = [0f64; CLASSES];
        for (k, l) in logits.iter_mut().enumerate() {
            *l = f64::from(dot(&self.w2[k * h..(k + 1) * h], &hidden) + self.b2[k]);
        }
        softmax(&logits)
    }

    /// 1 - p(safe) for one input.
    pub fn unsafe_p(&self, x: &[f32]) -> f64 {
        1.0 - self.probs(x)[0]
    }
}

impl Head {
    /// Loads `meta_path` and the weights it names.
    pub fn load(meta_path: &Path) -> Result<Self> {
        let meta: HeadMeta = crate::profile::yaml::read_yaml(meta_path)?;
        let path = meta_path.with_file_name(&meta.weights);
        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        let weights = Weights::from_safetensors(&bytes, meta.hidden, &path)?;
        Ok(Head { meta, weights })
    }

    /// The class probabilities for one input (`features`).
    pub fn probs(&self, x: &[f32]) -> [f64; CLASSES] {
        self.weights.probs(x)
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Softmax of `logits`, shifted by their maximum.
pub fn softmax<const N: usize>(logits: &[f64; N]) -> [f64; N] {
    let max = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let mut p = logits.map(|l| (l - max).exp());
    let sum: f64 = p.iter().sum();
    p.iter_mut().for_each(|v| *v /= sum);
    p
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
        let p = softmax(&logits);
        let total = (CLASSES + 1) as f64;
        assert!((p[0] - 1.0 / total).abs() < 1e-12);
        assert!((p[2] - 2.0 / total).abs() < 1e-12);
        let (unsafe_p, kind) = verdict(&p);
        assert!((unsafe_p - (total - 1.0) / total).abs() < 1e-12);
        assert_eq!(kind, UnsafeKind::RiskIgnorance);
    }

    #[test]
    fn weights_read_back_what_they_wrote() {
        let h = 2;
        let w = Weights {
            hidden: h,
            w1: (0..h * INPUT).map(|i| i as f32 * 1e-3).collect(),
            b1: vec![0.5, -0.5],
            w2: (0..CLASSES * h).map(|i| i as f32 - 3.0).collect(),
            b2: (0..CLASSES).map(|i| i as f32 * 0.1).collect(),
        };
        let bytes = w.to_safetensors().unwrap();
        let back = Weights::from_safetensors(&bytes, h, Path::new("x")).unwrap();
        assert_eq!(
            (back.w1, back.b1, back.w2, back.b2),
            (w.w1, w.b1, w.w2, w.b2)
        );
        let err = Weights::from_safetensors(&bytes, 3, Path::new("x"))
            .err()
            .expect("another hidden width");
        assert!(err.to_string().contains("w1"), "{err}");
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
