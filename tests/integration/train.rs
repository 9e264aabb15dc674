//! The trainer end to end on a tiny random Llama written on the fly (tests/integration/
//! model_fixtures.rs) against a scripted user: GRPO raises a verifiable reward; a run stopped and
//! resumed, or killed in the middle of a checkpoint write, ends exactly where an uninterrupted
//! run ends; an exported folder reloads with the trained logits; each dialogue's token sequence
//! is the template's text around the sampled ids.

use std::path::Path;

use anyhow::Result;
use candle_core::Device;
use empathy_gym::environment::episode::{
    rollout, EpisodeJob, EpisodeRecord, ModelPolicy, RolloutOptions, Turn,
};
use empathy_gym::environment::profile::{KnobOverrides, Profile, Split};
use empathy_gym::environment::sim::{Appraisal, AppraisalInput, Simulator, SimulatorInfo};
use empathy_gym::learning::train::{
    difficulty_plan, export_run, load_checkpoint_policy, load_policy, read_metrics, RewardSource,
    StepMetrics, TokenSequence, TrainConfig, TrainPolicy, Trainer, TrainerParts,
};
use empathy_gym::model::{load_model, AdapterMode, ChatModel, LoadOptions, Pass};

use crate::common::catalog;
use crate::model_fixtures::{id_of, write_hf, TinySpec};

/// A user who never changes: every reply is appraised as neutral (the reward comes from elsewhere).
pub struct FlatUser;

impl Simulator for FlatUser {
    fn info(&self) -> SimulatorInfo {
        SimulatorInfo {
            kind: "flat".into(),
            version: "1".into(),
            ..Default::default()
        }
    }

    fn appraise(&self, inputs: &[AppraisalInput<'_>]) -> empathy_gym::Result<Vec<Appraisal>> {
        Ok(inputs.iter().map(|_| Appraisal::default()).collect())
    }
}

/// The verifiable reward: the share of the replies' characters that are the letter 'e'
/// (a random tiny model writes about 1 in 260).
pub fn share_of_e(rec: &EpisodeRecord) -> f64 {
    let text: String = rec.assistant_turns().iter().map(|(t, _)| *t).collect();
    let n = text.chars().count();
    if n == 0 {
        return 0.0;
    }
    text.chars().filter(|&c| c == 'e').count() as f64 / n as f64
}

/// A denser reward for the runs that test resume and export (almost every group has spread, so
/// every step updates): the share of ASCII lowercase letters.
pub fn share_of_lowercase(rec: &EpisodeRecord) -> f64 {
    let text: String = rec.assistant_turns().iter().map(|(t, _)| *t).collect();
    let n = text.chars().count().max(1);
    text.chars().filter(char::is_ascii_lowercase).count() as f64 / n as f64
}

/// A tiny HF Llama with room for long dialogues.
pub fn tiny_model_dir() -> Result<tempfile::TempDir> {
    let dir = tempfile::tempdir()?;
    write_hf(dir.path(), &TinySpec::llama())?;
    let cfg_path = dir.path().join("config.json");
    let mut cfg: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&cfg_path)?)?;
    cfg["max_position_embeddings"] = serde_json::json!(4096);
    std::fs::write(&cfg_path, serde_json::to_string(&cfg)?)?;
    Ok(dir)
}

pub fn config(model: &Path, results: &Path, extra: &str) -> Result<TrainConfig> {
    let text = format!(
        "run: t\nresults_dir: {}\nmodel:\n  path: {}\n{extra}",
        results.display(),
        model.display()
    );
    Ok(TrainConfig::from_yaml(&text, Path::new("test.yaml"), &[])?)
}

/// The first `n` train profiles with `max_turns` replies each.
fn profiles(n: usize, max_turns: u32) -> Vec<Profile> {
    let knobs = KnobOverrides {
        max_turns: Some(max_turns),
        ..KnobOverrides::default()
    };
    let cat = catalog();
    cat.split(Split::Train)
        .iter()
        .take(n)
        .map(|id| cat.profile(id, cat_difficulty(), &knobs).unwrap())
        .collect()
}

