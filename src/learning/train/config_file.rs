//! The training config file as written (first of two stages, STYLE "Config and errors"): serde
//! structs that mirror the YAML, reject unknown keys, and fill every absent key with its
//! documented default. [`super::config::TrainConfig`] validates it into the runtime struct; the
//! resolved file (all defaults explicit) is what `results/<run>/config.yaml` holds.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::stability::StabilityConfig;
use crate::environment::profile::auto::AutoSettings;
use crate::environment::profile::{Difficulty, KnobOverrides, Split};
use crate::environment::reward::{Aggregate, RewardMode};
use crate::environment::sim::SimulatorKind;
use crate::learning::credit::{AdvantageScale, Algorithm, Credit, PpoConfig};
use crate::learning::optimize::{AdamWConfig, LossConfig};
use crate::model::LoraConfig;

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrainConfigFile {
    /// Run name; results go to `<results_dir>/<run>/` (default "run").
    #[serde(default = "default_run")]
    pub run: String,
    /// Folder holding the runs (default "results").
    #[serde(default = "default_results_dir")]
    #[schemars(extend("x-path" = true))]
    pub results_dir: PathBuf,
    /// Seed of every random stream of the run (default 0).
    #[serde(default)]
    pub seed: u64,
    /// The advantage estimator: `grpo` (default), `ppo`, `rloo` or `reinforce_pp`
    /// (docs/DESIGN.md section 10; `configs/algorithms/` has one file per choice).
    #[serde(default)]
    pub algorithm: Algorithm,
    /// The policy model.
    #[serde(default)]
    pub model: ModelSection,
    /// LoRA adapters (default rank 16, alpha 32, all seven projections).
    #[serde(default)]
    pub lora: LoraConfig,
    /// The simulated user and the reward.
    #[serde(default)]
    pub env: EnvSection,
    /// Who plays the user: the built-in appraiser (default) or an LLM.
    #[serde(default)]
    pub simulator: SimulatorSection,
    /// How replies are sampled.
    #[serde(default)]
    pub sampling: SamplingSection,
    /// GRPO sizes and the loss.
    #[serde(default)]
    pub grpo: GrpoSection,
    /// PPO's critic and GAE (used by `algorithm: ppo`; `gamma` also by `reinforce_pp`).
    #[serde(default)]
    pub ppo: PpoConfig,
    /// AdamW, schedule and gradient clipping.
    #[serde(default)]
    pub optim: AdamWConfig,
    /// The subsampled KL estimate and the collapse flag's thresholds.
    #[serde(default)]
    pub stability: StabilityConfig,
    /// How often to checkpoint.
    #[serde(default)]
    pub checkpoint: CheckpointSection,
    /// Supervised fine-tuning on human support dialogues (`empathy-gym sft`; `train` ignores it).
    #[serde(default)]
    pub sft: SftSection,
}

fn default_run() -> String {
    "run".into()
}
fn default_results_dir() -> PathBuf {
    "results".into()
}

/// Where the compute runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeviceKind {
    /// The CPU (default).
    #[default]
    Cpu,
    /// The first CUDA GPU (needs a build with `--features cuda`).
    Cuda,
    /// The first CUDA GPU when the build has CUDA and a GPU is present, else the CPU.
    Auto,
}

/// Weight precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WeightDtype {
    /// 32-bit floats (default; the only sensible choice on CPU).
    #[default]
    F32,
    /// bfloat16 base weights (GPUs); adapters stay f32.
    Bf16,
}

/// How the CPU multiplies by the frozen weights (`model.cpu_matmul`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CpuMatmul {
    /// f32 products (default): the same numerics on every CPU.
    #[default]
    F32,
    /// bf16 products with f32 sums for the frozen projections and the vocabulary head (training,
    /// the old and reference log-probs, generation): on Intel AMX (Xeon 4th generation and
    /// later), by AVX-512 on CPUs without it (AMD Zen 4 and later, Intel Xeon Skylake-SP and
    /// later), by AVX2 on the rest (Intel Haswell and later, AMD Zen and later); the adapters and
    /// everything else stay f32.
    Bf16,
}

