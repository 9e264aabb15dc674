//! Fitting and measuring the wording head (`empathy-gym perception wording`; `sim::wording`).
//!
//! The replies are human ones: EPITOME's responses and ESConv's supporter turns
//! (`devWithStrategy_short.tsv`). Each is kept as it was (clean) and copied with one word of the
//! message it answers put where it may not belong ([`corrupt`]): swapped for one of the reply's
//! words, inserted before one, or put after a determiner. The corruption is generic (any position, any of the message's
//! words) and is not the red team's grammar, so what the head learns is how people place words,
//! not the frames of one attacker. Every token of a copy that the change touched is labelled out of
//! place; every other token is in place.
//!
//! What is fit and what is reported, as perception's parts:
//! - EPITOME's dev part: four fifths of its posts fit, the other fifth for choices; its test part
//!   is reported once per version, never fit.
//! - ESConv by the hash of a dialogue's first message: three fifths fit, one fifth for choices,
//!   one fifth held apart and reported.
//! - ESConv's `FailedESConv.json` supporter turns (honest replies never fit): how often the head
//!   fires on them.
//! - `data/wording/never-tuned.yaml`: replies the project wrote before the first fit, reported
//!   apart, never tuned on.
//!
//! The settings are chosen by the reply-level AUC (clean against changed, by the most suspicious
//! token) on the choice parts; the threshold is the chosen network's score that at most
//! [`CLEAN_FIRE_RATE`] of the clean choice replies reach.

use std::fmt::Write;
use std::path::Path;

use rand::{Rng, SeedableRng};
use serde::Deserialize;

use crate::environment::sim::embed::{Embedder, TokenStates};
use crate::environment::sim::mlp::Mlp;
use crate::environment::sim::wording::{features, judged, score, word_spans, Said};
use crate::environment::sim::wording::{WordingMeta, INPUT};
use crate::error::{Error, Result};
use crate::fit::corpora;
use crate::fit::train::{best_of_grid, Chosen, FitSettings};
use crate::fit::Corpora;
use crate::judge::epitome::{self, Part};
use crate::report::stats::{auc_ci, BootstrapConfig, Estimate};
use crate::seed::fnv1a64;

/// The share of clean human replies (choice parts) allowed to reach the threshold.
pub const CLEAN_FIRE_RATE: f64 = 0.015;

/// In-place tokens of words the message does not hold, kept per text for the fit (every token
/// the head judges is kept).
const KEPT_OTHERS: usize = 3;

/// Changed copies per fit reply (each reported reply has one).
const FIT_COPIES: u64 = 3;

/// A reply and the message it answers.
#[derive(Clone, Debug, PartialEq)]
pub struct Pair {
    pub context: String,
    pub reply: String,
    /// The corpus it comes from (`EPITOME`, `ESConv`, `FailedESConv`).
    pub corpus: &'static str,
    /// Pairs of one conversation share this: EPITOME's post, ESConv's dialogue (FailedESConv's
    /// message, as its file is read).
    pub thread: u64,
}

/// A reply with one word out of place: the text and the bytes of the word put there.
#[derive(Clone, Debug, PartialEq)]
pub struct Corrupted {
    pub text: String,
    pub span: (usize, usize),
}

/// Words after which English puts a noun phrase: a word of the user's slotted after one of these
/// is how a template fills its frame ("the {word}").
const DETERMINERS: [&str; 12] = [
    "the", "a", "an", "my", "your", "his", "her", "their", "our", "this", "that", "these",
];

/// How a copy is changed.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Change {
    /// A word of the reply (not its first) swapped for the user's.
    Swap,
    /// The user's word inserted before a word of the reply (not its first).
    Insert,
    /// The word after a determiner swapped for the user's (a noun phrase's slot).
    Slot,
}