fn cat_difficulty() -> empathy_gym::environment::profile::Difficulty {
    empathy_gym::environment::profile::Difficulty::Moderate
}

pub fn parts<'a>(
    cfg: TrainConfig,
    reward: &'a dyn RewardSource,
    max_turns: u32,
) -> Result<TrainerParts<'a>> {
    let model = load_policy(&cfg, &Device::Cpu)?;
    let difficulty = difficulty_plan(catalog(), &cfg);
    Ok(TrainerParts {
        cfg,
        model,
        sim: &FlatUser,
        reward,
        profiles: profiles(4, max_turns),
        difficulty,
        progress: false,
    })
}

/// A config that exercises every path: several turns, mu = 2 (stored old log-probs), beta > 0
/// (reference pass), uneven micro-batches, LoRA dropout, zero-std groups dropped.
pub const FULL: &str = "env:\n  system_prompt: Be brief.\n  knobs:\n    max_turns: 2\n\
sampling:\n  max_new_tokens: 6\n\
lora:\n  rank: 4\n  dropout: 0.1\n\
grpo:\n  steps: 4\n  profiles_per_step: 2\n  group_size: 3\n  iterations: 2\n  micro_batch: 4\n  drop_zero_std: true\n  loss:\n    beta: 0.05\n\
optim:\n  lr: 0.01\n  schedule:\n    kind: cosine\n    warmup_steps: 1\n    total_steps: 4\n\
checkpoint:\n  every: 2\n";

/// Metrics rows without the timing columns (which differ between runs).
pub fn untimed(rows: &[StepMetrics]) -> Vec<StepMetrics> {
    rows.iter()
        .map(|m| StepMetrics {
            t_rollout_s: 0.0,
            t_simulate_s: 0.0,
            t_train_s: 0.0,
            t_logprob_s: 0.0,
            t_forward_s: 0.0,
            t_backward_s: 0.0,
            t_optimizer_s: 0.0,
            tokens_per_s: 0.0,
            ..m.clone()
        })
        .collect()
}

pub fn adapter_bits(model: &ChatModel) -> Result<Vec<(String, Vec<u32>)>> {
    model
        .trainable()
        .into_iter()
        .map(|(n, v)| {
            let bits = v
                .as_tensor()
                .flatten_all()?
                .to_vec1::<f32>()?
                .iter()
                .map(|x| x.to_bits())
                .collect();
            Ok((n, bits))
        })
        .collect()
}

/// What a finished run leaves: metrics rows, episodes file, adapters.
struct Outcome {
    rows: Vec<StepMetrics>,
    episodes: String,
    adapters: Vec<(String, Vec<u32>)>,
}

fn outcome(t: &Trainer<'_>) -> Result<Outcome> {
    let dir = t.run_dir();
    Ok(Outcome {
        rows: untimed(&read_metrics(&dir.join("metrics.csv"))?),
        episodes: std::fs::read_to_string(dir.join("episodes.jsonl"))?,
        adapters: adapter_bits(t.model())?,
    })
}

fn uninterrupted(model: &Path, results: &Path) -> Result<Outcome> {
    uninterrupted_with(model, results, FULL)
}

fn uninterrupted_with(model: &Path, results: &Path, text: &str) -> Result<Outcome> {
    let reward = share_of_lowercase;
    let mut t = Trainer::start(parts(config(model, results, text)?, &reward, 2)?)?;
    t.run(None)?;
    assert_eq!(t.steps_done(), 4);
    assert!(results.join("t/reward.svg").is_file() && results.join("t/emotion.svg").is_file());
    outcome(&t)
}

fn assert_same(a: &Outcome, b: &Outcome) {
    assert_eq!(a.rows, b.rows);
    assert_eq!(a.episodes, b.episodes);
    assert!(a.adapters == b.adapters, "adapters differ");
}

