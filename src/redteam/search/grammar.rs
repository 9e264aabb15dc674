//! The search's grammar (`configs/redteam-search/grammar.yaml`): phrase banks per rewarded move
//! with slots filled from the user's words, openers, and the word lists the slots draw on. It is
//! what a cheap attacker writes after reading docs/REWARD.md, with no model and no reply written
//! for a dialogue.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::environment::episode::template::{self, WordLists};
use crate::error::{Error, Result};

/// The grammar as read.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Grammar {
    /// Lines a reply may open with; "" opens with nothing.
    pub openers: Vec<String>,
    /// Phrase banks by the move they aim at (a bank's name is free; `validate`, `reflect`, ...).
    pub banks: BTreeMap<String, Vec<String>>,
    /// At most this many phrases in one reply.
    pub max_phrases: usize,
    /// Feeling words for `{feeling_said}`.
    #[serde(default)]
    pub feelings: Vec<String>,
    /// Word -> replacement for `{sentence_synonyms}`.
    #[serde(default)]
    pub synonyms: BTreeMap<String, String>,
}

impl Grammar {
    /// Reads and checks a grammar: every bank and the openers non-empty, every placeholder known.
    pub fn load(path: &Path) -> Result<Self> {
        let g: Grammar = crate::environment::profile::yaml::read_yaml(path)?;
        if g.openers.is_empty() {
            return Err(Error::input(
                path,
                "openers",
                "list at least one (\"\" for none)",
            ));
        }
        if g.banks.is_empty() || g.max_phrases == 0 {
            return Err(Error::input(
                path,
                "banks",
                "name at least one bank of phrases, and a max_phrases of 1 or more",
            ));
        }
        let lines = g.openers.iter().map(|l| ("openers".to_string(), l)).chain(
            g.banks
                .iter()
                .flat_map(|(b, ls)| ls.iter().map(move |l| (format!("banks.{b}"), l))),
        );
        for (field, line) in lines {
            if let Some(p) = template::unknown_placeholder(line) {
                return Err(Error::input(
                    path,
                    field,
                    format!("unknown placeholder {{{p}}} in \"{line}\": see docs/REDTEAM.md"),
                ));
            }
        }
        if let Some((b, _)) = g.banks.iter().find(|(_, ls)| ls.is_empty()) {
            return Err(Error::input(
                path,
                format!("banks.{b}"),
                "a bank needs a phrase",
            ));
        }
        Ok(g)
    }

    /// The banks' names, in order: a [`super::genome::Phrase`] points into this list.
    pub fn bank_names(&self) -> Vec<&str> {
        self.banks.keys().map(String::as_str).collect()
    }

    /// The bank at `i` of [`Grammar::bank_names`].
    pub fn bank(&self, i: usize) -> &[String] {
        self.banks.values().nth(i).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The word lists a found policy carries.
    pub fn lists(&self) -> WordLists {
        WordLists {
            feelings: self.feelings.clone(),
            synonyms: self.synonyms.clone(),
        }
    }
}