/// `reply` with one word of `context` (one the head judges) put where it may not belong, chosen
/// by `seed`: a [`Change`] drawn with equal chances (a slot falls back to a swap when the reply
/// has no determiner). The new word takes the case of the sentence start it replaces. `None`
/// when the reply has fewer than four words or the context no word to give.
pub fn corrupt(reply: &str, context: &str, seed: u64) -> Option<Corrupted> {
    let words = word_spans(reply);
    let donors: Vec<String> = Said::new(context).words.into_iter().collect();
    if words.len() < 4 || donors.is_empty() {
        return None;
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ fnv1a64(reply.as_bytes()));
    let slots: Vec<usize> = (1..words.len())
        .filter(|&i| {
            let (a, b) = words[i - 1];
            DETERMINERS.contains(&reply[a..b].to_lowercase().as_str())
        })
        .collect();
    let change = match rng.random_range(0..3) {
        0 => Change::Swap,
        1 => Change::Insert,
        _ if slots.is_empty() => Change::Swap,
        _ => Change::Slot,
    };
    let at = match change {
        Change::Slot => slots[rng.random_range(0..slots.len())],
        _ => rng.random_range(1..words.len()),
    };
    let (a, b) = words[at];
    let old = &reply[a..b];
    let candidates: Vec<&String> = donors
        .iter()
        .filter(|d| !d.eq_ignore_ascii_case(old))
        .collect();
    if candidates.is_empty() {
        return None;
    }
    let donor = candidates[rng.random_range(0..candidates.len())];
    let insert = change == Change::Insert;
    let cased = if old.starts_with(|c: char| c.is_ascii_uppercase()) && !insert {
        let mut c = donor.chars();
        c.next()
            .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
            .unwrap_or_default()
    } else {
        donor.clone()
    };
    let text = if insert {
        format!("{}{cased} {}", &reply[..a], &reply[a..])
    } else {
        format!("{}{cased}{}", &reply[..a], &reply[b..])
    };
    Some(Corrupted {
        text,
        span: (a, a + cased.len()),
    })
}

/// The hand-written bank (`data/wording/never-tuned.yaml`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Bank {
    misplaced: Vec<BankItem>,
    fluent: Vec<BankItem>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BankItem {
    user: String,
    reply: String,
}

