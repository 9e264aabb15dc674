//! `empathy-gym safety eval`: the whole screen (rules and head) measured on what it was never fit
//! or tuned on, as one markdown report headed by the version it measured.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use crate::environment::sim::detect::safety::head::context_sentences;
use crate::environment::sim::detect::{SafetyScreen, UnsafeFinding, UnsafeKind};
use crate::error::Result;
use crate::fit::corpora::{self as data, Example};
use crate::fit::Corpora;

/// The screen's finding on one example.
pub fn screen_one(screen: &SafetyScreen, e: &Example) -> Result<Option<UnsafeFinding>> {
    screen.screen(&context_sentences(&e.context), &e.reply)
}

/// Findings for a set, with a progress bar.
pub fn screen_all(
    screen: &SafetyScreen,
    set: &[Example],
    what: &str,
) -> Result<Vec<Option<UnsafeFinding>>> {
    let bar = crate::fit::bar(set.len() as u64, what);
    let out = set
        .iter()
        .map(|e| {
            bar.inc(1);
            screen_one(screen, e)
        })
        .collect();
    bar.finish_and_clear();
    out
}

fn pct(a: usize, n: usize) -> String {
    if n == 0 {
        "-".into()
    } else {
        format!("{:.1}%", 100.0 * a as f64 / n as f64)
    }
}

/// Per category of a bank: replies, flagged, flagged with the right category.
fn bank_table(out: &mut String, set: &[Example], found: &[Option<UnsafeFinding>]) {
    let mut rows: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
    for (e, f) in set.iter().zip(found) {
        let name = e.kind.map_or("safe", UnsafeKind::as_str);
        let r = rows.entry(name).or_default();
        r.0 += 1;
        r.1 += usize::from(f.is_some());
        r.2 += usize::from(f.as_ref().is_some_and(|f| Some(f.kind) == e.kind));
    }
    out.push_str("| category | replies | flagged | right category |\n|---|---:|---:|---:|\n");
    let (mut n, mut flagged) = (0, 0);
    for (name, (count, f, right)) in &rows {
        let right = if *name == "safe" {
            "-".into()
        } else {
            pct(*right, *count)
        };
        let _ = writeln!(out, "| {name} | {count} | {} | {right} |", pct(*f, *count));
        if *name != "safe" {
            n += count;
            flagged += f;
        }
    }
    let _ = writeln!(out, "| all unsafe | {n} | {} | |", pct(flagged, n));
    let hidden: Vec<bool> = set
        .iter()
        .zip(found)
        .filter(|(e, _)| e.hidden)
        .map(|(_, f)| f.is_some())
        .collect();
    if !hidden.is_empty() {
        let f = hidden.iter().filter(|&&h| h).count();
        let _ = writeln!(
            out,
            "| of which one harmful sentence in a warm reply | {} | {} | |",
            hidden.len(),
            pct(f, hidden.len())
        );
    }
    out.push('\n');
}

/// Lists up to `most` flagged honest replies.
fn flagged_examples(
    out: &mut String,
    set: &[Example],
    found: &[Option<UnsafeFinding>],
    most: usize,
) {
    for (e, f) in set
        .iter()
        .zip(found)
        .filter(|(_, f)| f.is_some())
        .take(most)
    {
        let f = f.as_ref().expect("filtered");
        let reply: String = e.reply.chars().take(160).collect();
        let _ = writeln!(
            out,
            "- `{}` ({}): \"{}\"",
            f.kind.as_str(),
            by(f),
            reply.replace('\n', " ")
        );
    }
    out.push('\n');
}

fn by(f: &UnsafeFinding) -> String {
    match f.score {
        Some(s) => format!("head {s:.3}"),
        None => format!("rule \"{}\"", f.phrase),
    }
}

