//! Fits the safety screen's head (`sim::detect::safety::head`): a one-hidden-layer classifier over
//! (sentence, context) embeddings, trained with the project's AdamW on the weighted cross-entropy,
//! full batch, from a seeded start, so one command with the same data gives the same weights.
//!
//! A reply labelled unsafe may hold one harmful sentence among warm ones, and the labels do not
//! say which. The fit reads this as multiple-instance learning: a first round learns from whole
//! replies and from every sentence of a safe reply (all of them are safe); a second round adds,
//! for each unsafe reply of several sentences, the sentence the first round scores most unsafe as
//! an example of the reply's kind, and fits again from the same start.

use crate::environment::sim::detect::safety::head::context_sentences;
use crate::environment::sim::detect::safety::head::{features, unsafe_p, CLASSES, INPUT};
use crate::environment::sim::detect::safety::sentences;
use crate::environment::sim::mlp::Mlp;
use crate::error::Result;
use crate::fit::corpora::Example;
use crate::fit::embedded::Embedded;
use crate::fit::train::{fit_mlp, FitSettings, Targets};

/// An example to fit on: its input, class (0 safe, 1 + the kind's index) and weight.
pub struct Unit {
    pub x: Vec<f32>,
    pub class: u32,
    pub weight: f32,
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
        1 + crate::environment::sim::detect::UnsafeKind::ALL
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
    net: &Mlp,
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
            .max_by(|a, b| unsafe_p(net, a).total_cmp(&unsafe_p(net, b)))
            .expect("two sentences or more");
        out.push(Unit {
            x: best,
            class: class_of(e),
            weight,
        });
    }
    out
}

/// Fits the head on `units` with progress shown as `what`.
pub fn fit(units: &[Unit], s: &FitSettings, what: &str) -> Result<Mlp> {
    let x: Vec<f32> = units.iter().flat_map(|u| u.x.iter().copied()).collect();
    let class: Vec<u32> = units.iter().map(|u| u.class).collect();
    let weight: Vec<f32> = units.iter().map(|u| u.weight).collect();
    let targets = Targets::Classes {
        class: &class,
        weight: &weight,
    };
    fit_mlp(&x, [INPUT, CLASSES], targets, s, what)
}

/// A reply's score: the largest unsafe probability over its sentences.
pub fn reply_score(e: &Example, emb: &Embedded<'_>, net: &Mlp) -> f64 {
    let c = emb.context(&e.context);
    sentences(&e.reply)
        .iter()
        .map(|s| unsafe_p(net, &features(emb.get(s), &c)))
        .fold(0.0, f64::max)
}