#[test]
fn grpo_raises_a_verifiable_reward_on_a_tiny_model() -> Result<()> {
    let model = tiny_model_dir()?;
    let results = tempfile::tempdir()?;
    let extra = "env:\n  system_prompt: Be brief.\n\
sampling:\n  max_new_tokens: 8\n\
lora:\n  rank: 8\n\
grpo:\n  steps: 30\n  profiles_per_step: 2\n  group_size: 8\n  micro_batch: 16\n\
optim:\n  lr: 0.02\n  max_grad_norm: null\n\
checkpoint:\n  every: 100\n";
    let reward = share_of_e;
    let mut t = Trainer::start(parts(
        config(model.path(), results.path(), extra)?,
        &reward,
        1,
    )?)?;
    let rows = t.run(None)?;
    let mean = |r: &[StepMetrics]| r.iter().map(|m| m.reward_mean).sum::<f64>() / r.len() as f64;
    let (first, last) = (mean(&rows[..5]), mean(&rows[25..]));
    eprintln!("share of 'e': first 5 steps {first:.4}, last 5 steps {last:.4}");
    for m in &rows {
        eprintln!(
            "{} {:.4} zero-std {:.2} grad {:?}",
            m.step, m.reward_mean, m.frac_reward_zero_std, m.grad_norm
        );
    }
    assert!(
        last > first + 0.1 && last > 3.0 * first,
        "{first} -> {last}"
    );
    Ok(())
}

/// `model.gradient_checkpointing: true` trains the adapters a plain run trains (LoRA dropout,
/// mu = 2 and a KL term included), up to the rounding of summing the gradients block by block.
#[test]
fn a_run_with_gradient_checkpointing_trains_as_one_without() -> Result<()> {
    let model = tiny_model_dir()?;
    let (a, b) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let plain = uninterrupted(model.path(), a.path())?;
    let mut cfg = config(model.path(), b.path(), FULL)?;
    cfg.file.model.gradient_checkpointing = true;
    let reward = share_of_lowercase;
    let mut t = Trainer::start(parts(cfg, &reward, 2)?)?;
    t.run(None)?;
    let checkpointed = outcome(&t)?;
    assert_eq!(checkpointed.episodes, plain.episodes);
    for ((name, x), (_, y)) in checkpointed.adapters.iter().zip(&plain.adapters) {
        let worst = x
            .iter()
            .zip(y)
            .map(|(x, y)| (f32::from_bits(*x) - f32::from_bits(*y)).abs())
            .fold(0f32, f32::max);
        assert!(worst < 1e-5, "{name}: {worst}");
    }
    Ok(())
}

#[test]
fn stopped_and_resumed_run_equals_an_uninterrupted_one() -> Result<()> {
    let model = tiny_model_dir()?;
    let a_dir = tempfile::tempdir()?;
    let a = uninterrupted(model.path(), a_dir.path())?;
    assert_eq!(a.rows.len(), 4);
    assert!(a.rows.iter().all(|m| m.kl.is_some() && m.entropy.is_some()));
    assert!(a
        .rows
        .iter()
        .all(|m| m.difficulty_level.is_none() && m.start_emotion == 40.0 && m.acceptance == 0.25));
    stop_and_resume_matches(model.path(), FULL, &a)
}

/// `difficulty: auto` against a user whose emotion never moves (final emotion = start emotion,
/// below the target 50): the controller eases the knobs every step, and a resumed run rebuilds
/// the controller from metrics.csv and continues bit for bit.
#[test]
fn auto_difficulty_moves_the_knobs_and_resumes_bit_for_bit() -> Result<()> {
    let model = tiny_model_dir()?;
    let a_dir = tempfile::tempdir()?;
    let text = FULL.replacen("env:\n", "env:\n  difficulty: auto\n", 1);
    let a = uninterrupted_with(model.path(), a_dir.path(), &text)?;
    let levels: Vec<f64> = a.rows.iter().map(|m| m.difficulty_level.unwrap()).collect();
    assert_eq!(levels[0], 0.5);
    assert!(levels.windows(2).all(|w| w[1] < w[0]), "{levels:?}");
    let starts: Vec<f64> = a.rows.iter().map(|m| m.start_emotion).collect();
    assert!(starts[3] > starts[0], "{starts:?}");
    // Each dialogue starts at its step's knobs and says it ran at `auto`.
    for line in a.episodes.lines() {
        let rec: EpisodeRecord = serde_json::from_str(line)?;
        let row = &a.rows[rec.step as usize - 1];
        assert_eq!(rec.profile.difficulty.as_str(), "auto");
        let knobs = rec.profile.knobs.expect("records hold their knobs");
        assert_eq!(
            (knobs.acceptance, knobs.hint_rate),
            (row.acceptance, row.hint_rate)
        );
    }
    assert!(a_dir.path().join("t/difficulty.svg").is_file());
    stop_and_resume_matches(model.path(), &text, &a)
}

