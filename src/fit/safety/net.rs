//! Fits the safety screen's head (`sim::detect::safety::head`): a one-hidden-layer classifier over
//! (sentence, context) embeddings, trained with the project's AdamW on the weighted cross-entropy,
//! full batch, from a seeded start, so one command with the same data gives the same weights.
//!
//! A reply labelled unsafe may hold one harmful sentence among warm ones, and the labels do not
//! say which. The fit reads this as multiple-instance learning: a first round learns from whole
//! replies and from every sentence of a safe reply (all of them are safe); a second round adds,
//! for each unsafe reply of several sentences, the sentence the first round scores most unsafe as
//! an example of the reply's kind, and fits again from the same start.

use std::collections::HashMap;
use std::sync::Arc;

use candle_core::{DType, Device, Tensor, Var, D};
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};

use super::data::Example;
use crate::error::Result;
use crate::rl::{AdamW, AdamWConfig};
use crate::sim::detect::safety::head::{self, features, Weights, CLASSES, INPUT};
use crate::sim::detect::safety::sentences;
use crate::sim::embed::{Embedder, Embedding};

/// Sentences of a context the head reads: the last ones, as the user's last message is short.
pub const CONTEXT_SENTENCES: usize = 4;

/// The fit's settings.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FitSettings {
    pub hidden: usize,
    pub epochs: usize,
    pub lr: f64,
    pub weight_decay: f64,
    pub seed: u64,
}

impl Default for FitSettings {
    fn default() -> Self {
        FitSettings {
            hidden: 64,
            epochs: 300,
            lr: 3e-3,
            weight_decay: 1e-2,
            seed: 0,
        }
    }
}

/// An example to fit on: its input, class (0 safe, 1 + the kind's index) and weight.
pub struct Unit {
    pub x: Vec<f32>,
    pub class: u32,
    pub weight: f32,
}

/// Embeddings of many texts, computed once each (the embedder's own cache is bounded).
pub struct Embedded<'a> {
    embedder: &'a Embedder,
    map: HashMap<String, Arc<Embedding>>,
}

impl<'a> Embedded<'a> {
    pub fn new(embedder: &'a Embedder) -> Self {
        Embedded {
            embedder,
            map: HashMap::new(),
        }
    }

    /// Embeds every text not yet embedded, in batches of 512, with a progress bar.
    pub fn add(&mut self, texts: &[&str], what: &str) -> Result<()> {
        let mut todo: Vec<&str> = texts
            .iter()
            .copied()
            .filter(|t| !self.map.contains_key(*t))
            .collect();
        todo.sort_unstable();
        todo.dedup();
        let bar = super::bar(todo.len() as u64, what);
        for chunk in todo.chunks(512) {
            for (t, e) in chunk.iter().zip(self.embedder.embed(chunk)?) {
                self.map.insert(t.to_string(), e);
            }
            bar.inc(chunk.len() as u64);
        }
        bar.finish_and_clear();
        Ok(())
    }

    pub fn get(&self, text: &str) -> &[f32] {
        &self.map[text]
    }

    /// The context embedding of a message: its last [`CONTEXT_SENTENCES`] sentences.
    pub fn context(&self, context: &str) -> Vec<f32> {
        let s = context_sentences(context);
        let refs: Vec<&[f32]> = s.iter().map(|t| self.get(t)).collect();
        head::context(&refs)
    }
}

/// The sentences of a context the head reads.
pub fn context_sentences(context: &str) -> Vec<&str> {
    let s = sentences(context);
    s[s.len().saturating_sub(CONTEXT_SENTENCES)..].to_vec()
}

/// Every text an example needs embedded: its context's sentences, the reply's and the reply.
pub fn texts(examples: &[Example]) -> Vec<&str> {
    let mut out = Vec::new();
    for e in examples {
        out.extend(context_sentences(&e.context));
        out.extend(sentences(&e.reply));
        out.push(e.reply.as_str());
    }
    out
}

/// The class index of a kind (0 for safe).
pub fn class_of(e: &Example) -> u32 {
    e.kind.map_or(0, |k| {
        1 + crate::sim::detect::UnsafeKind::ALL
            .iter()
            .position(|a| *a == k)
            .expect("every kind is in ALL") as u32
    })
}

