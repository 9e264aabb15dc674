//! Fitting and measuring the responsiveness head (`empathy-gym perception responsive`;
//! `sim::responsive`).
//!
//! The pairs are human ones, split as the wording head's ([`wording::parts`]): EPITOME's (post,
//! response) pairs and ESConv's (seeker turn, supporter turn) pairs. Each reply is read without
//! its message's content words. It is a positive after its own message and a negative after the
//! message of another pair of the same corpus, drawn by a seeded shuffle, so that the head cannot
//! tell the two apart by a corpus's style and its log-odds estimate the mutual information of
//! message and reply.
//!
//! What is fit and what is reported: the fit part fits; the settings are chosen by the AUC (own
//! message against another's) on the choice parts; `EPITOME test`, `ESConv dev (held apart)`,
//! FailedESConv's supporter turns and `data/responsive/never-tuned.yaml` (pairs the project wrote
//! before the first fit: specific replies against generic ones to the same message) are reported,
//! never chosen on. Beside each AUC stands the cosine of the same embeddings, the reading the head
//! replaces.

use std::fmt::Write;
use std::path::Path;
use std::sync::Arc;

use rand::SeedableRng;
use serde::Deserialize;

use crate::environment::sim::embed::{cosine, Embedder, Embedding};
use crate::environment::sim::lexicon::Lexicon;
use crate::environment::sim::mlp::Mlp;
use crate::environment::sim::responsive::{
    features, own_words, probability, responsiveness, ResponsiveMeta, INPUT,
};
use crate::error::{Error, Result};
use crate::fit::embedded::Embedded;
use crate::fit::train::{best_of_grid, Chosen, FitSettings};
use crate::fit::wording::{parts, Pair};
use crate::fit::Corpora;
use crate::report::stats::{auc, auc_ci, BootstrapConfig, Estimate};

/// A set's messages and replies as the head reads them.
struct Read {
    /// Each pair's message.
    message: Vec<Arc<Embedding>>,
    /// Each pair's reply without its message's content words.
    own: Vec<Arc<Embedding>>,
    /// Each pair's negative: the message its reply is put after ([`others`]).
    other: Vec<Arc<Embedding>>,
}

/// The share of a corpus's messages (other conversations) nearest a message that its negative is
/// drawn from: about one kind of trouble among the corpora's ten or so (ESConv's problem types).
pub const NEAREST_SHARE: f64 = 0.1;

/// For each pair, the pair whose message its reply is put after as a negative: one drawn by a
/// seeded generator from the [`NEAREST_SHARE`] of messages closest to its own (cosine of
/// `messages`) among the pairs of the same corpus in other conversations, the same text left out
/// (at least one). A stock line of
/// comfort fits a message about a similar trouble as well as its own; what only its own message
/// makes likely is what this person said. `None` where no other conversation's message exists.
pub fn others(set: &[Pair], messages: &[Arc<Embedding>], seed: u64) -> Vec<Option<usize>> {
    use rand::Rng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..set.len())
        .map(|i| {
            let mut near: Vec<(f32, usize)> = (0..set.len())
                .filter(|&j| {
                    set[j].corpus == set[i].corpus
                        && set[j].thread != set[i].thread
                        && set[j].context != set[i].context
                })
                .map(|j| (cosine(&messages[i], &messages[j]), j))
                .collect();
            near.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let keep = ((near.len() as f64 * NEAREST_SHARE).ceil() as usize).max(1);
            near.truncate(keep);
            (!near.is_empty()).then(|| near[rng.random_range(0..near.len())].1)
        })
        .collect()
}

/// Embeds a set's messages and own words ([`Embedded`]: each text once, with a progress bar) and
/// draws each pair's negative ([`others`]); pairs with none are left out.
fn read(embedder: &Embedder, set: &[Pair], lexicon: &Lexicon, what: &str) -> Result<Read> {
    let owns: Vec<String> = set
        .iter()
        .map(|p| {
            own_words(
                &p.reply,
                [p.context.as_str()],
                &lexicon.stopwords,
                &lexicon.feelings,
            )
        })
        .collect();
    let mut emb = Embedded::new(embedder);
    let texts: Vec<&str> = (set.iter().map(|p| p.context.as_str()))
        .chain(owns.iter().map(String::as_str))
        .collect();
    emb.add(&texts, what)?;
    let message: Vec<Arc<Embedding>> = set.iter().map(|p| emb.shared(&p.context)).collect();
    let drawn = others(set, &message, 0);
    let kept: Vec<usize> = (0..set.len()).filter(|&i| drawn[i].is_some()).collect();
    Ok(Read {
        own: kept.iter().map(|&i| emb.shared(&owns[i])).collect(),
        other: kept
            .iter()
            .map(|&i| message[drawn[i].unwrap_or(i)].clone())
            .collect(),
        message: kept.iter().map(|&i| message[i].clone()).collect(),
    })
}

