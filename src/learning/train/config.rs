//! The validated training configuration (second of two stages): [`TrainConfig::load`] reads a
//! YAML file, applies `--set` overrides to its tree, parses it into [`TrainConfigFile`] (unknown
//! keys rejected, defaults filled) and checks every range, naming the file and the field of any
//! bad value and what to use instead.

use std::path::{Path, PathBuf};

use serde_yaml::Value;

use super::config_file::{CpuMatmul, DeviceKind, TrainConfigFile, WeightDtype};
use super::overrides::{apply_overrides, Override};
use crate::environment::profile::auto::AutoSettings;
use crate::environment::profile::Difficulty;
use crate::environment::sim::SimulatorKind;
use crate::error::{Error, Result};
use crate::learning::credit::{Algorithm, Credit};
use crate::model::{default_policy_path, SamplingParams};

/// A checked configuration, with the resolved file it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainConfig {
    /// The resolved file: every default explicit (written to `<run_dir>/config.yaml`).
    pub file: TrainConfigFile,
    /// `<results_dir>/<run>`.
    pub run_dir: PathBuf,
    /// The policy model file or folder.
    pub model_path: PathBuf,
    /// Sampling as the generator takes it.
    pub sampling: SamplingParams,
}

impl TrainConfig {
    /// Reads `path`, applies `sets` and validates.
    pub fn load(path: &Path, sets: &[Override]) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Self::from_yaml(&text, path, sets)
    }

    /// Parses YAML `text` (from `path`, named in errors), applies `sets` and validates.
    pub fn from_yaml(text: &str, path: &Path, sets: &[Override]) -> Result<Self> {
        let mut tree: Value = serde_yaml::from_str(text).map_err(|e| yaml_error(path, &e))?;
        if !sets.is_empty() {
            apply_overrides(&mut tree, sets)?;
        }
        if tree.is_null() {
            tree = Value::Mapping(Default::default());
        }
        let file: TrainConfigFile = serde_yaml::from_value(tree).map_err(|e| {
            let from = if sets.is_empty() {
                String::new()
            } else {
                " (file with --set overrides)".to_string()
            };
            Error::input(
                path,
                format!("document{from}"),
                format!("{e}; see configs/quickstart.yaml for the keys and their defaults"),
            )
        })?;
        Self::validate(file, path)
    }

    /// Checks ranges, resolves paths and writes `env.auto`'s defaults out for `difficulty: auto`.
    pub fn validate(mut file: TrainConfigFile, path: &Path) -> Result<Self> {
        check_file(&file, path)?;
        if file.env.difficulty == Difficulty::Auto {
            file.env.auto.get_or_insert_with(AutoSettings::default);
        }
        let model_path = file.model.path.clone().unwrap_or_else(default_policy_path);
        let s = &file.sampling;
        let sampling = SamplingParams {
            temperature: s.temperature,
            top_p: s.top_p,
            max_new_tokens: s.max_new_tokens,
            greedy: false,
        };
        Ok(TrainConfig {
            run_dir: file.results_dir.join(&file.run),
            model_path,
            sampling,
            file,
        })
    }

    /// The resolved file as YAML.
    pub fn to_yaml(&self) -> Result<String> {
        serde_yaml::to_string(&self.file)
            .map_err(|e| Error::Other(format!("cannot write the resolved config: {e}")))
    }

    /// Dialogues per step: P x G.
    pub fn batch_size(&self) -> usize {
        self.file.grpo.profiles_per_step * self.file.grpo.group_size
    }
}

fn yaml_error(path: &Path, e: &serde_yaml::Error) -> Error {
    let location = match e.location() {
        Some(l) => format!("line {}, column {}", l.line(), l.column()),
        None => "document".into(),
    };
    Error::input(path, location, format!("{e}; fix the YAML"))
}

/// Every range check, in file order; the first failure is returned.
fn check_file(f: &TrainConfigFile, path: &Path) -> Result<()> {
    let bad = |field: &str, msg: String| Err(Error::input(path, field, msg));
    let run_ok = !f.run.is_empty()
        && f.run != "."
        && f.run != ".."
        && f.run
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.+=,".contains(c));
    if !run_ok {
        return bad(
            "run",
            format!(
                "{:?} is not a usable run name: use letters, digits and - _ . + = , (a sweep \
                 names its cells like `difficulty=hard,seed=0`)",
                f.run
            ),
        );
    }
    if let Err(msg) = f.lora.check() {
        return bad("lora", msg);
    }
    let s = &f.sampling;
    if !positive(s.temperature) {
        return bad(
            "sampling.temperature",
            format!(
                "must be > 0 (GRPO samples; default 1.0), got {}",
                s.temperature
            ),
        );
    }
    if !(s.top_p > 0.0 && s.top_p <= 1.0) {
        return bad(
            "sampling.top_p",
            format!("must be in (0, 1], got {}", s.top_p),
        );
    }
    if s.max_new_tokens == 0 {
        return bad(
            "sampling.max_new_tokens",
            "must be at least 1 (default 96)".into(),
        );
    }
    check_model(f, path)?;
    check_env(f, path)?;
    check_simulator(f, path)?;
    check_grpo(f, path)?;
    check_credit(f, path)?;
    check_ppo(f, path)?;
    check_optim(f, path)?;
    if f.checkpoint.every == 0 {
        return bad("checkpoint.every", "must be at least 1 (default 10)".into());
    }
    check_sft(f, path)
}

