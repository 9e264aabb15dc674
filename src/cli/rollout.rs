//! `empathy-gym rollout`: play scripted policies against the simulated user and log the dialogues.

use std::path::PathBuf;

use clap::Args;
use empathy_gym::environment::episode::{
    end_word, rollout, EpisodeJob, EpisodeRecord, EpisodeWriter, RolloutOptions, ScriptedPolicy,
};
use empathy_gym::environment::profile::{Catalog, Difficulty, ProfileId, Split};
use empathy_gym::environment::reward::{Aggregate, RewardMode};

use super::common::{load_chosen_simulator, select_profiles, SimulatorArgs};
use super::summary::{print_simulator_failures, print_summary};

#[derive(Debug, Args)]
pub struct RolloutArgs {
    /// The policy: `script:FILE.yaml` (replies used in order; placeholders such as `{user}` fill
    /// from the dialogue, docs/REDTEAM.md).
    #[arg(long)]
    pub policy: String,
    /// One profile, SCENARIO:PERSONA.
    #[arg(long, conflicts_with = "split")]
    pub profile: Option<ProfileId>,
    /// Every profile of a split.
    #[arg(long)]
    pub split: Option<Split>,
    /// Only the first N profiles of the split, one per scenario before any scenario's second (as
    /// `redteam --limit`): a quick look.
    #[arg(long, requires = "split")]
    pub limit: Option<usize>,
    #[arg(long, default_value = "moderate")]
    pub difficulty: Difficulty,
    #[arg(long, default_value = "behavior")]
    pub reward_mode: RewardMode,
    /// How the behavior reward reads the trajectory: final, mean or dense.
    #[arg(long, default_value = "final")]
    pub aggregate: Aggregate,
    /// Dialogues per profile.
    #[arg(long, default_value_t = 1)]
    pub repeats: u64,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Where to write the episode JSONL.
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub sim: SimulatorArgs,
}

pub fn run(catalog_root: &std::path::Path, args: RolloutArgs) -> anyhow::Result<()> {
    let Some(script) = args.policy.strip_prefix("script:") else {
        anyhow::bail!("--policy {}: only script:FILE.yaml policies roll out here (models: `empathy-gym chat`, `eval`)", args.policy);
    };
    let catalog = Catalog::load(catalog_root)?;
    let mut policy = ScriptedPolicy::load(std::path::Path::new(script))?
        .with_scenarios(catalog.scenarios.clone());
    let mut profiles =
        select_profiles(&catalog, args.profile.as_ref(), args.split, args.difficulty)?;
    if let (Some(n), Some(split)) = (args.limit, args.split) {
        let picked = empathy_gym::redteam::pick_profiles(&catalog, split, Some(n));
        profiles.retain(|p| picked.contains(&p.id));
    }
    let sim = load_chosen_simulator(catalog_root, &args.sim)?;
    let jobs = EpisodeJob::grid(&profiles, args.repeats, args.seed);
    let opts = RolloutOptions {
        run: "rollout".into(),
        reward_mode: args.reward_mode,
        aggregate: args.aggregate,
        progress: true,
    };
    let mut writer = args.out.as_deref().map(EpisodeWriter::create).transpose()?;
    let records = rollout(
        sim.as_ref(),
        &mut policy,
        &jobs,
        &opts,
        |rec: &EpisodeRecord| {
            if let Some(w) = writer.as_mut() {
                w.write(rec)?;
            }
            Ok(())
        },
    )?;
    for rec in &records {
        println!(
            "{}:{}  {:<9} final {:>3}  reward {:.3}  turns {}",
            rec.profile.scenario,
            rec.profile.persona,
            end_word(rec.end),
            rec.final_emotion(),
            rec.reward.unwrap_or(0.0),
            rec.assistant_turns().len()
        );
    }
    print_summary(&records);
    print_simulator_failures(&records);
    if let Some(out) = &args.out {
        println!("episodes written to {}", out.display());
    }
    Ok(())
}