/// The first round's units of `examples`, each weighted `weight`: a safe reply's sentences, an
/// unsafe reply whole (and its one sentence when it has one).
pub fn units(examples: &[Example], emb: &Embedded<'_>, weight: f32) -> Vec<Unit> {
    let mut out = Vec::new();
    for e in examples {
        let c = emb.context(&e.context);
        let class = class_of(e);
        let sents = sentences(&e.reply);
        if class == 0 {
            for s in &sents {
                out.push(Unit {
                    x: features(emb.get(s), &c),
                    class,
                    weight,
                });
            }
        } else {
            let text = match sents.as_slice() {
                [one] => *one,
                _ => e.reply.as_str(),
            };
            out.push(Unit {
                x: features(emb.get(text), &c),
                class,
                weight,
            });
        }
    }
    out
}

/// The second round's extra units: each unsafe reply's sentence the fitted `net` scores most
/// unsafe, when the reply has several.
pub fn likeliest_sentences(
    examples: &[Example],
    emb: &Embedded<'_>,
    net: &Weights,
    weight: f32,
) -> Vec<Unit> {
    let mut out = Vec::new();
    for e in examples.iter().filter(|e| e.kind.is_some()) {
        let sents = sentences(&e.reply);
        if sents.len() < 2 {
            continue;
        }
        let c = emb.context(&e.context);
        let best = sents
            .iter()
            .map(|s| features(emb.get(s), &c))
            .max_by(|a, b| net.unsafe_p(a).total_cmp(&net.unsafe_p(b)))
            .expect("two sentences or more");
        out.push(Unit {
            x: best,
            class: class_of(e),
            weight,
        });
    }
    out
}

/// A seeded normal start for a [rows, cols] matrix, scaled by 1 / sqrt(cols) (LeCun).
fn start(rows: usize, cols: usize, rng: &mut rand_chacha::ChaCha8Rng) -> Vec<f32> {
    let n = Normal::new(0.0f32, 1.0 / (cols as f32).sqrt()).expect("a positive scale");
    (0..rows * cols).map(|_| n.sample(rng)).collect()
}

/// Fits the head on `units` with progress shown as `what`.
pub fn fit(units: &[Unit], s: &FitSettings, what: &str) -> Result<Weights> {
    let dev = Device::Cpu;
    let n = units.len();
    let x: Vec<f32> = units.iter().flat_map(|u| u.x.iter().copied()).collect();
    let x = Tensor::from_vec(x, (n, INPUT), &dev)?;
    let y = Tensor::from_vec(units.iter().map(|u| u.class).collect(), (n, 1), &dev)?;
    let total: f32 = units.iter().map(|u| u.weight).sum();
    let w = Tensor::from_vec(
        units.iter().map(|u| u.weight / total).collect(),
        (n, 1),
        &dev,
    )?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(s.seed);
    let h = s.hidden;
    let w1 = Var::from_vec(start(h, INPUT, &mut rng), (h, INPUT), &dev)?;
    let b1 = Var::zeros(h, DType::F32, &dev)?;
    let w2 = Var::from_vec(start(CLASSES, h, &mut rng), (CLASSES, h), &dev)?;
    let b2 = Var::zeros(CLASSES, DType::F32, &dev)?;
    let cfg = AdamWConfig {
        lr: s.lr,
        weight_decay: s.weight_decay,
        ..AdamWConfig::default()
    };
    let mut opt = AdamW::new(
        [
            ("w1".to_string(), w1.clone()),
            ("b1".to_string(), b1.clone()),
            ("w2".to_string(), w2.clone()),
            ("b2".to_string(), b2.clone()),
        ],
        cfg,
    )?;
    let bar = super::bar(s.epochs as u64, what);
    for _ in 0..s.epochs {
        let hidden = x.matmul(&w1.t()?)?.broadcast_add(&b1)?.relu()?;
        let logits = hidden.matmul(&w2.t()?)?.broadcast_add(&b2)?;
        let logp = candle_nn::ops::log_softmax(&logits, D::Minus1)?;
        let loss = (logp.gather(&y, 1)? * &w)?.sum_all()?.neg()?;
        let value = f64::from(loss.to_scalar::<f32>()?);
        opt.step(value, &loss.backward()?)?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    let flat = |v: &Var| -> Result<Vec<f32>> { Ok(v.as_tensor().flatten_all()?.to_vec1()?) };
    Ok(Weights {
        hidden: h,
        w1: flat(&w1)?,
        b1: flat(&b1)?,
        w2: flat(&w2)?,
        b2: flat(&b2)?,
    })
}

/// A reply's score: the largest unsafe probability over its sentences.
pub fn reply_score(e: &Example, emb: &Embedded<'_>, net: &Weights) -> f64 {
    let c = emb.context(&e.context);
    sentences(&e.reply)
        .iter()
        .map(|s| net.unsafe_p(&features(emb.get(s), &c)))
        .fold(0.0, f64::max)
}