/// `sft:`'s sizes; whether its files exist is checked where `empathy-gym sft` reads them.
fn check_sft(f: &TrainConfigFile, path: &Path) -> Result<()> {
    let s = &f.sft;
    let bad = |field: &str, msg: &str| Err(Error::input(path, format!("sft.{field}"), msg));
    if s.epitome_min_total > 6 {
        return bad(
            "epitome_min_total",
            "must be 0-6 (the sum of three levels of 0-2; default 1)",
        );
    }
    if s.turns_per_example == 0 {
        return bad("turns_per_example", "must be at least 1 (default 3)");
    }
    if s.max_tokens < 16 {
        return bad("max_tokens", "must be at least 16 (default 512)");
    }
    if !(0.0..1.0).contains(&s.validation_share) {
        return bad("validation_share", "must be in [0, 1) (default 0.05)");
    }
    if s.steps == 0 {
        return bad("steps", "must be at least 1 (default 200)");
    }
    if s.batch == 0 {
        return bad("batch", "must be at least 1 (default 8)");
    }
    if s.micro_batch == 0 {
        return bad("micro_batch", "must be at least 1 (default 4)");
    }
    Ok(())
}

/// `model.cpu_matmul: bf16` multiplies f32 weights on the CPU. Whether the CPU runs it is checked
/// where the model loads (`load::load_policy`): a config may be written on another machine
/// than the one that runs it.
fn check_model(f: &TrainConfigFile, path: &Path) -> Result<()> {
    let m = &f.model;
    let why = match (m.cpu_matmul, m.device, m.dtype) {
        (CpuMatmul::F32, _, _) => return Ok(()),
        (CpuMatmul::Bf16, DeviceKind::Cuda, _) => {
            "is a CPU setting and model.device is cuda: on a GPU set model.dtype: bf16 instead"
        }
        (CpuMatmul::Bf16, _, WeightDtype::Bf16) => {
            "multiplies f32 weights and model.dtype is bf16: set model.dtype: f32"
        }
        (CpuMatmul::Bf16, _, WeightDtype::F32) => return Ok(()),
    };
    Err(Error::input(
        path,
        "model.cpu_matmul",
        format!("bf16 {why}, or set model.cpu_matmul: f32 (the default)"),
    ))
}

fn check_env(f: &TrainConfigFile, path: &Path) -> Result<()> {
    let e = &f.env;
    e.knobs.check_ranges(path, "env.knobs.")?;
    match (&e.auto, e.difficulty) {
        (Some(_), d) if d != Difficulty::Auto => Err(Error::input(
            path,
            "env.auto",
            format!(
                "is set but env.difficulty is {d}: set env.difficulty: auto, or remove env.auto"
            ),
        )),
        (Some(a), _) => a.check().map_err(|msg| Error::input(path, "env.auto", msg)),
        (None, _) => Ok(()),
    }
}

/// `simulator.config` belongs to the LLM user and must be a file; the file's own keys are checked
/// when the simulator is built (errors name that file and its field).
fn check_simulator(f: &TrainConfigFile, path: &Path) -> Result<()> {
    let s = &f.simulator;
    match (&s.config, s.kind) {
        (Some(_), SimulatorKind::Appraiser) => Err(Error::input(
            path,
            "simulator.config",
            "is set but simulator.kind is appraiser: set simulator.kind: llm, or remove \
             simulator.config",
        )),
        (Some(file), SimulatorKind::Llm) if !file.is_file() => Err(Error::input(
            path,
            "simulator.config",
            format!(
                "{} is not a file (relative paths are relative to the working directory; \
                 null uses configs/simulator/llm.yaml)",
                file.display()
            ),
        )),
        _ if s.device.is_some() && s.kind == SimulatorKind::Llm => Err(Error::input(
            path,
            "simulator.device",
            "is set but simulator.kind is llm, which embeds nothing: remove simulator.device",
        )),
        _ => Ok(()),
    }
}