/// Runs `text` to step 2, resumes it from its config.yaml to the end, and compares with `a`.
fn stop_and_resume_matches(model: &Path, text: &str, a: &Outcome) -> Result<()> {
    let b_dir = tempfile::tempdir()?;
    let reward = share_of_lowercase;
    {
        let mut t = Trainer::start(parts(config(model, b_dir.path(), text)?, &reward, 2)?)?;
        t.run(Some(2))?;
        assert_eq!(t.steps_done(), 2);
    }
    let cfg = TrainConfig::load(&b_dir.path().join("t/config.yaml"), &[])?;
    let mut t = Trainer::resume(parts(cfg, &reward, 2)?)?;
    assert_eq!(t.steps_done(), 2);
    t.run(None)?;
    assert_same(a, &outcome(&t)?);
    Ok(())
}

#[test]
fn run_killed_mid_checkpoint_write_resumes_from_the_previous_one() -> Result<()> {
    let model = tiny_model_dir()?;
    let a_dir = tempfile::tempdir()?;
    let a = uninterrupted(model.path(), a_dir.path())?;

    let b_dir = tempfile::tempdir()?;
    let run = b_dir.path().join("t");
    let reward = share_of_lowercase;
    {
        let mut t = Trainer::start(parts(
            config(model.path(), b_dir.path(), FULL)?,
            &reward,
            2,
        )?)?;
        t.run(Some(3))?;
    }
    // Make it look as if the process died while writing step 3's checkpoint: metrics row 3 and
    // the step's dialogues are on disk, plus half a row of step 4; step-3 exists only as a temp
    // directory with a cut adapters file and a half-written pointer; `latest` still names step-2.
    let ck = run.join("checkpoints");
    std::fs::rename(ck.join("step-3"), ck.join("step-3.tmp-4242"))?;
    std::fs::write(ck.join("step-3.tmp-4242/adapters.safetensors"), b"\x08\x00")?;
    std::fs::write(ck.join("latest.tmp-4242"), b"step-")?;
    std::fs::write(ck.join("latest"), b"step-2\n")?;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(run.join("metrics.csv"))?;
    std::io::Write::write_all(&mut f, b"4,0.1,0.2")?;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(run.join("episodes.jsonl"))?;
    std::io::Write::write_all(
        &mut f,
        b"{\"schema\":\"empathy-gym/episode/v1\",\"step\":4,",
    )?;

    let cfg = TrainConfig::load(&run.join("config.yaml"), &[])?;
    let mut t = Trainer::resume(parts(cfg, &reward, 2)?)?;
    assert_eq!(
        t.steps_done(),
        2,
        "resumed from the last complete checkpoint"
    );
    assert!(!ck.join("step-3.tmp-4242").exists(), "leftovers removed");
    t.run(None)?;
    assert_same(&a, &outcome(&t)?);
    Ok(())
}