/// The fit's rows: each pair's own words after its message (1) and after its other's (0).
fn rows(r: &Read) -> (Vec<f32>, Vec<f32>) {
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for (i, own) in r.own.iter().enumerate() {
        x.extend(features(&r.message[i], own));
        y.push(1.0);
        x.extend(features(&r.other[i], own));
        y.push(0.0);
    }
    (x, y)
}

/// The head's probabilities (own message first, then another's, per pair) and the labels.
fn scored(net: &Mlp, r: &Read) -> (Vec<f64>, Vec<bool>) {
    let mut out = (Vec::new(), Vec::new());
    for (i, own) in r.own.iter().enumerate() {
        for (m, label) in [(&r.message[i], true), (&r.other[i], false)] {
            out.0.push(probability(net, m, own));
            out.1.push(label);
        }
    }
    out
}

/// The cosines of the same pairs, as [`scored`] orders them.
fn cosines(r: &Read) -> Vec<f64> {
    let mut out = Vec::new();
    for (i, own) in r.own.iter().enumerate() {
        out.push(f64::from(cosine(&r.message[i], own)));
        out.push(f64::from(cosine(&r.other[i], own)));
    }
    out
}

/// How a set reads.
#[derive(Clone, Debug)]
pub struct SetReport {
    pub what: String,
    pub pairs: usize,
    /// Own message against another's, by the head.
    pub auc: Estimate,
    /// The same by the cosine of the embeddings.
    pub cosine_auc: f64,
    /// The median responsiveness of the replies after their own message.
    pub median: f64,
    /// The share of replies after their own message that read at even odds or below
    /// (responsiveness 0).
    pub own_at_zero: f64,
    /// The share of replies after another's message that read at responsiveness 0.5 or more.
    pub other_at_half: f64,
    /// Quantiles of the cosine (the reading without the head): replies after their own message
    /// (quarter, median, three quarters) and after another's (median, 90th percentile).
    pub own_cosine: [f64; 3],
    pub other_cosine: [f64; 2],
}

/// The `q` quantile of `v` (the value at rank `floor(q * (n - 1))`; 0 for none).
fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[(q * (v.len() - 1) as f64).floor() as usize]
}

/// The report of `scores` (as [`scored`] orders them) and their cosines.
pub fn report(what: &str, scores: &[f64], labels: &[bool], cos: &[f64]) -> SetReport {
    let resp = |want: bool| -> Vec<f64> {
        scores
            .iter()
            .zip(labels)
            .filter(|(_, l)| **l == want)
            .map(|(p, _)| responsiveness(*p))
            .collect()
    };
    let (own, other) = (resp(true), resp(false));
    let cos_of = |want: bool| -> Vec<f64> {
        cos.iter()
            .zip(labels)
            .filter(|(_, l)| **l == want)
            .map(|(c, _)| *c)
            .collect()
    };
    let q = |want: bool, at: f64| quantile(cos_of(want), at);
    let share = |v: &[f64], f: &dyn Fn(f64) -> bool| {
        v.iter().filter(|&&x| f(x)).count() as f64 / v.len().max(1) as f64
    };
    SetReport {
        what: what.to_string(),
        pairs: own.len(),
        auc: auc_ci(scores, labels, &BootstrapConfig::default()),
        cosine_auc: auc(cos, labels),
        own_at_zero: share(&own, &|x| x <= 0.0),
        other_at_half: share(&other, &|x| x >= 0.5),
        own_cosine: [q(true, 0.25), q(true, 0.5), q(true, 0.75)],
        other_cosine: [q(false, 0.5), q(false, 0.9)],
        median: quantile(own, 0.5),
    }
}