fn check_grpo(f: &TrainConfigFile, path: &Path) -> Result<()> {
    let bad = |field: &str, msg: &str| Err(Error::input(path, field, msg.to_string()));
    let g = &f.grpo;
    if g.steps == 0 {
        return bad("grpo.steps", "must be at least 1 (default 100)");
    }
    if g.profiles_per_step == 0 {
        return bad("grpo.profiles_per_step", "must be at least 1 (default 4)");
    }
    if g.group_size < 2 {
        return bad(
            "grpo.group_size",
            "must be at least 2: advantages compare the dialogues of a group (default 4, RLVER)",
        );
    }
    if g.iterations == 0 {
        return bad("grpo.iterations", "must be at least 1 (default 1)");
    }
    if g.micro_batch == 0 {
        return bad("grpo.micro_batch", "must be at least 1 (default 4)");
    }
    let l = &g.loss;
    if !(0.0..1.0).contains(&l.eps_low) {
        return bad("grpo.loss.eps_low", "must be in [0, 1) (default 0.2)");
    }
    if !non_negative(l.eps_high) {
        return bad("grpo.loss.eps_high", "must be >= 0 (default 0.28)");
    }
    if !non_negative(l.beta) {
        return bad(
            "grpo.loss.beta",
            "must be >= 0 (default 0: no KL, no reference pass)",
        );
    }
    Ok(())
}

/// `grpo.credit: turn` is GRPO's: `train::estimate` reads it only for `algorithm: grpo`, so with
/// another algorithm it would be ignored without a word. Refused instead, with what to use.
fn check_credit(f: &TrainConfigFile, path: &Path) -> Result<()> {
    if f.grpo.credit == Credit::Episode {
        return Ok(());
    }
    let why = match f.algorithm {
        Algorithm::Grpo => return Ok(()),
        Algorithm::Ppo => {
            "PPO already gives every token its own advantage (GAE over the per-turn rewards)"
        }
        Algorithm::ReinforcePp => {
            "REINFORCE++ already gives every token its own discounted return-to-go"
        }
        Algorithm::Rloo => {
            "RLOO's leave-one-out baseline is one advantage per dialogue; for per-turn credit use \
             algorithm: grpo with grpo.credit: turn, or reinforce_pp or ppo"
        }
    };
    Err(Error::input(
        path,
        "grpo.credit",
        format!(
            "`turn` is turn-level credit for algorithm: grpo only, and {} ignores it: {why}. \
             Remove grpo.credit (or set it to episode); for per-turn rewards set \
             env.aggregate: dense",
            f.algorithm
        ),
    ))
}

fn check_ppo(f: &TrainConfigFile, path: &Path) -> Result<()> {
    let bad = |field: &str, msg: &str| Err(Error::input(path, field, msg.to_string()));
    let p = &f.ppo;
    if !(0.0..=1.0).contains(&p.gamma) {
        return bad("ppo.gamma", "must be in [0, 1] (default 1, verl)");
    }
    if !(0.0..=1.0).contains(&p.lambda) {
        return bad("ppo.lambda", "must be in [0, 1] (default 1, verl)");
    }
    if !positive(p.cliprange_value) {
        return bad("ppo.cliprange_value", "must be > 0 (default 0.5, verl)");
    }
    if !positive(p.critic_lr) {
        return bad("ppo.critic_lr", "must be a positive number (default 1e-5)");
    }
    if p.critic_warmup >= f.grpo.steps && f.algorithm.has_critic() {
        return bad(
            "ppo.critic_warmup",
            "must be below grpo.steps, or the policy is never trained (default 0)",
        );
    }
    let s = &f.stability;
    for (field, x) in [
        ("stability.entropy_frac", s.entropy_frac),
        ("stability.length_frac", s.length_frac),
        ("stability.repeat_rate", s.repeat_rate),
    ] {
        if !(0.0..=1.0).contains(&x) {
            return bad(field, "must be in [0, 1] (defaults 0.2, 0.3, 0.5)");
        }
    }
    Ok(())
}

fn check_optim(f: &TrainConfigFile, path: &Path) -> Result<()> {
    let bad = |field: &str, msg: &str| Err(Error::input(path, field, msg.to_string()));
    let o = &f.optim;
    if !positive(o.lr) {
        return bad("optim.lr", "must be a positive number (default 1e-5)");
    }
    if !(0.0..1.0).contains(&o.beta1) || !(0.0..1.0).contains(&o.beta2) {
        return bad(
            "optim.beta1",
            "beta1 and beta2 must be in [0, 1) (defaults 0.9, 0.999)",
        );
    }
    if !positive(o.eps) || !non_negative(o.weight_decay) {
        return bad(
            "optim.eps",
            "eps must be > 0 and weight_decay >= 0 (defaults 1e-8, 0.01)",
        );
    }
    if o.max_grad_norm.is_some_and(|m| !positive(m)) {
        return bad(
            "optim.max_grad_norm",
            "must be > 0, or null to turn clipping off (default 1.0)",
        );
    }
    Ok(())
}

/// A finite number above 0.
fn positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

/// A finite number at least 0.
fn non_negative(x: f64) -> bool {
    x.is_finite() && x >= 0.0
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