impl CpuMatmul {
    /// The default, left out of a written config so that runs without it keep their files.
    fn is_f32(&self) -> bool {
        *self == CpuMatmul::F32
    }
}

/// `model:`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelSection {
    /// An HF folder or a `.gguf` file; relative paths are relative to the working directory
    /// (default `null`: SmolLM2-135M-Instruct Q4_1 from the models folder, dequantized to f32).
    #[serde(default)]
    #[schemars(extend("x-path" = true))]
    pub path: Option<PathBuf>,
    /// `cpu` (default), `cuda` or `auto` (a GPU when there is one).
    #[serde(default)]
    pub device: DeviceKind,
    /// `f32` (default) or `bf16`.
    #[serde(default)]
    pub dtype: WeightDtype,
    /// `f32` (default) or `bf16`: the frozen weights' products on the CPU in bf16 (AMX, AVX-512
    /// or AVX2; docs/DESIGN.md, "bf16 products on the CPU").
    #[serde(default, skip_serializing_if = "CpuMatmul::is_f32")]
    #[schemars(extend("default" = CpuMatmul::default()))]
    pub cpu_matmul: CpuMatmul,
    /// Activation checkpointing per layer in the policy update (default false): the training
    /// forward keeps only each block's input and the backward runs the blocks again, for a
    /// peak memory of the block inputs plus one block's intermediates (docs/DESIGN.md,
    /// "Activation checkpointing"; results/perf/scale.md).
    #[serde(default)]
    pub gradient_checkpointing: bool,
}

/// `env:`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvSection {
    /// Which profiles are drawn each step (default `train`).
    #[serde(default = "default_split")]
    pub split: Split,
    /// Difficulty preset (default `moderate`, start emotion 40, SAGE), or `auto`: a controller
    /// moves the knobs between steps to keep the batch where GRPO learns (`env.auto`).
    #[serde(default = "default_difficulty")]
    pub difficulty: Difficulty,
    /// Per-knob overrides of the preset (e.g. `max_turns: 3`); default none. With `auto` they
    /// hold the knobs they set fixed.
    #[serde(default)]
    pub knobs: KnobOverrides,
    /// The controller of `difficulty: auto` (target emotion, target spread, gain, smoothing,
    /// start level); absent for a preset, the documented defaults for `auto` when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto: Option<AutoSettings>,
    /// `behavior` (default, RLVER) or `trait` (context-free warmth).
    #[serde(default)]
    pub reward_mode: RewardMode,
    /// How the behavior reward reads the trajectory: `final` (default), `mean`, `dense`.
    #[serde(default)]
    pub aggregate: Aggregate,
    /// The policy's system prompt (default `null`: the built-in listener prompt).
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// Think-then-say: ask for `<think>...</think>` before the reply (default false). A Qwen3
    /// policy thinks natively with it (its template's `enable_thinking`), and answers directly
    /// without it.
    #[serde(default)]
    pub think: bool,
}

fn default_split() -> Split {
    Split::Train
}
fn default_difficulty() -> Difficulty {
    Difficulty::Moderate
}

impl Default for EnvSection {
    fn default() -> Self {
        EnvSection {
            split: default_split(),
            difficulty: default_difficulty(),
            knobs: KnobOverrides::default(),
            auto: None,
            reward_mode: RewardMode::default(),
            aggregate: Aggregate::default(),
            system_prompt: None,
            think: false,
        }
    }
}

