//! Pieces several subcommands share: loading the catalog and the simulator, choosing profiles.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use anyhow::Context;
use empathy_gym::model::SamplingParams;
use empathy_gym::profile::{Catalog, Difficulty, KnobOverrides, Profile, ProfileId, Split};
use empathy_gym::sim::{Appraiser, Embedder};

/// Loads the built-in appraiser with the default embedder.
pub fn load_simulator(catalog: &Path) -> anyhow::Result<Appraiser> {
    let embedder = Arc::new(Embedder::load_default()?);
    Ok(Appraiser::load(catalog, embedder)?)
}

/// The profiles named by `--profile` or `--split`, resolved at `difficulty`.
pub fn select_profiles(
    catalog: &Catalog,
    profile: Option<&ProfileId>,
    split: Option<Split>,
    difficulty: Difficulty,
) -> anyhow::Result<Vec<Profile>> {
    let ids: Vec<ProfileId> = match (profile, split) {
        (Some(p), _) => vec![p.clone()],
        (None, Some(s)) => catalog.split(s).to_vec(),
        (None, None) => {
            anyhow::bail!("say which profiles: --profile SCENARIO:PERSONA or --split test|train")
        }
    };
    ids.iter()
        .map(|id| {
            catalog
                .profile(id, difficulty, &KnobOverrides::default())
                .with_context(|| format!("profile {id}"))
        })
        .collect()
}

/// Sampling settings from the command line; a temperature of 0 or less means greedy.
pub fn sampling(temperature: f64, top_p: f64, max_new_tokens: usize) -> SamplingParams {
    SamplingParams {
        temperature,
        top_p,
        max_new_tokens,
        greedy: temperature <= 0.0,
    }
}

/// A model on the command line with an optional display name for reports: `NAME=PATH`, or a bare
/// `PATH` named by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub name: String,
    pub path: PathBuf,
}

impl FromStr for Named {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, path) = match s.split_once('=') {
            Some((n, p)) if !n.is_empty() && !n.contains(['/', '\\']) => (n, p),
            _ => (s, s),
        };
        if path.is_empty() {
            return Err(format!("{s:?}: empty path; write NAME=PATH or PATH"));
        }
        Ok(Named {
            name: name.to_string(),
            path: PathBuf::from(path),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_specs() {
        let n: Named = "trait=/tmp/runs/trait-100".parse().unwrap();
        assert_eq!(n.name, "trait");
        assert_eq!(n.path, PathBuf::from("/tmp/runs/trait-100"));
        let bare: Named = "runs/a=b".parse().unwrap();
        assert_eq!(
            (bare.name.as_str(), bare.path.to_str()),
            ("runs/a=b", Some("runs/a=b"))
        );
        let plain: Named = "base".parse().unwrap();
        assert_eq!(
            (plain.name.as_str(), plain.path.to_str()),
            ("base", Some("base"))
        );
        assert!("x=".parse::<Named>().is_err());
    }
}
