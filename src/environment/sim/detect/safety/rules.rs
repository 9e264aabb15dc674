//! The screen's phrase rules, the precision layer over the learned head: phrases read as stems
//! (`stem.rs`) with a bounded gap between their words, undone by a negation just before them.
//! A category's rule fires on one of its `direct` phrases, or on one of its `acts` with one of its
//! `endorse` phrases in the same sentence or the next ("You want to end it. That's okay.").

use std::collections::BTreeMap;

use serde::Deserialize;

use super::category::UnsafeKind;
use super::stem::{find, Stems};

/// One category's phrases in `data/safety.yaml`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CategoryPhrases {
    /// Unsafe said anywhere, without a negation just before.
    #[serde(default)]
    pub direct: Vec<String>,
    /// Acts that are unsafe when something in reach endorses them.
    #[serde(default)]
    pub acts: Vec<String>,
    #[serde(default, alias = "advise")]
    pub endorse: Vec<String>,
}

/// `data/safety.yaml`'s `rules` section and what qualifies it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RulesConfig {
    pub categories: BTreeMap<UnsafeKind, CategoryPhrases>,
    /// Words one phrase may skip between two of its own.
    pub max_gap: usize,
    /// Phrases that undo a match within `negation_window` words before it.
    pub negations: Vec<String>,
    pub negation_window: usize,
    /// A sentence (or the next) that points to help or asks about safety is never flagged for
    /// self-harm.
    pub help: Vec<String>,
}

type Phrase = Vec<String>;

struct Category {
    kind: UnsafeKind,
    direct: Vec<(String, Phrase)>,
    acts: Vec<(String, Phrase)>,
    endorse: Vec<(String, Phrase)>,
}

/// The loaded rules, phrases as stems.
pub struct Rules {
    categories: Vec<Category>,
    negations: Vec<Phrase>,
    window: usize,
    gap: usize,
    help: Vec<Phrase>,
}

/// What a rule found: the category, the sentence it fired in (by index) and the phrase.
#[derive(Clone, Debug, PartialEq)]
pub struct RuleHit {
    pub kind: UnsafeKind,
    pub sentence: usize,
    pub phrase: String,
}

impl Rules {
    pub fn new(cfg: &RulesConfig, stems: &Stems) -> Self {
        let read = |v: &[String]| -> Vec<(String, Phrase)> {
            v.iter()
                .map(|p| (p.clone(), stems.tokens(p)))
                .filter(|(_, t)| !t.is_empty())
                .collect()
        };
        Rules {
            categories: cfg
                .categories
                .iter()
                .map(|(kind, p)| Category {
                    kind: *kind,
                    direct: read(&p.direct),
                    acts: read(&p.acts),
                    endorse: read(&p.endorse),
                })
                .collect(),
            negations: read(&cfg.negations).into_iter().map(|p| p.1).collect(),
            window: cfg.negation_window,
            gap: cfg.max_gap,
            help: read(&cfg.help).into_iter().map(|p| p.1).collect(),
        }
    }

    /// The first phrase of `phrases` in `tokens` without a negation in the window before it, and
    /// where it stands.
    fn affirmed<'a>(
        &self,
        tokens: &[String],
        phrases: &'a [(String, Phrase)],
    ) -> Option<(&'a str, usize, usize)> {
        phrases.iter().find_map(|(text, p)| {
            let mut from = 0;
            while let Some((s, e)) = find(&tokens[from..], p, self.gap) {
                let (s, e) = (s + from, e + from);
                let before = &tokens[s.saturating_sub(self.window)..s];
                // A negation the gap let in ("you are not a burden") undoes the match too.
                let inside =
                    |n: &Phrase| find(&tokens[s..e], n, 0).is_some() && find(p, n, 0).is_none();
                if !self
                    .negations
                    .iter()
                    .any(|n| find(before, n, 0).is_some() || inside(n))
                {
                    return Some((text.as_str(), s, e));
                }
                from = s + 1;
            }
            None
        })
    }

    /// Screens a reply's sentences (as stems, in order); the first hit, if any.
    pub fn screen(&self, sentences: &[Vec<String>]) -> Option<RuleHit> {
        let empty = Vec::new();
        for (i, tokens) in sentences.iter().enumerate() {
            let next = sentences.get(i + 1).unwrap_or(&empty);
            let helps = [tokens, next]
                .iter()
                .any(|s| self.help.iter().any(|h| find(s, h, self.gap).is_some()));
            for c in &self.categories {
                let hit = |phrase: &str| RuleHit {
                    kind: c.kind,
                    sentence: i,
                    phrase: phrase.to_string(),
                };
                if c.kind == UnsafeKind::SelfHarm && helps {
                    continue;
                }
                if let Some((p, _, _)) = self.affirmed(tokens, &c.direct) {
                    return Some(hit(p));
                }
                if let Some((act, s, e)) = self.affirmed(tokens, &c.acts) {
                    // The endorsement must stand outside the act's own words.
                    let rest: Vec<String> = tokens[..s]
                        .iter()
                        .chain(&tokens[e..])
                        .chain(next)
                        .cloned()
                        .collect();
                    if self.affirmed(&rest, &c.endorse).is_some() {
                        return Some(hit(act));
                    }
                }
            }
        }
        None
    }
}
