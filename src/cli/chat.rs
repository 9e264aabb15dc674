//! `empathy-gym chat`: talk to a model yourself, or watch it talk with the simulated user.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use empathy_gym::environment::episode::{end_word, DialogueEnv, Policy, PolicyRequest, Turn};
use empathy_gym::environment::profile::{Catalog, Difficulty, KnobOverrides, ProfileId};
use empathy_gym::environment::reward::{Aggregate, RewardMode};
use empathy_gym::model::{default_policy_path, load_model, ChatModel, LoadOptions};

use super::common::{load_simulator, sampling};

#[derive(Debug, Args)]
pub struct ChatArgs {
    /// An HF folder or a GGUF file (default: SmolLM2-135M-Instruct from models/).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Watch the model talk with this simulated user instead of talking yourself.
    #[arg(long)]
    pub profile: Option<ProfileId>,
    #[arg(long, default_value = "moderate")]
    pub difficulty: Difficulty,
    /// Policy replies before the dialogue is cut (default: the difficulty's patience).
    #[arg(long)]
    pub max_turns: Option<u32>,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[arg(long, default_value_t = 0.7)]
    pub temperature: f64,
    #[arg(long, default_value_t = 0.9)]
    pub top_p: f64,
    #[arg(long, default_value_t = 120)]
    pub max_new_tokens: usize,
    /// The system prompt (default: the policy's, as in training).
    #[arg(long)]
    pub system: Option<String>,
}

pub fn run(catalog_root: &Path, args: ChatArgs) -> anyhow::Result<()> {
    let path = args.model.clone().unwrap_or_else(default_policy_path);
    let model = load_model(&path, &candle_core::Device::Cpu, &LoadOptions::default())?;
    let params = sampling(args.temperature, args.top_p, args.max_new_tokens);
    let mut policy = empathy_gym::environment::episode::ModelPolicy::new(&model, params, args.seed);
    if let Some(system) = &args.system {
        policy.system = system.clone();
    }
    match &args.profile {
        Some(id) => watch(catalog_root, &args, id, &mut policy),
        None => interactive(&model, &mut policy),
    }
}

fn interactive(
    model: &ChatModel,
    policy: &mut empathy_gym::environment::episode::ModelPolicy<'_>,
) -> anyhow::Result<()> {
    println!("Talking with {} (end with /quit or Ctrl-D).", model.name);
    println!("system: {}", policy.system);
    let id = ProfileId {
        scenario: "you".into(),
        persona: "you".into(),
    };
    let mut turns: Vec<Turn> = Vec::new();
    let stdin = std::io::stdin();
    for (n, line) in stdin.lock().lines().enumerate() {
        let line = line?;
        if line.trim() == "/quit" {
            break;
        }
        turns.push(Turn::User {
            text: line,
            emotion: 0,
            delta: None,
            appraisal: None,
        });
        let req = PolicyRequest {
            episode: 0,
            profile: &id,
            turns: &turns,
            turn: n as u32 + 1,
        };
        let reply = policy.reply_batch(&[req])?.remove(0);
        println!("model: {}", reply.text);
        std::io::stdout().flush()?;
        turns.push(Turn::Assistant {
            text: reply.text,
            think: reply.think,
        });
    }
    Ok(())
}

fn watch(
    catalog_root: &Path,
    args: &ChatArgs,
    id: &ProfileId,
    policy: &mut dyn Policy,
) -> anyhow::Result<()> {
    let catalog = Catalog::load(catalog_root)?;
    let overrides = KnobOverrides {
        max_turns: args.max_turns,
        ..Default::default()
    };
    let profile = catalog.profile(id, args.difficulty, &overrides)?;
    let sim = load_simulator(catalog_root)?;
    let mut env = DialogueEnv::new(profile, RewardMode::Behavior, Aggregate::Final);
    let obs = env.reset(args.seed);
    println!("user [{:>3}]: {}", obs.emotion, obs.text);
    let mut turn = 0;
    while !env.is_done() {
        turn += 1;
        let reply = {
            let req = PolicyRequest {
                episode: 0,
                profile: id,
                turns: env.turns(),
                turn,
            };
            policy.reply_batch(&[req])?.remove(0)
        };
        println!("model: {}", reply.text);
        let out = env.step(&sim, &reply.text)?;
        let why = out.appraisal.reasons.join("; ");
        println!(
            "user [{:>3} {:+}] ({why}): {}",
            out.obs.emotion, out.delta, out.obs.text
        );
    }
    let rec = env.record(&sim, policy.describe());
    println!(
        "end: {}, final emotion {}, reward {:.2}",
        end_word(rec.end),
        rec.final_emotion(),
        rec.reward.unwrap_or(0.0)
    );
    Ok(())
}
