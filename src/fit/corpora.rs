//! The labelled replies the safety head is fit and measured on, read from the user's own copies of
//! the public corpora (never committed) and from the project's banks under `data/safety/`.
//!
//! - DiaSafety (Sun et al., Findings of ACL 2022; github.com/thu-coai/DiaSafety, Apache-2.0):
//!   `DiaSafety_dataset/{train,val,test}.json`, (context, response, category, label).
//! - ESConv (Liu et al., ACL 2021; github.com/thu-coai/Emotional-Support-Conversation,
//!   CC BY-NC 4.0): the supporter turns of `codes/dataset/devWithStrategy_short.tsv` (honest
//!   replies the head learns as safe) and of `FailedESConv.json` (measured, never fit).
//! - EPITOME (Sharma et al., EMNLP 2020; github.com/behavioral-data/Empathy-Mental-Health): its
//!   responses, dev part fit as safe, test part measured (`judge::epitome::Part`).

use std::path::Path;

use serde::Deserialize;

use crate::environment::sim::detect::UnsafeKind;
use crate::error::{Error, Result};

/// One labelled reply: the user's message before it, the reply, and its class (`None`: safe).
#[derive(Clone, Debug, PartialEq)]
pub struct Example {
    pub context: String,
    pub reply: String,
    pub kind: Option<UnsafeKind>,
    /// Where it came from, for reports ("diasafety:Risk Ignorance", "bank", "esconv").
    pub source: String,
    /// One harmful sentence sits in an otherwise warm reply (a bank's `hidden: true`).
    pub hidden: bool,
}

#[derive(Deserialize)]
struct DiaRow {
    context: String,
    response: String,
    category: String,
    label: String,
}

/// DiaSafety's categories as the screen's kinds. Biased opinion (about groups, not the user) has
/// no kind here: its unsafe replies are left out, its safe ones kept.
pub fn diasafety_kind(category: &str) -> Option<UnsafeKind> {
    match category {
        "Risk Ignorance" => Some(UnsafeKind::RiskIgnorance),
        "Unauthorized Expertise" => Some(UnsafeKind::DangerousAdvice),
        "Toxicity Agreement" => Some(UnsafeKind::HarmfulAgreement),
        "Offending User" => Some(UnsafeKind::Degrading),
        _ => None,
    }
}

/// One part (`train`, `val` or `test`) of DiaSafety under `dir`, as the screen's examples (the
/// unsafe rows of a category it has no kind for left out).
pub fn diasafety(dir: &Path, part: &str) -> Result<Vec<Example>> {
    Ok(diasafety_rows(dir, part)?
        .into_iter()
        .filter(|(e, _, is_unsafe)| !*is_unsafe || e.kind.is_some())
        .map(|(e, _, _)| e)
        .collect())
}

/// Every row of one part of DiaSafety: the example, its category and whether it is unsafe.
pub fn diasafety_rows(dir: &Path, part: &str) -> Result<Vec<(Example, String, bool)>> {
    let path = dir.join(format!("{part}.json"));
    let text = std::fs::read_to_string(&path).map_err(|_| {
        Error::input(
            &path,
            "file",
            "missing: pass the folder DiaSafety_dataset/ of github.com/thu-coai/DiaSafety",
        )
    })?;
    let rows: Vec<DiaRow> = serde_json::from_str(&text)
        .map_err(|e| Error::input(&path, format!("line {}", e.line()), e.to_string()))?;
    let mut out = Vec::new();
    for (i, r) in rows.into_iter().enumerate() {
        let kind = match r.label.as_str() {
            "Safe" => None,
            "Unsafe" => diasafety_kind(&r.category),
            other => {
                return Err(Error::input(
                    &path,
                    format!("[{i}].label"),
                    format!("`{other}` is neither Safe nor Unsafe"),
                ))
            }
        };
        let is_unsafe = r.label == "Unsafe";
        out.push((
            Example {
                context: r.context,
                reply: r.response,
                kind,
                source: format!("diasafety:{}", r.category),
                hidden: false,
            },
            r.category,
            is_unsafe,
        ));
    }
    Ok(out)
}

/// A supporter turn of ESConv with its human strategy label.
#[derive(Clone, Debug, PartialEq)]
pub struct EsconvTurn {
    pub example: Example,
    /// The strategy as the file writes it (`Questions`, `Restatement or Paraphrasing`, ...).
    pub strategy: String,
    /// The dialogue's first message: turns of one dialogue share it.
    pub dialogue: String,
}

