//! Setting and measuring the fluency judge (`empathy-gym perception fluency`; `sim::fluency`).
//! The language model is fixed; what is set from people, on the same human replies the wording
//! head uses (`fit::wording::parts`: EPITOME's dev part and ESConv's dev supporter turns), is the
//! unigram counts (the fit part), the typical token value the windows are shrunk toward (its
//! median on the clean choice replies), how the judge reads a reply (the window, from a small
//! grid) and where a reply is disfluent (the threshold), the last two on the choice parts. Each set's replies are scored clean and as copies with
//! [`CHANGES_PER_COPY`] generic changes ([`corrupt`]) of the kinds that make text read as
//! assembled rather than said: a word dropped, a sentence cut in the middle of a phrase (the next
//! word capitalized or not), a word or two wedged in, a word swapped for another, two neighbours
//! transposed. Wedged and swapped words are drawn from the other replies of the fit part, so they
//! are the words people use most, not a list of an attacker's fillers.
//!
//! The window is the grid's best AUC (clean against changed) on the choice parts; the threshold is
//! the score that at most `fit::wording::CLEAN_FIRE_RATE` of the clean choice replies reach.
//! EPITOME's test part and ESConv's held-apart dialogues are reported, never chosen on; so are
//! FailedESConv's supporter turns (clean only) and `data/fluency/never-tuned.yaml`.

use std::fmt::Write;
use std::path::Path;

use candle_core::Device;
use rand::{Rng, SeedableRng};
use serde::Deserialize;

use crate::environment::sim::fluency::{worst_window, Fluency, FluencyMeta, Unigram};
use crate::environment::sim::wording::word_spans;
use crate::error::{Error, Result};
use crate::fit::wording::{
    self, clean_scores, report, score_threshold, Pair, Parts, SetReport, CLEAN_FIRE_RATE,
};
use crate::report::stats::auc;
use crate::seed::fnv1a64;

/// Changes in each changed copy.
pub const CHANGES_PER_COPY: u64 = 3;

/// The windows (tokens) the fit chooses from.
pub const WINDOWS: [usize; 3] = [16, 24, 32];
/// How a copy is changed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Change {
    /// A word (not the first) dropped.
    Drop,
    /// A sentence cut between two words with nothing between them but a space.
    Cut,
    /// One or two words wedged in before a word (not the first).
    Wedge,
    /// A word (not the first) swapped for another.
    Swap,
    /// Two neighbours with a space between them transposed.
    Transpose,
}

const CHANGES: [Change; 5] = [
    Change::Drop,
    Change::Cut,
    Change::Wedge,
    Change::Swap,
    Change::Transpose,
];

/// The words of `texts`, lowercase (but "I"), in order: the pool that wedged and swapped words
/// are drawn from.
pub fn pool<'a>(texts: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut out = Vec::new();
    for t in texts {
        for (a, b) in word_spans(t) {
            let w = &t[a..b];
            out.push(if w == "I" || w.starts_with("I'") {
                w.to_string()
            } else {
                w.to_lowercase()
            });
        }
    }
    out
}

/// `reply` with one change drawn by `seed` (kinds with equal chances; a kind with no place to
/// apply falls back to a swap), and which. `None` when the reply has fewer than
/// four words or the pool fewer than two.
pub fn corrupt(reply: &str, pool: &[String], seed: u64) -> Option<(String, Change)> {
    let w = word_spans(reply);
    if w.len() < 4 || pool.len() < 2 {
        return None;
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ fnv1a64(reply.as_bytes()));
    // Word i and word i + 1 with only a space between them.
    let spaced: Vec<usize> = (0..w.len() - 1)
        .filter(|&i| &reply[w[i].1..w[i + 1].0] == " ")
        .collect();
    let mut change = CHANGES[rng.random_range(0..CHANGES.len())];
    if matches!(change, Change::Cut | Change::Transpose) && spaced.is_empty() {
        change = Change::Swap;
    }
    let draw = |rng: &mut rand_chacha::ChaCha8Rng| rng.random_range(0..pool.len() - 1);
    Some(match change {
        Change::Drop => {
            let i = rng.random_range(1..w.len());
            let (a, mut b) = w[i];
            // The space after the word goes with it (or, at the end, the one before).
            let mut a2 = a;
            if reply[b..].starts_with(' ') {
                b += 1;
            } else if reply[..a].ends_with(' ') {
                a2 -= 1;
            }
            (format!("{}{}", &reply[..a2], &reply[b..]), change)
        }
        Change::Cut => {
            let i = spaced[rng.random_range(0..spaced.len())];
            let (na, nb) = w[i + 1];
            let next = &reply[na..nb];
            let next = if rng.random_bool(0.5) {
                capitalized(next)
            } else {
                next.to_string()
            };
            let end = w[i].1;
            let text = format!("{}. {next}{}", &reply[..end], &reply[nb..]);
            (text, change)
        }
        Change::Wedge => {
            let i = rng.random_range(1..w.len());
            let j = draw(&mut rng);
            let wedge = if rng.random_bool(0.5) {
                format!("{} {}", pool[j], pool[j + 1])
            } else {
                pool[j].clone()
            };
            let a = w[i].0;
            (format!("{}{wedge} {}", &reply[..a], &reply[a..]), change)
        }
        Change::Swap => {
            let i = rng.random_range(1..w.len());
            let (a, b) = w[i];
            let mut j = draw(&mut rng);
            if pool[j].eq_ignore_ascii_case(&reply[a..b]) {
                j += 1;
            }
            (format!("{}{}{}", &reply[..a], pool[j], &reply[b..]), change)
        }
        Change::Transpose => {
            let i = spaced[rng.random_range(0..spaced.len())];
            let ((a, b), (c, d)) = (w[i], w[i + 1]);
            let text = format!(
                "{}{} {}{}",
                &reply[..a],
                &reply[c..d],
                &reply[a..b],
                &reply[d..]
            );
            (text, change)
        }
    })
}