/// The never-tuned bank (`data/responsive/never-tuned.yaml`): per message, replies that answer
/// it and replies that could follow anything.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Bank {
    items: Vec<BankItem>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BankItem {
    user: String,
    specific: Vec<String>,
    generic: Vec<String>,
}

/// The bank's report: its specific replies as the positives, its generic ones as the negatives,
/// each after its own message (the cosine column reads the same pairs).
fn bank_report(
    net: &Mlp,
    path: &Path,
    embedder: &Embedder,
    lexicon: &Lexicon,
) -> Result<SetReport> {
    let bank: Bank = crate::environment::profile::yaml::read_yaml(path)?;
    let (mut scores, mut labels, mut cos) = (Vec::new(), Vec::new(), Vec::new());
    for item in &bank.items {
        let message = embedder.embed(&[item.user.as_str()])?.remove(0);
        let replies = (item.specific.iter().map(|r| (r, true)))
            .chain(item.generic.iter().map(|r| (r, false)));
        for (reply, specific) in replies {
            let own = embedder
                .embed(&[own_words(
                    reply,
                    [item.user.as_str()],
                    &lexicon.stopwords,
                    &lexicon.feelings,
                )
                .as_str()])?
                .remove(0);
            scores.push(probability(net, &message, &own));
            cos.push(f64::from(cosine(&message, &own)));
            labels.push(specific);
        }
    }
    let mut r = report(
        "never-tuned bank (data/responsive/never-tuned.yaml): specific against generic",
        &scores,
        &labels,
        &cos,
    );
    r.pairs = bank.items.len();
    Ok(r)
}

/// What the fit gives: the network chosen by the AUC on the choice parts, and its reports.
pub struct Fitted {
    pub chosen: Chosen,
    pub reports: Vec<SetReport>,
}

/// Fits a network per setting of `grid`, keeps the best by the AUC on the choice parts (the first
/// on a tie), and measures it on every reported set and on `bank`.
pub fn fit(
    corpora: &Corpora,
    lexicon: &Lexicon,
    bank: &Path,
    embedder: &Embedder,
    grid: &[FitSettings],
) -> Result<Fitted> {
    let p = parts(corpora)?;
    if p.fit.is_empty() || grid.is_empty() {
        return Err(Error::Other(
            "no EPITOME or ESConv pairs, or no settings: check the folders".into(),
        ));
    }
    let fit_read = read(embedder, &p.fit, lexicon, "responsive: fit part")?;
    let (x, y) = rows(&fit_read);
    drop(fit_read);
    let choices = read(embedder, &p.choices, lexicon, "responsive: choices")?;
    let choice_auc = |net: &Mlp| {
        let (scores, labels) = scored(net, &choices);
        auc(&scores, &labels)
    };
    let chosen = best_of_grid(
        &x,
        [INPUT, 1],
        (&y, &vec![1.0; y.len()]),
        grid,
        "responsive",
        choice_auc,
    )?
    .expect("a non-empty grid");
    let net = &chosen.net;
    let (scores, labels) = scored(net, &choices);
    let mut reports = vec![report(
        "choices (EPITOME dev, ESConv dev)",
        &scores,
        &labels,
        &cosines(&choices),
    )];
    let mut reported = p.reported;
    reported.push(("ESConv FailedESConv.json", p.failed));
    for (what, set) in &reported {
        let r = read(embedder, set, lexicon, what)?;
        let (scores, labels) = scored(net, &r);
        reports.push(report(what, &scores, &labels, &cosines(&r)));
    }
    reports.push(bank_report(net, bank, embedder, lexicon)?);
    Ok(Fitted { chosen, reports })
}

/// One row per set.
pub fn report_markdown(reports: &[SetReport]) -> String {
    let mut md = String::from(
        "| set | pairs | AUC, the head (95% CI) | AUC, the cosine | median responsiveness, own \
         message | own message at even odds or below | another's message at 0.5 or more | \
         cosine, own message (quartiles) | cosine, another's (median, 90th percentile) |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for r in reports {
        let _ = writeln!(
            md,
            "| {} | {} | {:.3} [{:.3}, {:.3}] | {:.3} | {:.2} | {:.1}% | {:.1}% | {:.2} / {:.2} / \
             {:.2} | {:.2} / {:.2} |",
            r.what,
            r.pairs,
            r.auc.value,
            r.auc.low,
            r.auc.high,
            r.cosine_auc,
            r.median,
            r.own_at_zero * 100.0,
            r.other_at_half * 100.0,
            r.own_cosine[0],
            r.own_cosine[1],
            r.own_cosine[2],
            r.other_cosine[0],
            r.other_cosine[1],
        );
    }
    md
}