/// `simulator:`: the simulated user the run trains against (the `--simulator` and
/// `--simulator-config` flags of `rollout`, `eval` and `replay`, as config keys).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimulatorSection {
    /// `appraiser` (default: the built-in, deterministic appraiser) or `llm` (an LLM plays the
    /// user over an OpenAI-compatible endpoint or in-process; docs/SERVE.md).
    #[serde(default)]
    pub kind: SimulatorKind,
    /// For `kind: llm`: the LLM user's settings file (endpoint, model, concurrency, timeouts,
    /// retries; the keys of `configs/simulator/llm.yaml`), relative to the working directory.
    /// Default `null`: `configs/simulator/llm.yaml` of the catalog when present, else the built-in
    /// defaults. The environment (`EMPATHY_GYM_LLM_BASE_URL`, `EMPATHY_GYM_LLM_MODEL`,
    /// `EMPATHY_GYM_LLM_API_KEY`) overrides the file, as for `--simulator llm`.
    #[serde(default)]
    #[schemars(extend("x-path" = true))]
    pub config: Option<PathBuf>,
    /// For `kind: appraiser`: where its sentence embeddings (all-MiniLM-L6-v2) and its fluency
    /// judge (SmolLM2-135M-Instruct) run, `cpu`, `cuda` or `auto` as `model.device`. Default
    /// `null`: the policy's device, so a GPU run appraises on the GPU. Records name a GPU
    /// (`simulator.device`), and `replay verify` re-runs them there (docs/DESIGN.md,
    /// "Determinism").
    #[serde(default)]
    pub device: Option<DeviceKind>,
}

/// `sampling:`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SamplingSection {
    /// Softmax temperature, > 0 (default 1.0: on-policy samples, as GRPO assumes).
    #[serde(default = "default_temperature")]
    pub temperature: f64,
    /// Nucleus mass in (0, 1] (default 1.0 = no truncation).
    #[serde(default = "default_top_p")]
    pub top_p: f64,
    /// Cap on tokens per reply (default 96).
    #[serde(default = "default_max_new_tokens")]
    pub max_new_tokens: usize,
}

fn default_temperature() -> f64 {
    1.0
}
fn default_top_p() -> f64 {
    1.0
}
fn default_max_new_tokens() -> usize {
    96
}

impl Default for SamplingSection {
    fn default() -> Self {
        SamplingSection {
            temperature: default_temperature(),
            top_p: default_top_p(),
            max_new_tokens: default_max_new_tokens(),
        }
    }
}

/// `grpo:`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrpoSection {
    /// Training steps (one rollout batch each; default 100).
    #[serde(default = "default_steps")]
    pub steps: u64,
    /// Profiles per step, P (default 4).
    #[serde(default = "default_profiles")]
    pub profiles_per_step: usize,
    /// Dialogues per profile, G in the GRPO paper (default 4, RLVER).
    #[serde(default = "default_group")]
    pub group_size: usize,
    /// Updates per batch, mu in the GRPO paper (default 1; > 1 stores old log-probs once).
    #[serde(default = "default_iterations")]
    pub iterations: usize,
    /// Advantage scale: `group` (default), `batch` or `none` (Dr. GRPO).
    #[serde(default)]
    pub advantage_scale: AdvantageScale,
    /// Leave groups whose rewards are all equal out of the update (default false; they have zero
    /// advantage, but still count in token_mean's normalizer when kept).
    #[serde(default)]
    pub drop_zero_std: bool,
    /// How GRPO's advantage is spread over the turns: `episode` (default, one per dialogue) or
    /// `turn` (each turn's return-to-go, normalized across the group at the same turn index;
    /// meaningful with `env.aggregate: dense`). `turn` is refused with other algorithms, which
    /// ignore it (PPO and REINFORCE++ already credit every token, RLOO is per dialogue).
    #[serde(default)]
    pub credit: Credit,
    /// DAPO's dynamic sampling (Yu et al. 2025): groups whose rewards are all equal are replaced
    /// by groups on freshly drawn profiles, at most this many extra groups per step (default 0:
    /// off). The count drawn is logged as `extra_draws`.
    #[serde(default)]
    pub dynamic_sampling_draws: usize,
    /// Dialogues per forward/backward pass; gradients accumulate over the batch (default 4).
    #[serde(default = "default_micro_batch")]
    pub micro_batch: usize,
    /// Clip bounds, KL weight beta (0 skips the reference pass), token aggregation.
    #[serde(default)]
    pub loss: LossConfig,
}