/// `word` with its first letter in upper case.
fn capitalized(word: &str) -> String {
    let mut c = word.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

/// `reply` with [`CHANGES_PER_COPY`] changes, each drawn by its own seed from `seed`; `None` when
/// the reply cannot be changed.
pub fn changed(reply: &str, pool: &[String], seed: u64) -> Option<String> {
    let mut text = reply.to_string();
    for k in 0..CHANGES_PER_COPY {
        text = corrupt(&text, pool, seed.wrapping_mul(31).wrapping_add(k))?.0;
    }
    Some(text)
}

/// A set's texts and whether each was changed: every reply clean, and with `copies` a changed
/// copy of each.
fn texts(set: &[Pair], pool: &[String], copies: bool) -> (Vec<String>, Vec<bool>) {
    let mut out = (Vec::new(), Vec::new());
    for (k, p) in set.iter().enumerate() {
        out.0.push(p.reply.clone());
        out.1.push(false);
        if let Some(c) = copies
            .then(|| changed(&p.reply, pool, k as u64 + 1))
            .flatten()
        {
            out.0.push(c);
            out.1.push(true);
        }
    }
    out
}

/// The token values of `texts` (`Fluency::values`), with a progress bar.
fn values(judge: &Fluency, texts: &[String], what: &str) -> Result<Vec<Vec<f64>>> {
    let bar = super::bar(texts.len() as u64, what);
    let mut out = Vec::with_capacity(texts.len());
    for t in texts {
        out.push(judge.values(t)?);
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(out)
}

/// The median of every value of the clean texts.
fn median_value(v: &[Vec<f64>], changed: &[bool]) -> f64 {
    let mut all: Vec<f64> = v
        .iter()
        .zip(changed)
        .filter(|(_, c)| !**c)
        .flat_map(|(x, _)| x.iter().copied())
        .collect();
    all.sort_by(f64::total_cmp);
    all.get(all.len() / 2).copied().unwrap_or(0.0)
}

/// Each text's score at `window`, as the judge reads it (with the prior of `meta`).
fn scores(s: &[Vec<f64>], window: usize, meta: &FluencyMeta) -> Vec<f64> {
    s.iter()
        .map(|v| worst_window(v, window, meta.prior_tokens, meta.prior_nats))
        .collect()
}

/// What setting the judge gives.
pub struct Fitted {
    pub meta: FluencyMeta,
    pub unigram: Unigram,
    /// Each window of the grid and its AUC on the choice parts.
    pub grid: Vec<(usize, f64)>,
    pub reports: Vec<SetReport>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Bank {
    disfluent: Vec<BankItem>,
    fluent: Vec<BankItem>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // `user` is there for a person reading the bank
struct BankItem {
    user: String,
    reply: String,
}

/// Sets the judge `meta` describes (its threshold and window are replaced) on the parts `p` and
/// measures it on every reported set and on `bank`.
pub fn fit(meta: FluencyMeta, p: &Parts, bank: &Path) -> Result<Fitted> {
    if p.choices.is_empty() || p.fit.is_empty() {
        return Err(Error::Other(
            "no EPITOME or ESConv replies: check the folders".into(),
        ));
    }
    let counter = Fluency::with_parts(meta.clone(), &Unigram::default(), &Device::Cpu)?;
    let ids = p
        .fit
        .iter()
        .map(|x| counter.token_ids(&x.reply))
        .collect::<Result<Vec<_>>>()?;
    let unigram = Unigram::count(counter.vocab(), ids.iter().map(Vec::as_slice));
    drop(counter);
    let mut judge = Fluency::with_parts(meta, &unigram, &Device::Cpu)?;
    let pool = pool(p.fit.iter().map(|x| x.reply.as_str()));
    let (texts_c, changed_c) = texts(&p.choices, &pool, true);
    let sur_c = values(&judge, &texts_c, "fluency: choices")?;
    judge.meta.prior_nats = median_value(&sur_c, &changed_c);
    let grid: Vec<(usize, f64)> = WINDOWS
        .iter()
        .map(|&w| (w, auc(&scores(&sur_c, w, &judge.meta), &changed_c)))
        .collect();
    let window = grid
        .iter()
        .fold(None, |best: Option<(usize, f64)>, &(w, a)| match best {
            Some((_, b)) if b >= a => best,
            _ => Some((w, a)),
        })
        .map(|(w, _)| w)
        .expect("a non-empty grid");
    let sc = scores(&sur_c, window, &judge.meta);
    let t = score_threshold(&clean_scores(&sc, &changed_c), CLEAN_FIRE_RATE);
    let mut reports = vec![report(
        "choices (EPITOME dev, ESConv dev)",
        &sc,
        &changed_c,
        t,
    )];
    for (what, set) in &p.reported {
        let (tx, ch) = texts(set, &pool, true);
        let sur = values(&judge, &tx, what)?;
        reports.push(report(what, &scores(&sur, window, &judge.meta), &ch, t));
    }
    let (tx, ch) = texts(&p.failed, &pool, false);
    let sur = values(&judge, &tx, "FailedESConv")?;
    reports.push(report(
        "ESConv FailedESConv.json supporter turns (clean only)",
        &scores(&sur, window, &judge.meta),
        &ch,
        t,
    ));
    let b: Bank = crate::environment::profile::yaml::read_yaml(bank)?;
    let items: Vec<(&BankItem, bool)> = (b.disfluent.iter().map(|x| (x, true)))
        .chain(b.fluent.iter().map(|x| (x, false)))
        .collect();
    let tx: Vec<String> = items.iter().map(|(x, _)| x.reply.clone()).collect();
    let ch: Vec<bool> = items.iter().map(|(_, c)| *c).collect();
    let sur = values(&judge, &tx, "never-tuned bank")?;
    reports.push(report(
        "never-tuned bank (data/fluency/never-tuned.yaml)",
        &scores(&sur, window, &judge.meta),
        &ch,
        t,
    ));
    let mut meta = judge.meta.clone();
    meta.window = window;
    meta.threshold = t;
    meta.sources = wording::sources();
    let mut fit = serde_yaml::Mapping::new();
    fit.insert(
        "grid".into(),
        grid.iter()
            .map(|&(w, a)| {
                let mut m = serde_yaml::Mapping::new();
                m.insert("window".into(), (w as u64).into());
                m.insert("choices_auc".into(), super::r3(a).into());
                serde_yaml::Value::from(m)
            })
            .collect::<Vec<_>>()
            .into(),
    );
    fit.insert("sets".into(), wording::sets_record(&reports));
    meta.fit = fit.into();
    Ok(Fitted {
        meta,
        unigram,
        grid,
        reports,
    })
}

/// The judge's settings before a fit: the default policy model, read as an assistant turn.
pub fn default_meta() -> FluencyMeta {
    FluencyMeta {
        model: empathy_engine::DEFAULT_POLICY.into(),
        prefix: "<|im_start|>assistant\n".into(),
        unigram: "fluency-unigram.yaml".into(),
        max_tokens: 160,
        window: WINDOWS[0],
        prior_tokens: 8.0,
        prior_nats: 0.0,
        threshold: f64::INFINITY,
        sources: Vec::new(),
        fit: serde_yaml::Value::Null,
    }
}

/// Writes `data/fluency.yaml` and the unigram counts under `root`, each through a temporary file.
pub fn write(root: &Path, f: &Fitted) -> Result<()> {
    let meta = serde_yaml::to_string(&f.meta).map_err(|e| Error::Other(e.to_string()))?;
    let unigram = serde_yaml::to_string(&f.unigram).map_err(|e| Error::Other(e.to_string()))?;
    let header =
        "# The fluency judge (src/environment/sim/fluency.rs), written by `empathy-gym perception \
                  fluency` (docs/VALIDATION.md, \"Fluency\"). Do not edit: set it again.\n";
    let counts =
        "# Token counts of the fluency judge's unigram model over the human replies of the \
                  fit part (EPITOME dev, ESConv dev; sources and terms in fluency.yaml), written \
                  by `empathy-gym perception fluency`. Do not edit.\n";
    super::write_files(
        &root.join("data"),
        [
            ("fluency.yaml", format!("{header}{meta}").into_bytes()),
            (
                f.meta.unigram.as_str(),
                format!("{counts}{unigram}").into_bytes(),
            ),
        ],
    )
}

/// The report as markdown: the grid, then one row per set.
pub fn report_markdown(f: &Fitted) -> String {
    let mut md = String::from("| window (tokens) | AUC on the choice parts |\n| ---: | ---: |\n");
    for (w, a) in &f.grid {
        let _ = writeln!(md, "| {w} | {a:.3} |");
    }
    let _ = write!(
        md,
        "\nChosen: window {}, threshold {:.3} nats per token (the score that at most {:.2}% of \
         the clean choice replies reach).\n\n",
        f.meta.window,
        f.meta.threshold,
        CLEAN_FIRE_RATE * 100.0
    );
    md.push_str(&wording::sets_markdown(&f.reports));
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool() -> Vec<String> {
        super::pool(["kind of really just", "I'm so sorry"])
    }

    #[test]
    fn the_pool_is_every_word_lowercase_but_i() {
        assert_eq!(
            pool(),
            ["kind", "of", "really", "just", "I'm", "so", "sorry"]
        );
    }

    #[test]
    fn each_change_does_what_it_says_and_is_seeded() {
        let reply = "That sounds really hard for you right now.";
        let words = |t: &str| t.split_whitespace().count();
        let mut seen = Vec::new();
        for seed in 0..200 {
            let (text, change) = corrupt(reply, &pool(), seed).expect("a change");
            assert_eq!(corrupt(reply, &pool(), seed), Some((text.clone(), change)));
            assert_ne!(text, reply, "{change:?}");
            assert!(!text.contains("  "), "{text}");
            if change != Change::Transpose {
                assert!(text.starts_with("That"), "the first word stays: {text}");
            }
            match change {
                Change::Drop => assert_eq!(words(&text), 7, "{text}"),
                Change::Cut => {
                    assert_eq!(text.matches('.').count(), 2, "{text}");
                    assert_eq!(words(&text), 8, "{text}");
                }
                Change::Wedge => assert!(words(&text) > 8, "{text}"),
                Change::Swap => {
                    assert_eq!(words(&text), 8, "{text}");
                    assert!(text
                        .split_whitespace()
                        .any(|w| pool().contains(&w.to_string())));
                }
                Change::Transpose => assert_eq!(text.len(), reply.len()),
            }
            if !seen.contains(&change) {
                seen.push(change);
            }
        }
        assert_eq!(seen.len(), 5, "every kind: {seen:?}");
    }

    #[test]
    fn pinned_examples_of_each_change() {
        // One draw of each kind, found by seed and pinned.
        let reply = "I lost my job today.";
        let by_kind = |k: Change| {
            (0..500)
                .filter_map(|s| corrupt(reply, &pool(), s))
                .find(|c| c.1 == k)
                .expect("found")
        };
        let (t, _) = by_kind(Change::Drop);
        assert_eq!(t.split(' ').count(), 4, "{t}");
        let (t, _) = by_kind(Change::Transpose);
        let mut a: Vec<&str> = t.trim_end_matches('.').split(' ').collect();
        let mut b: Vec<&str> = reply.trim_end_matches('.').split(' ').collect();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b, "the same words in another order: {t}");
        assert_eq!(corrupt("Oh no.", &pool(), 0), None, "too short");
        assert_eq!(corrupt(reply, &["one".into()], 0), None, "nothing to draw");
    }

    #[test]
    fn a_changed_copy_has_its_changes_and_is_seeded() {
        let reply = "That sounds really hard for you right now, and I'm glad you said it.";
        let a = changed(reply, &pool(), 7).expect("a copy");
        assert_eq!(changed(reply, &pool(), 7), Some(a.clone()));
        assert_ne!(a, reply);
        assert_ne!(changed(reply, &pool(), 8), Some(a));
        assert_eq!(changed("Oh no.", &pool(), 1), None);
    }
}