/// Writes `data/responsive.safetensors` and `data/responsive.yaml` under `root`, each through a
/// temporary file so that a failed write leaves the old ones whole.
pub fn write(root: &Path, f: &Fitted) -> Result<()> {
    let r3 = super::r3;
    let c = &f.chosen;
    let mut fit = super::fit_record(&c.settings, &c.grid, "choices_auc")?;
    let mut sets = serde_yaml::Mapping::new();
    for r in &f.reports {
        let mut m = serde_yaml::Mapping::new();
        m.insert("auc".into(), r3(r.auc.value).into());
        m.insert("cosine_auc".into(), r3(r.cosine_auc).into());
        m.insert("own_at_zero".into(), r3(r.own_at_zero).into());
        sets.insert(r.what.clone().into(), m.into());
    }
    fit.insert("sets".into(), sets.into());
    let meta = ResponsiveMeta {
        weights: "responsive.safetensors".into(),
        hidden: c.settings.hidden,
        sources: super::wording::sources(),
        fit: fit.into(),
    };
    let yaml = serde_yaml::to_string(&meta).map_err(|e| Error::Other(e.to_string()))?;
    let header = "# The responsiveness head (src/environment/sim/responsive.rs), written by \
                  `empathy-gym perception responsive` (docs/VALIDATION.md, \"Responsiveness\"). \
                  Do not edit: fit again.\n";
    super::write_files(
        &root.join("data"),
        [
            ("responsive.safetensors", c.net.to_safetensors()?),
            ("responsive.yaml", format!("{header}{yaml}").into_bytes()),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(context: &str, corpus: &'static str, thread: u64) -> Pair {
        Pair {
            context: context.into(),
            reply: format!("reply to {context}"),
            corpus,
            thread,
        }
    }

    #[test]
    fn a_negative_is_a_near_message_of_another_conversation_of_the_corpus() {
        let set = vec![
            pair("a", "EPITOME", 1),
            pair("b", "EPITOME", 1),
            pair("c", "EPITOME", 2),
            pair("a", "EPITOME", 3),
            pair("x", "ESConv", 4),
            pair("y", "ESConv", 5),
            pair("z", "FailedESConv", 6),
        ];
        let e = |v: [f32; 2]| Arc::new(v.to_vec());
        let messages = vec![
            e([1.0, 0.0]),
            e([0.9, 0.1]),
            e([0.0, 1.0]),
            e([1.0, 0.0]),
            e([1.0, 0.0]),
            e([0.0, 1.0]),
            e([1.0, 0.0]),
        ];
        let o = others(&set, &messages, 7);
        // "a" (thread 1): not "b" (its own thread) nor the other "a" (the same text): only "c".
        assert_eq!(o[0], Some(2));
        // "c" (thread 2): of "a", "b" and the other "a", the nearest (a tenth, at least one).
        assert_eq!(o[2], Some(1));
        assert_eq!(o[4], Some(5));
        assert_eq!(o[5], Some(4));
        assert_eq!(o[6], None, "alone in its corpus");
        assert_eq!(others(&set, &messages, 7), o, "seeded");
    }

    #[test]
    fn the_report_reads_responsiveness_from_the_probabilities() {
        // Own messages at 0.9 and 0.5, others at 0.8 and 0.1.
        let scores = [0.9, 0.8, 0.5, 0.1];
        let labels = [true, false, true, false];
        let r = report("t", &scores, &labels, &[0.5, 0.4, 0.3, 0.2]);
        assert_eq!(r.pairs, 2);
        assert!((r.auc.value - 0.75).abs() < 1e-9);
        assert!((r.cosine_auc - 0.75).abs() < 1e-9);
        assert_eq!(r.own_at_zero, 0.5);
        assert_eq!(r.other_at_half, 0.5);
        assert_eq!(r.median, 0.0, "the lower middle of two");
        assert_eq!(r.own_cosine, [0.3, 0.3, 0.3]);
        assert_eq!(r.other_cosine, [0.2, 0.2]);
    }
}
