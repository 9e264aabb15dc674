//! Where a search stands after a generation: enough to continue it exactly. The search's random
//! draws come from one ChaCha8 stream per generation (stream 0 for the starting population), so
//! a search continued from a checkpoint makes the same draws, and ends with the same population,
//! as one that never stopped. A checkpoint continues only the search it came from: the same plan
//! (more generations allowed), grammar and reward rules.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{Generation, Scored, SearchPlan};
use crate::error::{Error, Result};

/// A search after `trace.last()`'s generation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchState {
    /// The plan searched.
    pub plan: SearchPlan,
    /// The grammar's fingerprint ([`grammar_fingerprint`]).
    pub grammar: String,
    /// The fingerprint of the rule files the simulator read (none for an unfingerprinted one).
    pub rules: Option<String>,
    /// Each generation's summary so far, the starting population's first.
    pub trace: Vec<Generation>,
    /// The population kept, fittest first.
    pub population: Vec<Scored>,
    /// Every policy evaluated so far, in the order of its genome.
    pub seen: Vec<Scored>,
    /// Seconds spent searching so far, over every part of the run.
    pub seconds: f64,
}

const FIX: &str = "continue it with the plan, grammar and rules it was started with, or remove \
                   the file to start a new search";

impl SearchState {
    /// The last generation done (0: the starting population).
    pub fn generation(&self) -> usize {
        self.trace.last().map_or(0, |g| g.index)
    }

    /// Refuses to continue a different search: every field of the plan but `generations`, the
    /// grammar and the rules must match. `path` names the checkpoint in the error.
    pub fn check_continues(
        &self,
        path: &Path,
        plan: &SearchPlan,
        grammar: &str,
        rules: Option<&str>,
    ) -> Result<()> {
        let was = SearchPlan {
            generations: plan.generations,
            ..self.plan.clone()
        };
        let differs = |field: &str, then: String, now: String| {
            Error::input(
                path,
                field,
                format!("the search was started with {then}, this run asks for {now}: {FIX}"),
            )
        };
        if &was != plan {
            return Err(differs("plan", plain(&self.plan), plain(plan)));
        }
        if self.grammar != grammar {
            return Err(differs(
                "grammar",
                self.grammar.clone(),
                grammar.to_string(),
            ));
        }
        if self.rules.as_deref() != rules {
            return Err(differs(
                "rules",
                self.rules
                    .clone()
                    .unwrap_or_else(|| "no fingerprint".into()),
                rules.unwrap_or("no fingerprint").to_string(),
            ));
        }
        if self.population.is_empty() || self.trace.is_empty() {
            return Err(Error::input(
                path,
                "population",
                "is empty: the file is not a search's checkpoint; remove it to start a new search",
            ));
        }
        Ok(())
    }

    /// Reads a checkpoint written by [`SearchState::write`].
    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        serde_yaml::from_str(&text).map_err(|e| {
            Error::input(
                path,
                "(file)",
                format!("{e}; this is not a search's checkpoint: remove it to start a new search"),
            )
        })
    }

    /// Writes the checkpoint to `path` as YAML (whose numbers read back bit for bit) through a
    /// temporary file beside it, so a run stopped while writing leaves the previous checkpoint
    /// whole.
    pub fn write(&self, path: &Path) -> Result<()> {
        let tmp = path.with_extension("partial");
        let text = serde_yaml::to_string(self)
            .map_err(|e| Error::Other(format!("cannot write the search's checkpoint: {e}")))?;
        std::fs::write(&tmp, text).map_err(|e| Error::io(&tmp, e))?;
        std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
    }
}

/// The plan in the words of the command's flags, for an error message.
fn plain(p: &SearchPlan) -> String {
    let levels: Vec<String> = p.difficulties.iter().map(|d| d.to_string()).collect();
    format!(
        "--difficulty {} --limit {} --population {} --children {} --seed {}, {} dialogue(s) per \
         profile, {} starting polic{} from --start-from",
        levels.join(","),
        p.limit.map_or("all".into(), |l| l.to_string()),
        p.population,
        p.children,
        p.seed,
        p.repeats,
        p.start.len(),
        if p.start.len() == 1 { "y" } else { "ies" }
    )
}

/// "fnv1a64 0123456789abcdef" of the grammar's YAML form: which grammar a search ran on.
pub fn grammar_fingerprint(g: &super::Grammar) -> Result<String> {
    let text = serde_yaml::to_string(g)
        .map_err(|e| Error::Other(format!("cannot fingerprint the grammar: {e}")))?;
    Ok(format!(
        "fnv1a64 {:016x}",
        crate::seed::fnv1a64(text.as_bytes())
    ))
}
