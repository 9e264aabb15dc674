//! Scripted policies (`script:FILE.yaml`: the baselines and the red-team adversaries): loaded as
//! `rollout --policy` loads one, given the catalog's scenarios for its placeholders, and asked
//! for the replies of a dialogue, whose user answers from the replies it fills in.

use empathy_gym::environment::episode::ScriptedPolicy;
use empathy_gym::environment::profile::{Catalog, Difficulty, KnobOverrides, ProfileId};

use super::dialogue::{play_as, Replies};
use crate::fuzz::context::{files_in, read_all};
use crate::fuzz::{FuzzContext, Kind, Target};

/// Script files are small; a larger file is not a useful seed.
const MAX_SEED: u64 = 256 << 10;

/// `policy_yaml`: a scripted policy's file.
pub fn policy_yaml(ctx: &FuzzContext) -> anyhow::Result<Target> {
    let dir = ctx.fresh_dir("policy_yaml")?;
    let catalog = Catalog::load(&ctx.repo_root)?;
    let mut files = files_in(&ctx.repo("configs/baselines"), ".yaml");
    files.extend(files_in(&ctx.repo("configs/redteam"), ".yaml"));
    let seeds = read_all(&files, MAX_SEED);
    let path = dir.join("policy.yaml");
    let ids: Vec<ProfileId> = catalog.splits.test.iter().take(2).cloned().collect();
    Target::new("policy_yaml", Kind::Yaml, seeds, move |input| {
        std::fs::write(&path, input)?;
        let mut policy = ScriptedPolicy::load(&path)?.with_scenarios(catalog.scenarios.clone());
        policy.class();
        let seed = empathy_gym::seed::fnv1a64(input);
        for id in &ids {
            let profile = catalog.profile(id, Difficulty::Moderate, &KnobOverrides::default())?;
            play_as(
                profile,
                seed,
                Default::default(),
                Default::default(),
                Replies::Policy(&mut policy),
            )?;
        }
        Ok(())
    })
}
