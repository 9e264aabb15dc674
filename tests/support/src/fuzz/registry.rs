//! Every target by name, in the order the campaign runs them.

use super::targets::{checkpoint, config, episode, model, policy, profile, serve};
use super::{FuzzContext, Target};

/// A target's builder: it writes or reads the seeds and prepares what the check needs.
type Builder = fn(&FuzzContext) -> anyhow::Result<Target>;

/// The targets: name, and whether one input loads a model (slow: the smoke test runs fewer).
pub const TARGETS: [(&str, bool); 18] = [
    ("gguf", true),
    ("safetensors", true),
    ("hf_config", true),
    ("tokenizer", true),
    ("tokenizer_config", true),
    ("optimizer", false),
    ("checkpoint", false),
    ("episode_jsonl", false),
    ("scenario_yaml", false),
    ("persona_yaml", false),
    ("split_yaml", false),
    ("preset_yaml", false),
    ("speaker_yaml", false),
    ("policy_yaml", false),
    ("sweep_yaml", false),
    ("train_config", false),
    ("env_request", false),
    ("model_request", false),
];

fn builder(name: &str) -> Option<Builder> {
    Some(match name {
        "gguf" => model::gguf,
        "safetensors" => model::safetensors,
        "hf_config" => model::hf_config,
        "tokenizer" => model::tokenizer,
        "tokenizer_config" => model::tokenizer_config,
        "optimizer" => checkpoint::optimizer,
        "checkpoint" => checkpoint::checkpoint,
        "episode_jsonl" => episode::episode_jsonl,
        "scenario_yaml" => profile::scenario,
        "persona_yaml" => profile::persona,
        "split_yaml" => profile::split,
        "preset_yaml" => profile::preset,
        "speaker_yaml" => profile::speaker,
        "policy_yaml" => policy::policy_yaml,
        "sweep_yaml" => config::sweep,
        "train_config" => config::train_config,
        "env_request" => serve::env_request,
        "model_request" => serve::model_request,
        _ => return None,
    })
}

/// Builds target `name` in `ctx`.
pub fn build(name: &str, ctx: &FuzzContext) -> anyhow::Result<Target> {
    let make = builder(name).ok_or_else(|| {
        let names: Vec<&str> = TARGETS.iter().map(|(n, _)| *n).collect();
        anyhow::anyhow!("no fuzz target `{name}`; the targets: {}", names.join(", "))
    })?;
    make(ctx)
}
