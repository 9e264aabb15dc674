//! Pieces several subcommands share: loading the catalog and the simulator, choosing profiles.

use std::path::Path;
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