/// The supporter turns of ESConv's `devWithStrategy_short.tsv` under `dir`, each after the
/// seeker's last message: every line is a dialogue's prefix, its segments split by ` EOS `, each
/// `emotion speaker index [Strategy] text` with speaker 1 the supporter; a line's last segment
/// is its new turn.
pub fn esconv_dev(dir: &Path) -> Result<Vec<EsconvTurn>> {
    let path = dir.join("devWithStrategy_short.tsv");
    let text = std::fs::read_to_string(&path).map_err(|_| {
        Error::input(
            &path,
            "file",
            "missing: pass the folder holding codes/dataset/devWithStrategy_short.tsv of \
             github.com/thu-coai/Emotional-Support-Conversation",
        )
    })?;
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for line in text.lines() {
        let segments: Vec<(bool, &str)> = line
            .split(" EOS ")
            .filter_map(|seg| {
                let mut f = seg.trim().splitn(4, ' ');
                let (_, who, _) = (f.next()?, f.next()?, f.next()?);
                Some((who == "1", f.next().unwrap_or("").trim()))
            })
            .collect();
        let Some(&(true, last)) = segments.last() else {
            continue;
        };
        let Some(&(_, context)) = segments.iter().rev().find(|s| !s.0) else {
            continue;
        };
        let (strategy, reply) = match last.strip_prefix('[').and_then(|r| r.split_once(']')) {
            Some((s, r)) => (s.to_string(), r.trim()),
            None => (String::new(), last),
        };
        if reply.is_empty() || !seen.insert((context.to_string(), reply.to_string())) {
            continue;
        }
        out.push(EsconvTurn {
            example: Example {
                context: context.to_string(),
                reply: reply.to_string(),
                kind: None,
                source: "esconv-dev".into(),
                hidden: false,
            },
            strategy,
            dialogue: segments[0].1.to_string(),
        });
    }
    Ok(out)
}

#[derive(Deserialize)]
struct FailedDialogue {
    dialog: Vec<FailedTurn>,
}

#[derive(Deserialize)]
struct FailedTurn {
    speaker: String,
    content: String,
}

/// The supporter (`listener`) turns of ESConv's `FailedESConv.json` under `dir`, each after the
/// seeker's last message.
pub fn esconv_failed(dir: &Path) -> Result<Vec<Example>> {
    let path = dir.join("FailedESConv.json");
    let text = std::fs::read_to_string(&path).map_err(|_| {
        Error::input(
            &path,
            "file",
            "missing: pass the folder holding FailedESConv.json of \
             github.com/thu-coai/Emotional-Support-Conversation",
        )
    })?;
    let dialogues: Vec<FailedDialogue> = serde_json::from_str(&text)
        .map_err(|e| Error::input(&path, format!("line {}", e.line()), e.to_string()))?;
    let mut out = Vec::new();
    for d in dialogues {
        let mut context = String::new();
        for t in d.dialog {
            let content = t.content.trim().to_string();
            if t.speaker == "listener" || t.speaker == "supporter" {
                out.push(Example {
                    context: context.clone(),
                    reply: content,
                    kind: None,
                    source: "esconv-failed".into(),
                    hidden: false,
                });
            } else {
                context = content;
            }
        }
    }
    Ok(out)
}

/// EPITOME's responses under `dir`, one per (post, response), split into its dev and test parts.
pub fn epitome(dir: &Path) -> Result<(Vec<Example>, Vec<Example>)> {
    use crate::judge::epitome::{load, Part};
    let (mut dev, mut test) = (Vec::new(), Vec::new());
    for item in load(dir)? {
        let e = Example {
            context: item.post.clone(),
            reply: item.response.clone(),
            kind: None,
            source: "epitome".into(),
            hidden: false,
        };
        match item.part() {
            Part::Dev => dev.push(e),
            Part::Test => test.push(e),
        }
    }
    Ok((dev, test))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BankFile {
    items: Vec<BankItem>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BankItem {
    category: String,
    context: String,
    reply: String,
    /// One harmful sentence hidden in an otherwise warm reply.
    #[serde(default)]
    hidden: bool,
}

/// A bank the project writes (`data/safety/*.yaml`): items of `category` (a kind or `safe`),
/// `context` and `reply`, and `hidden: true` where one harmful sentence sits in a warm reply.
pub fn bank(path: &Path) -> Result<Vec<Example>> {
    let f: BankFile = crate::environment::profile::yaml::read_yaml(path)?;
    let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("bank");
    f.items
        .into_iter()
        .enumerate()
        .map(|(i, it)| {
            let kind = match it.category.as_str() {
                "safe" => None,
                c => Some(UnsafeKind::parse(c).ok_or_else(|| {
                    Error::input(
                        path,
                        format!("items[{i}].category"),
                        format!(
                            "`{c}` is not a category: use safe or one of {}",
                            UnsafeKind::ALL.map(UnsafeKind::as_str).join(", ")
                        ),
                    )
                })?),
            };
            Ok(Example {
                context: it.context,
                reply: it.reply,
                kind,
                source: name.to_string(),
                hidden: it.hidden,
            })
        })
        .collect()
}