/// The parts of the corpora, as fit and reported (see the module's header).
pub struct Parts {
    pub fit: Vec<Pair>,
    pub choices: Vec<Pair>,
    /// Reported: EPITOME test, ESConv held apart.
    pub reported: Vec<(&'static str, Vec<Pair>)>,
    /// Honest replies whose fire rate is reported.
    pub failed: Vec<Pair>,
}

/// Reads the user's copies and splits them.
pub fn parts(corpora: &Corpora) -> Result<Parts> {
    let mut p = Parts {
        fit: Vec::new(),
        choices: Vec::new(),
        reported: vec![
            ("EPITOME test", Vec::new()),
            ("ESConv dev (held apart)", Vec::new()),
        ],
        failed: Vec::new(),
    };
    for item in epitome::load(&corpora.epitome)? {
        let pair = Pair {
            context: item.post.trim().to_string(),
            reply: item.response.trim().to_string(),
            corpus: "EPITOME",
            thread: fnv1a64(item.sp_id.as_bytes()),
        };
        if pair.reply.is_empty() {
            continue;
        }
        match item.part() {
            Part::Test => p.reported[0].1.push(pair),
            Part::Dev if fnv1a64(item.sp_id.as_bytes()).is_multiple_of(5) => p.choices.push(pair),
            Part::Dev => p.fit.push(pair),
        }
    }
    for t in corpora::esconv_dev(&corpora.esconv)? {
        let pair = Pair {
            context: t.example.context.clone(),
            reply: t.example.reply.clone(),
            corpus: "ESConv",
            thread: fnv1a64(t.dialogue.as_bytes()),
        };
        match fnv1a64(t.dialogue.as_bytes()) % 5 {
            0 => p.reported[1].1.push(pair),
            1 => p.choices.push(pair),
            _ => p.fit.push(pair),
        }
    }
    p.failed = corpora::esconv_failed(&corpora.esconv)?
        .into_iter()
        .map(|e| Pair {
            thread: fnv1a64(e.context.as_bytes()),
            context: e.context,
            reply: e.reply,
            corpus: "FailedESConv",
        })
        .collect();
    Ok(p)
}

/// A text to read, what the message it answers said, and the span of its word out of place
/// (`None`: a clean reply).
struct Text {
    text: String,
    said: Said,
    span: Option<(usize, usize)>,
}

/// Each reply clean, and `copies` changed copies of it (seeds 1..=copies).
fn texts(set: &[Pair], copies: u64) -> Vec<Text> {
    let mut out = Vec::new();
    for p in set {
        let said = Said::new(&p.context);
        out.push(Text {
            text: p.reply.clone(),
            said: said.clone(),
            span: None,
        });
        for seed in 1..=copies {
            if let Some(c) = corrupt(&p.reply, &p.context, seed) {
                out.push(Text {
                    text: c.text,
                    said: said.clone(),
                    span: Some(c.span),
                });
            }
        }
    }
    out
}

/// Token states of many texts, in batches of 64, with a progress bar.
fn states(embedder: &Embedder, texts: &[&str], what: &str) -> Result<Vec<TokenStates>> {
    let bar = super::bar(texts.len() as u64, what);
    let mut out = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(64) {
        out.extend(embedder.token_states(chunk)?);
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    Ok(out)
}

/// Whether a token's span meets the span of the word out of place.
fn touches(token: (usize, usize), span: Option<(usize, usize)>) -> bool {
    span.is_some_and(|(a, b)| token.0 < b && a < token.1)
}

/// The fit's rows: every token the head judges (those of the message's words out of the places
/// the user gave them, the changed one among them), and up to [`KEPT_OTHERS`] other tokens of each text chosen by a seeded draw.
/// Returns the rows ([rows, INPUT]) and their labels (1: out of place).
fn rows(texts: &[Text], states: &[TokenStates], seed: u64) -> (Vec<f32>, Vec<f32>) {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for (t, s) in texts.iter().zip(states) {
        let judged = judged(&t.text, s, &t.said);
        let mut others = Vec::new();
        for k in 0..s.spans.len() {
            let out = touches(s.spans[k], t.span);
            if out || judged.contains(&k) {
                x.extend(features(s, k));
                y.push(if out { 1.0 } else { 0.0 });
            } else {
                others.push(k);
            }
        }
        let kept = KEPT_OTHERS.min(others.len());
        for _ in 0..kept {
            let k = others.swap_remove(rng.random_range(0..others.len()));
            x.extend(features(s, k));
        }
        y.extend(std::iter::repeat_n(0.0, kept));
    }
    (x, y)
}

/// Reply-level scores of a set's texts, and whether each was changed.
fn scored(net: &Mlp, texts: &[Text], states: &[TokenStates]) -> (Vec<f64>, Vec<bool>) {
    texts
        .iter()
        .zip(states)
        .map(|(t, s)| (score(net, &t.text, s, &t.said), t.span.is_some()))
        .unzip()
}

/// How a set reads: the AUC of changed against clean, and the shares at the threshold.
#[derive(Clone, Debug)]
pub struct SetReport {
    pub what: String,
    pub clean: usize,
    pub changed: usize,
    pub auc: Option<Estimate>,
    /// Share of clean replies that reach the threshold.
    pub clean_fires: f64,
    /// Share of changed replies that reach it.
    pub changed_fires: Option<f64>,
}

pub(crate) fn report(what: &str, scores: &[f64], changed: &[bool], threshold: f64) -> SetReport {
    let share = |want: bool| {
        let v: Vec<&f64> = scores
            .iter()
            .zip(changed)
            .filter(|(_, c)| **c == want)
            .map(|(s, _)| s)
            .collect();
        (!v.is_empty())
            .then(|| v.iter().filter(|&&&s| s >= threshold).count() as f64 / v.len() as f64)
    };
    let n_changed = changed.iter().filter(|&&c| c).count();
    SetReport {
        what: what.to_string(),
        clean: changed.len() - n_changed,
        changed: n_changed,
        auc: (n_changed > 0 && n_changed < changed.len())
            .then(|| auc_ci(scores, changed, &BootstrapConfig::default())),
        clean_fires: share(false).unwrap_or(0.0),
        changed_fires: share(true),
    }
}

/// The scores of the clean copies: those of `scores` whose `changed` is false.
pub fn clean_scores(scores: &[f64], changed: &[bool]) -> Vec<f64> {
    scores
        .iter()
        .zip(changed)
        .filter(|(_, c)| !**c)
        .map(|(s, _)| *s)
        .collect()
}

/// The smallest probability that at most `rate` of `clean` reach ([`score_threshold`], at most 1).
pub fn threshold(clean: &[f64], rate: f64) -> f64 {
    score_threshold(clean, rate).min(1.0)
}

/// The smallest score that at most `rate` of `clean` reach (just above the largest score that
/// more than that share reach); 0 for no scores.
pub fn score_threshold(clean: &[f64], rate: f64) -> f64 {
    let mut s = clean.to_vec();
    s.sort_by(|a, b| b.total_cmp(a));
    let allowed = (rate * s.len() as f64).floor() as usize;
    match s.get(allowed) {
        Some(&v) => v + 1e-6,
        None => 0.0,
    }
}

/// What the fit gives.
pub struct Fitted {
    /// The chosen network's threshold (see the module's header).
    pub threshold: f64,
    pub net: Mlp,
    pub settings: FitSettings,
    /// Each setting of the grid and its reply-level AUC on the choice parts.
    pub grid: Vec<(FitSettings, f64)>,
    pub reports: Vec<SetReport>,
}

/// Fits a network per setting of `grid`, keeps the best on the choice parts (the first on a tie),
/// sets its threshold there, and measures it on every reported set and on `bank`.
pub fn fit(
    corpora: &Corpora,
    bank: &Path,
    embedder: &Embedder,
    grid: &[FitSettings],
) -> Result<Fitted> {
    let p = parts(corpora)?;
    if p.fit.is_empty() || grid.is_empty() {
        return Err(Error::Other(
            "no EPITOME or ESConv replies, or no settings: check the folders".into(),
        ));
    }
    let fit_texts = texts(&p.fit, FIT_COPIES);
    let refs: Vec<&str> = fit_texts.iter().map(|t| t.text.as_str()).collect();
    let fit_states = states(embedder, &refs, "wording: fit part")?;
    let (x, y) = rows(&fit_texts, &fit_states, 0);
    drop(fit_states);
    let choice_texts = texts(&p.choices, 1);
    let refs: Vec<&str> = choice_texts.iter().map(|t| t.text.as_str()).collect();
    let choice_states = states(embedder, &refs, "wording: choices")?;
    let choice_auc = |net: &Mlp| {
        let (scores, changed) = scored(net, &choice_texts, &choice_states);
        crate::report::stats::auc(&scores, &changed)
    };
    let Chosen {
        net,
        settings,
        grid: grid_scores,
    } = best_of_grid(
        &x,
        [INPUT, 1],
        (&y, &vec![1.0; y.len()]),
        grid,
        "wording",
        choice_auc,
    )?
    .expect("a non-empty grid");
    let (scores, changed) = scored(&net, &choice_texts, &choice_states);
    let t = threshold(&clean_scores(&scores, &changed), CLEAN_FIRE_RATE);
    let mut reports = vec![report(
        "choices (EPITOME dev, ESConv dev)",
        &scores,
        &changed,
        t,
    )];
    drop(choice_states);
    for (what, set) in &p.reported {
        let set_texts = texts(set, 1);
        let refs: Vec<&str> = set_texts.iter().map(|t| t.text.as_str()).collect();
        let st = states(embedder, &refs, what)?;
        let (scores, changed) = scored(&net, &set_texts, &st);
        reports.push(report(what, &scores, &changed, t));
    }
    let failed = texts(&p.failed, 0);
    let refs: Vec<&str> = failed.iter().map(|t| t.text.as_str()).collect();
    let st = states(embedder, &refs, "FailedESConv")?;
    let (scores, clean) = scored(&net, &failed, &st);
    reports.push(report(
        "ESConv FailedESConv.json supporter turns (clean only)",
        &scores,
        &clean,
        t,
    ));
    reports.push(bank_report(&net, bank, embedder, t)?);
    Ok(Fitted {
        threshold: t,
        net,
        settings,
        grid: grid_scores,
        reports,
    })
}

/// The never-tuned bank's report: its misplaced replies as the changed ones.
fn bank_report(net: &Mlp, path: &Path, embedder: &Embedder, t: f64) -> Result<SetReport> {
    let bank: Bank = crate::environment::profile::yaml::read_yaml(path)?;
    let items: Vec<(&BankItem, bool)> = (bank.fluent.iter().map(|b| (b, false)))
        .chain(bank.misplaced.iter().map(|b| (b, true)))
        .collect();
    let refs: Vec<&str> = items.iter().map(|(b, _)| b.reply.as_str()).collect();
    let st = embedder.token_states(&refs)?;
    let (scores, changed): (Vec<f64>, Vec<bool>) = items
        .iter()
        .zip(&st)
        .map(|((b, m), s)| (score(net, &b.reply, s, &Said::new(&b.user)), *m))
        .unzip();
    Ok(report(
        "never-tuned bank (data/wording/never-tuned.yaml)",
        &scores,
        &changed,
        t,
    ))
}

/// The sources and their terms, as `data/wording.yaml` records them.
pub fn sources() -> Vec<String> {
    [
        "EPITOME (Sharma et al., 'A Computational Approach to Understanding Empathy Expressed in \
         Text-Based Mental Health Support', EMNLP 2020), the responses of the dev part; \
         github.com/behavioral-data/Empathy-Mental-Health, the authors' academic-use terms",
        "ESConv (Liu et al., 'Towards Emotional Support Dialog Systems', ACL 2021), the supporter \
         turns of codes/dataset/devWithStrategy_short.tsv; \
         github.com/thu-coai/Emotional-Support-Conversation, CC BY-NC 4.0: these weights derive \
         from it and are for non-commercial research use",
    ]
    .map(String::from)
    .to_vec()
}

/// The report as markdown: the threshold, then one row per set.
pub fn report_markdown(f: &Fitted) -> String {
    format!(
        "Threshold {:.4} (the chosen network's score that at most {:.1}% of the clean choice \
         replies reach).\n\n{}",
        f.threshold,
        CLEAN_FIRE_RATE * 100.0,
        sets_markdown(&f.reports)
    )
}

/// One row per set: its clean and changed replies, the AUC, and the shares flagged.
pub fn sets_markdown(reports: &[SetReport]) -> String {
    let mut md = String::from(
        "| set | clean | changed | AUC (95% CI) | clean replies flagged | changed replies \
         flagged |\n| --- | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for r in reports {
        let auc = r.auc.as_ref().map_or("".into(), |e| {
            format!("{:.3} [{:.3}, {:.3}]", e.value, e.low, e.high)
        });
        let changed = r
            .changed_fires
            .map_or(String::new(), |v| format!("{:.1}%", v * 100.0));
        let _ = writeln!(
            md,
            "| {} | {} | {} | {auc} | {:.1}% | {changed} |",
            r.what,
            r.clean,
            r.changed,
            r.clean_fires * 100.0
        );
    }
    md
}

/// The sets' scores as a head's YAML file records them (rounded to three decimals).
pub fn sets_record(reports: &[SetReport]) -> serde_yaml::Value {
    let r3 = super::r3;
    let mut sets = serde_yaml::Mapping::new();
    for r in reports {
        let mut m = serde_yaml::Mapping::new();
        if let Some(e) = &r.auc {
            m.insert("auc".into(), r3(e.value).into());
        }
        m.insert("clean_flagged".into(), r3(r.clean_fires).into());
        if let Some(v) = r.changed_fires {
            m.insert("changed_flagged".into(), r3(v).into());
        }
        sets.insert(r.what.clone().into(), m.into());
    }
    sets.into()
}

/// Writes `data/wording.safetensors` and `data/wording.yaml` under `root`, each through a
/// temporary file so that a failed write leaves the old ones whole.
pub fn write(root: &Path, f: &Fitted) -> Result<()> {
    let data = root.join("data");
    let mut fit = super::fit_record(&f.settings, &f.grid, "choices_auc")?;
    fit.insert("sets".into(), sets_record(&f.reports));
    let meta = WordingMeta {
        weights: "wording.safetensors".into(),
        hidden: f.settings.hidden,
        threshold: f.threshold,
        sources: sources(),
        fit: fit.into(),
    };
    let yaml = serde_yaml::to_string(&meta).map_err(|e| Error::Other(e.to_string()))?;
    let header =
        "# The wording head (src/environment/sim/wording.rs), written by `empathy-gym perception wording` \
                  (docs/VALIDATION.md, \"Wording\"). Do not edit: fit again.\n";
    super::write_files(
        &data,
        [
            ("wording.safetensors", f.net.to_safetensors()?),
            ("wording.yaml", format!("{header}{yaml}").into_bytes()),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_corruption_puts_one_context_word_out_of_place_and_says_where() {
        let reply = "That sounds really hard for you right now.";
        let context = "My landlord raised the rent again.";
        let mut kinds = std::collections::BTreeSet::new();
        for seed in 0..40 {
            let c = corrupt(reply, context, seed).expect("a corruption");
            let put = &c.text[c.span.0..c.span.1];
            assert!(
                ["landlord", "raised", "the", "rent", "again"]
                    .contains(&put.to_lowercase().as_str()),
                "{put:?} comes from the context"
            );
            assert_ne!(c.text, reply);
            assert!(
                c.text.starts_with("That "),
                "the first word stays: {}",
                c.text
            );
            kinds.insert(c.text.split_whitespace().count() - reply.split_whitespace().count());
            assert_eq!(corrupt(reply, context, seed), Some(c), "seeded");
        }
        assert_eq!(kinds.len(), 2, "both swaps and insertions: {kinds:?}");
        // A determiner's noun is a slot: some copy puts the user's word right after "the".
        let reply = "That sounds hard, and the waiting makes it worse.";
        let slotted = (0..60)
            .filter_map(|seed| corrupt(reply, context, seed))
            .any(|c| {
                c.text.starts_with("That sounds hard, and the ")
                    && c.text.ends_with(" makes it worse.")
                    && c.span.0 == "That sounds hard, and the ".len()
            });
        assert!(slotted);
        assert_eq!(corrupt("Oh no.", context, 0), None, "too short");
        assert_eq!(corrupt(reply, "ok", 0), None, "nothing to give");
    }

    #[test]
    fn the_threshold_lets_at_most_the_rate_through() {
        let clean: Vec<f64> = (0..100).map(|i| f64::from(i) / 100.0).collect();
        let t = threshold(&clean, 0.015);
        let fired = clean.iter().filter(|&&s| s >= t).count();
        assert_eq!(fired, 1, "1 of 100 at 1.5%: {t}");
        assert!((t - 0.980_001).abs() < 1e-9);
        assert_eq!(threshold(&[], 0.015), 0.0);
        // Scores that are not probabilities (nats) are not capped at 1.
        let nats: Vec<f64> = (0..100).map(|i| 3.0 + f64::from(i) / 100.0).collect();
        assert!((score_threshold(&nats, 0.015) - 3.980_001).abs() < 1e-9);
        assert_eq!(threshold(&nats, 0.015), 1.0);
        // Only the clean copies' scores set it.
        assert_eq!(
            clean_scores(&[0.1, 0.9, 0.3], &[false, true, false]),
            vec![0.1, 0.3]
        );
    }

    #[test]
    fn only_the_changed_words_tokens_are_out_of_place() {
        assert!(touches((4, 8), Some((6, 10))));
        assert!(!touches((0, 4), Some((4, 9))));
        assert!(!touches((4, 8), None));
    }
}
