//! Pieces several subcommands share: loading the catalog and the simulator, choosing profiles.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use anyhow::Context;
use candle_core::Device;
use clap::Args;
use empathy_gym::environment::profile::{
    Catalog, Difficulty, KnobOverrides, Profile, ProfileId, Split,
};
use empathy_gym::environment::sim::embed::DEFAULT_CACHE_ENTRIES;
use empathy_gym::environment::sim::llm::{
    Backend, LlmConfigFile, LlmSimulator, LocalBackend, OpenAiBackend, Prompts,
};
use empathy_gym::environment::sim::{Appraiser, Embedder, Simulator, SimulatorKind};
use empathy_gym::model::SamplingParams;

use super::loading::loading;

/// Loads the built-in appraiser with the default embedder on the CPU.
pub fn load_simulator(catalog: &Path) -> anyhow::Result<Appraiser> {
    load_simulator_on(catalog, &Device::Cpu, DEFAULT_CACHE_ENTRIES)
}

/// Loads the built-in appraiser with the default embedder on `device`, caching at most
/// `embed_cache` embeddings.
pub fn load_simulator_on(
    catalog: &Path,
    device: &Device,
    embed_cache: usize,
) -> anyhow::Result<Appraiser> {
    let embedder = Embedder::load_default_on(device)?.with_cache_entries(embed_cache);
    Ok(Appraiser::load(catalog, Arc::new(embedder))?)
}

/// `--simulator` and `--simulator-config`, shared by the commands that simulate.
#[derive(Debug, Clone, Args)]
pub struct SimulatorArgs {
    /// The simulated user: appraiser (built in) or llm (an LLM plays the user).
    #[arg(long, default_value = "appraiser")]
    pub simulator: SimulatorKind,
    /// The LLM user's settings (default: configs/simulator/llm.yaml in the catalog when present,
    /// else the built-in defaults).
    #[arg(long)]
    pub simulator_config: Option<PathBuf>,
    /// Most sentence embeddings the appraiser keeps (least recently used dropped first; about
    /// 1.6 KB each). A dropped one is recomputed exactly, so this trades memory for speed only.
    #[arg(long, default_value_t = DEFAULT_CACHE_ENTRIES)]
    pub embed_cache: usize,
}

/// Loads the simulator the flags name (an appraiser embeds on the CPU).
pub fn load_chosen_simulator(
    catalog: &Path,
    args: &SimulatorArgs,
) -> anyhow::Result<Arc<dyn Simulator>> {
    build_simulator(
        catalog,
        args.simulator,
        args.simulator_config.as_deref(),
        &Device::Cpu,
        args.embed_cache,
    )
}

/// Loads the simulator of `kind`; `llm_config` is the LLM user's settings file (ignored by the
/// appraiser), `device` where the appraiser embeds and `embed_cache` how many embeddings it keeps
/// (both ignored by the LLM user). The flags and a training config's `simulator:` section both
/// come here.
pub fn build_simulator(
    catalog: &Path,
    kind: SimulatorKind,
    llm_config: Option<&Path>,
    device: &Device,
    embed_cache: usize,
) -> anyhow::Result<Arc<dyn Simulator>> {
    match kind {
        SimulatorKind::Appraiser => Ok(Arc::new(loading(
            false,
            "simulator: loading the appraiser",
            || load_simulator_on(catalog, device, embed_cache),
        )?)),
        SimulatorKind::Llm => Ok(Arc::new(load_llm_simulator(catalog, llm_config)?)),
    }
}

/// Loads the LLM user from its settings file (or the defaults) and the environment.
pub fn load_llm_simulator(catalog: &Path, config: Option<&Path>) -> anyhow::Result<LlmSimulator> {
    let default = catalog.join("configs/simulator/llm.yaml");
    let file = config
        .map(Path::to_path_buf)
        .or_else(|| default.is_file().then_some(default));
    let settings = LlmConfigFile::load(file.as_deref())?.validate(
        file.as_deref().unwrap_or(Path::new("<defaults>")),
        catalog,
        |k| std::env::var(k).ok(),
    )?;
    let prompts = Prompts::load(&settings.prompts)?;
    let lexicon =
        empathy_gym::environment::sim::lexicon::Lexicon::load(&catalog.join("data/lexicon.yaml"))?;
    let backend: Box<dyn empathy_gym::environment::sim::llm::ChatBackend> = match settings.backend {
        Backend::Openai => {
            eprintln!(
                "simulator: llm, model {} at {} (prompts version {}, temperature {})",
                settings.model, settings.base_url, prompts.version, settings.temperature
            );
            Box::new(OpenAiBackend::new(settings.clone())?)
        }
        Backend::Local => {
            let path = settings
                .local_model
                .clone()
                .unwrap_or_else(empathy_gym::model::default_policy_path);
            let model = empathy_gym::model::load_model(
                &path,
                &candle_core::Device::Cpu,
                &empathy_gym::model::LoadOptions::default(),
            )?;
            eprintln!(
                "simulator: llm, local model {} (prompts version {}, temperature {})",
                model.name, prompts.version, settings.temperature
            );
            Box::new(LocalBackend::new(model, &settings))
        }
    };
    Ok(LlmSimulator::new(
        backend,
        prompts,
        settings.parse_retries,
        lexicon,
        empathy_gym::environment::sim::detect::SafetyScreen::load(
            catalog,
            Arc::new(Embedder::load_default()?),
        )?,
    ))
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

/// `p` under `root` unless it is absolute.
pub fn under(root: &std::path::Path, p: &std::path::Path) -> std::path::PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        root.join(p)
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