fn default_steps() -> u64 {
    100
}
fn default_profiles() -> usize {
    4
}
fn default_group() -> usize {
    4
}
fn default_iterations() -> usize {
    1
}
fn default_micro_batch() -> usize {
    4
}

impl Default for GrpoSection {
    fn default() -> Self {
        GrpoSection {
            steps: default_steps(),
            profiles_per_step: default_profiles(),
            group_size: default_group(),
            iterations: default_iterations(),
            advantage_scale: AdvantageScale::default(),
            drop_zero_std: false,
            credit: Credit::default(),
            dynamic_sampling_draws: 0,
            micro_batch: default_micro_batch(),
            loss: LossConfig::default(),
        }
    }
}

/// `checkpoint:`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointSection {
    /// Save every this many steps (default 10); the last step is always saved.
    #[serde(default = "default_every")]
    pub every: u64,
}

fn default_every() -> u64 {
    10
}

impl Default for CheckpointSection {
    fn default() -> Self {
        CheckpointSection {
            every: default_every(),
        }
    }
}

/// `sft:` (`empathy-gym sft`, docs/DESIGN.md section 24): LoRA on the supporter turns of human
/// support dialogues, the rest of each dialogue masked out of the loss.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SftSection {
    /// Dialogue files the user provides, each read as `judge` reads it: ESConv's JSON shape
    /// (`.json`, or `.jsonl` of one dialogue per line) or (seeker_post, response_post) pairs
    /// (`.csv`, EPITOME's columns). Default none.
    #[serde(default)]
    #[schemars(extend("x-path" = true))]
    pub dialogues: Vec<PathBuf>,
    /// EPITOME's dataset folder (its three CSV files): the dev part's (post, response) pairs; the
    /// test part is never trained on. Default none.
    #[serde(default)]
    #[schemars(extend("x-path" = true))]
    pub epitome: Option<PathBuf>,
    /// EPITOME responses whose three levels sum below this are left out (0-6; default 1: a
    /// response with no reaction, interpretation or exploration at all is not trained on).
    #[serde(default = "default_epitome_min_total")]
    pub epitome_min_total: u8,
    /// Supporter turns per training example: a dialogue is cut into consecutive windows, each
    /// opening with the seeker's message (default 3, the length of the environment's dialogues).
    #[serde(default = "default_turns_per_example")]
    pub turns_per_example: usize,
    /// Longest example in tokens, system prompt included; turns that do not fit are dropped from
    /// the window's end, and a window whose first turn does not fit is skipped (default 512).
    #[serde(default = "default_max_tokens")]
    pub max_tokens: usize,
    /// Share of the dialogues held out to measure the loss on, chosen by a hash of each
    /// dialogue's id and the run's seed (default 0.05).
    #[serde(default = "default_validation_share")]
    pub validation_share: f64,
    /// Optimizer steps (default 200).
    #[serde(default = "default_sft_steps")]
    pub steps: u64,
    /// Examples per step; the loss is the mean over their supporter tokens (default 8).
    #[serde(default = "default_sft_batch")]
    pub batch: usize,
    /// Examples per forward/backward pass; gradients accumulate over the step (default 4).
    #[serde(default = "default_micro_batch")]
    pub micro_batch: usize,
}

fn default_epitome_min_total() -> u8 {
    1
}
fn default_turns_per_example() -> usize {
    3
}
fn default_max_tokens() -> usize {
    512
}
fn default_validation_share() -> f64 {
    0.05
}
fn default_sft_steps() -> u64 {
    200
}
fn default_sft_batch() -> usize {
    8
}

impl Default for SftSection {
    fn default() -> Self {
        SftSection {
            dialogues: Vec::new(),
            epitome: None,
            epitome_min_total: default_epitome_min_total(),
            turns_per_example: default_turns_per_example(),
            max_tokens: default_max_tokens(),
            validation_share: default_validation_share(),
            steps: default_sft_steps(),
            batch: default_sft_batch(),
            micro_batch: default_micro_batch(),
        }
    }
}