#[test]
fn exported_folder_reloads_with_the_trained_logits() -> Result<()> {
    let model = tiny_model_dir()?;
    let results = tempfile::tempdir()?;
    let reward = share_of_lowercase;
    let extra = FULL.replace("dropout: 0.1", "dropout: 0.0");
    let mut t = Trainer::start(parts(
        config(model.path(), results.path(), &extra)?,
        &reward,
        2,
    )?)?;
    t.run(None)?;
    let out = tempfile::tempdir()?;
    let ckpt = export_run(t.run_dir(), out.path())?;
    assert!(ckpt.ends_with("checkpoints/step-4"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(out.path().join("model.safetensors"))?
            .permissions()
            .mode();
        assert_eq!(
            mode & 0o044,
            0o044,
            "readable by group and others: {mode:o}"
        );
    }
    let exported = load_model(out.path(), &Device::Cpu, &LoadOptions::default())?;
    let trained = t.model();
    let seq = vec![trained.encode_chat(
        &[empathy_gym::model::ChatMessage::new(
            empathy_gym::model::Role::User,
            "hello there, tell me",
        )],
        true,
    )?];
    let on = trained.token_logprobs(&seq, AdapterMode::On, Pass::Infer)?;
    let off = trained.token_logprobs(&seq, AdapterMode::Off, Pass::Infer)?;
    let merged = exported.token_logprobs(&seq, AdapterMode::On, Pass::Infer)?;
    let diff = |a: &candle_core::Tensor, b: &candle_core::Tensor| -> Result<f32> {
        Ok((a - b)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?)
    };
    assert!(diff(&on, &off)? > 1e-3, "training moved the adapters");
    assert!(
        diff(&on, &merged)? < 1e-4,
        "merged export equals base + adapters"
    );
    // model.device, model.dtype and model.cpu_matmul are training settings: a run trained with
    // bf16 products, or on a GPU in bf16, loads for export, eval and serving on the CPU in f32,
    // on any machine (with or without bf16 products or a GPU), the same bits.
    assert!(
        seq[0].len() > 33,
        "a sequence past the bf16 products' 32 rows"
    );
    let cfg = t.run_dir().join("config.yaml");
    let text = std::fs::read_to_string(&cfg)?;
    for trained_with in [
        "\n  device: cpu\n  dtype: f32\n  cpu_matmul: bf16\n",
        "\n  device: cuda\n  dtype: bf16\n",
    ] {
        let changed = text.replace("\n  device: cpu\n  dtype: f32\n", trained_with);
        assert_ne!(text, changed, "{text}");
        std::fs::write(&cfg, changed)?;
        let (reloaded, _) = load_checkpoint_policy(t.run_dir())?;
        let again = reloaded.token_logprobs(&seq, AdapterMode::On, Pass::Infer)?;
        assert_eq!(
            again.to_vec2::<f32>()?,
            on.to_vec2::<f32>()?,
            "{trained_with}"
        );
    }
    Ok(())
}

#[test]
fn non_finite_loss_skips_the_step_and_leaves_the_adapters() -> Result<()> {
    let model = tiny_model_dir()?;
    let results = tempfile::tempdir()?;
    // Rewards of +-3e38 with advantage_scale none: advantages of +-3e38, whose per-token sum
    // overflows f32, so the loss is not finite and AdamW must skip the step.
    let huge = |rec: &EpisodeRecord| {
        if rec.sample.is_multiple_of(2) {
            3e38
        } else {
            -3e38
        }
    };
    let extra = "sampling:\n  max_new_tokens: 4\nlora:\n  rank: 2\n\
grpo:\n  steps: 1\n  profiles_per_step: 1\n  group_size: 4\n  advantage_scale: none\n";
    let mut t = Trainer::start(parts(
        config(model.path(), results.path(), extra)?,
        &huge,
        1,
    )?)?;
    let before = adapter_bits(t.model())?;
    let rows = t.run(None)?;
    assert!(rows[0].skipped, "{:?}", rows[0]);
    assert_eq!(rows[0].grad_norm, None);
    assert_eq!(
        adapter_bits(t.model())?,
        before,
        "a skipped step changes nothing"
    );
    let logged = read_metrics(&t.run_dir().join("metrics.csv"))?;
    assert!(logged[0].skipped);
    // The checkpoint written after it holds the untouched adapters, not NaNs.
    let ck = empathy_gym::learning::train::load_checkpoint(
        &t.run_dir().join("checkpoints/step-1"),
        &Device::Cpu,
    )?;
    assert_eq!(ck.optimizer.step, 0);
    for (name, bits) in &before {
        let saved: Vec<u32> = ck.adapters[name]
            .flatten_all()?
            .to_vec1::<f32>()?
            .iter()
            .map(|x| x.to_bits())
            .collect();
        assert_eq!(&saved, bits, "{name}");
    }
    Ok(())
}

/// The text `ids` decode to (special tokens kept).
fn text(model: &ChatModel, ids: &[u32]) -> String {
    model.decode(ids).unwrap()
}

/// The flat user's dialogues with one job per profile, answered by `inner` through a
/// [`TrainPolicy`] that records their token sequences.
fn recorded_rollout(
    inner: ModelPolicy<'_>,
    profiles: Vec<Profile>,
) -> Result<(Vec<EpisodeRecord>, TrainPolicy<'_>)> {
    let jobs = jobs_of(profiles);
    let mut policy = TrainPolicy::new(inner, jobs.len());
    let opts = RolloutOptions::default();
    let records = rollout(&FlatUser, &mut policy, &jobs, &opts, |_| Ok(()))?;
    Ok((records, policy))
}

/// One job per profile, seeded by its position.
fn jobs_of(profiles: Vec<Profile>) -> Vec<EpisodeJob> {
    profiles
        .into_iter()
        .enumerate()
        .map(|(i, profile)| EpisodeJob {
            profile,
            seed: i as u64,
            step: 1,
            group: i as u64,
            sample: 0,
        })
        .collect()
}

#[test]
fn dialogue_sequences_are_template_text_around_the_sampled_ids() -> Result<()> {
    let dir = tiny_model_dir()?;
    let results = tempfile::tempdir()?;
    let cfg = config(dir.path(), results.path(), "lora:\n  rank: 2\n")?;
    let mut model = load_policy(&cfg, &Device::Cpu)?;
    model.stop_tokens = vec![id_of("<|im_end|>")];
    let params = empathy_gym::model::SamplingParams {
        temperature: 1.0,
        top_p: 1.0,
        max_new_tokens: 5,
        greedy: false,
    };
    // A dialogue's cache is dropped when it ends: nothing is held after a rollout.
    let mut plain = ModelPolicy::new(&model, params.clone(), 11);
    rollout(
        &FlatUser,
        &mut plain,
        &jobs_of(profiles(2, 3)),
        &RolloutOptions::default(),
        |_| Ok(()),
    )?;
    assert_eq!(plain.cached_dialogues(), 0);
    let mut inner = ModelPolicy::new(&model, params, 11);
    inner.system = "Be brief.".into();
    let (records, policy) = recorded_rollout(inner, profiles(2, 3))?;
    assert_eq!(policy.cached_dialogues(), 0);
    let seqs: Vec<TokenSequence> = policy.into_sequences();
    for (rec, seq) in records.iter().zip(&seqs) {
        let users: Vec<&str> = rec.turns.iter().filter_map(Turn::user_text).collect();
        let replies = seq.replies();
        assert_eq!(replies.len(), 3, "three replies, three sampled spans");
        // Context before reply 1: system prompt, opening, generation prompt.
        assert_eq!(
            text(&model, &seq.ids()[..replies[0].start]),
            format!("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n", users[0])
        );
        for k in 1..replies.len() {
            let prev = seq.reply_ids(k - 1).unwrap();
            let stopped = prev.last() == Some(&id_of("<|im_end|>"));
            let close = if stopped { "" } else { "<|im_end|>" };
            assert_eq!(
                text(&model, &seq.ids()[replies[k - 1].end..replies[k].start]),
                format!(
                    "{close}\n<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n",
                    users[k]
                )
            );
        }
        // The user saw the decoded reply; the mask covers exactly the sampled ids.
        for (k, (reply, _)) in rec.assistant_turns().iter().enumerate() {
            let ids = seq.reply_ids(k).unwrap();
            let body = ids.strip_suffix(&[id_of("<|im_end|>")]).unwrap_or(ids);
            assert_eq!(*reply, model.tokenizer.decode(body, true).unwrap().trim());
        }
        let mask = seq.target_mask();
        assert_eq!(mask.len(), seq.ids().len() - 1);
        assert_eq!(
            mask.iter().filter(|&&m| m == 1.0).count(),
            seq.policy_tokens()
        );
        assert_eq!(
            seq.policy_tokens(),
            replies.iter().map(|r| r.len()).sum::<usize>()
        );
    }
    Ok(())
}

/// The update's KL sample (the first `kl_sample` dialogues it trains on, the policy half taken
/// from its first forward) equals the two-pass estimate on the same dialogues before the update:
/// mu = 1, mu = 2 with beta > 0 (the stored old and reference passes), and LoRA dropout (whose
/// training forward cannot stand for the sampling policy). The adapters' B are moved off zero so
/// that the KL is clearly above 0; the sample (3 of 4 dialogues, micro-batches of 2) ends inside
/// the second micro-batch.
#[test]
fn the_updates_kl_sample_equals_the_two_pass_estimate() -> Result<()> {
    use candle_core::Tensor;
    use empathy_gym::learning::optimize::{AdamW, AdamWConfig, LossConfig};
    use empathy_gym::learning::train::kl_sample::kl_sample;
    use empathy_gym::learning::train::{policy_update, Advantages, UpdateConfig};

    let dir = tiny_model_dir()?;
    let cases = [
        ("rank: 4", 1, 0.0),
        ("rank: 4", 2, 0.05),
        ("rank: 4\n  dropout: 0.3", 1, 0.0),
    ];
    for (lora, iterations, beta) in cases {
        let results = tempfile::tempdir()?;
        let cfg = config(dir.path(), results.path(), &format!("lora:\n  {lora}\n"))?;
        let mut model = load_policy(&cfg, &Device::Cpu)?;
        model.stop_tokens = vec![id_of("<|im_end|>")];
        for (name, var) in model.trainable() {
            if name.ends_with("lora_b") {
                let n = var.elem_count();
                let v: Vec<f32> = (0..n)
                    .map(|i| ((i * 7919 % 13) as f32 - 6.0) * 0.02)
                    .collect();
                var.set(&Tensor::from_vec(v, var.shape(), &Device::Cpu)?)?;
            }
        }
        let params = empathy_gym::model::SamplingParams {
            temperature: 0.8,
            top_p: 1.0,
            max_new_tokens: 6,
            greedy: false,
        };
        let (_, policy) = recorded_rollout(ModelPolicy::new(&model, params, 5), profiles(4, 2))?;
        let seqs = policy.into_sequences();
        let batch: Vec<&TokenSequence> = seqs.iter().collect();
        let expected = kl_sample(&model, &batch[..3], 0.8)?.expect("policy tokens");
        assert!(
            expected > 1e-3,
            "{lora}: the adapters barely moved the policy ({expected})"
        );
        let update = UpdateConfig {
            loss: LossConfig {
                beta,
                ..LossConfig::default()
            },
            iterations,
            micro_batch: 2,
            dropout_seed: 1,
            temperature: 0.8,
            kl_sample: 3,
            checkpoint: false,
        };
        let mut opt = AdamW::new(model.trainable(), AdamWConfig::default())?;
        let adv = Advantages::PerSequence(vec![1.0, -1.0, 0.5, -0.5]);
        let got = policy_update(&model, &mut opt, &batch, &adv, &update)?.kl_sample;
        let got = got.expect("a KL sample");
        assert!(
            (got - expected).abs() <= 1e-4 * expected,
            "{lora}, mu {iterations}, beta {beta}: update {got} vs two passes {expected}"
        );
        let none = UpdateConfig {
            kl_sample: 0,
            ..update
        };
        assert_eq!(
            policy_update(&model, &mut opt, &batch, &adv, &none)?.kl_sample,
            None
        );
    }
    Ok(())
}