/// The report: banks, honest human replies and DiaSafety's test part.
pub fn evaluate(
    root: &Path,
    corpora: &Corpora,
    screen: &SafetyScreen,
    version: &str,
) -> Result<String> {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# The safety screen, measured\n\nVersion: {version} (the fingerprint of data/safety.yaml \
         and the head). Command: `empathy-gym safety eval` (docs/VALIDATION.md, \"The safety \
         screen\"). Threshold {:.4}. A reply counts as flagged when the whole screen (rules, then \
         head) ends the dialogue; each sentence is read in the context of the user's message. \
         The learned head is {} (`use_head` in data/safety.yaml).\n",
        screen.head().meta.threshold,
        if screen.uses_head() { "on" } else { "off" }
    );
    for (file, title) in [
        (
            "heldout.yaml",
            "The never-tuned bank (written before tuning, never fit or tuned on)",
        ),
        (
            "heldout-2.yaml",
            "The second never-tuned bank (written before any language-model head was tried, \
             never fit or tuned on)",
        ),
        (
            "safe-messaging.yaml",
            "Safe messaging the project writes (never fit or tuned on)",
        ),
        (
            "bank.yaml",
            "The tuning bank (four fifths fit, one fifth for choices: not a test)",
        ),
    ] {
        let set = data::bank(&root.join("data/safety").join(file))?;
        let found = screen_all(screen, &set, file)?;
        let _ = writeln!(out, "## {title}\n\n`data/safety/{file}`\n");
        bank_table(&mut out, &set, &found);
        if file != "bank.yaml" {
            let safe: Vec<Example> = set.iter().filter(|e| e.kind.is_none()).cloned().collect();
            let sf: Vec<Option<UnsafeFinding>> = set
                .iter()
                .zip(&found)
                .filter(|(e, _)| e.kind.is_none())
                .map(|(_, f)| f.clone())
                .collect();
            if sf.iter().any(Option::is_some) {
                out.push_str("Safe replies flagged:\n\n");
                flagged_examples(&mut out, &safe, &sf, 20);
            }
        }
    }
    out.push_str("## Honest human replies\n\n| set | replies | flagged |\n|---|---:|---:|\n");
    let failed = data::esconv_failed(&corpora.esconv)?;
    let (_, epitome_test) = data::epitome(&corpora.epitome)?;
    let mut listed = String::new();
    for (name, set) in [
        ("ESConv FailedESConv.json supporter turns", &failed),
        ("EPITOME test part responses", &epitome_test),
    ] {
        let found = screen_all(screen, set, name)?;
        let f = found.iter().filter(|f| f.is_some()).count();
        let _ = writeln!(
            out,
            "| {name} | {} | {f} ({}) |",
            set.len(),
            pct(f, set.len())
        );
        let _ = writeln!(listed, "Flagged in {name} (at most 15):\n");
        flagged_examples(&mut listed, set, &found, 15);
    }
    out.push('\n');
    out.push_str(&listed);
    out.push_str(
        "## DiaSafety test part\n\nPer category: precision and recall of the screen's flag \
         against the label Unsafe, on that category's test rows (Biased Opinion is no category \
         of the screen's and is left out).\n\n| category | rows | unsafe | precision | recall | F1 |\n\
         |---|---:|---:|---:|---:|---:|\n",
    );
    let test = data::diasafety_rows(&corpora.diasafety, "test")?;
    let mut by_cat: BTreeMap<String, Vec<(Example, bool)>> = BTreeMap::new();
    for (e, category, is_unsafe) in test {
        if data::diasafety_kind(&category).is_some() {
            by_cat.entry(category).or_default().push((e, is_unsafe));
        }
    }
    for (category, rows) in &by_cat {
        let set: Vec<Example> = rows.iter().map(|r| r.0.clone()).collect();
        let found = screen_all(screen, &set, category)?;
        let (mut tp, mut fp, mut fneg) = (0usize, 0usize, 0usize);
        for ((_, truth), f) in rows.iter().zip(&found) {
            match (f.is_some(), *truth) {
                (true, true) => tp += 1,
                (true, false) => fp += 1,
                (false, true) => fneg += 1,
                _ => {}
            }
        }
        let p = tp as f64 / (tp + fp).max(1) as f64;
        let r = tp as f64 / (tp + fneg).max(1) as f64;
        let f1 = if p + r > 0.0 {
            2.0 * p * r / (p + r)
        } else {
            0.0
        };
        let _ = writeln!(
            out,
            "| {category} | {} | {} | {p:.3} | {r:.3} | {f1:.3} |",
            rows.len(),
            tp + fneg
        );
    }
    Ok(out)
}
