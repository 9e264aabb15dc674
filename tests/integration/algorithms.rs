//! The algorithms beside GRPO (docs/DESIGN.md section 10) end to end on the tiny random Llama of
//! train.rs: PPO (critic on its own adapters), RLOO, REINFORCE++, the Lite PPO preset, and the
//! GSPO / CISPO losses each raise a verifiable reward; PPO's critic comes to explain part of the
//! returns' variance; a PPO run stopped and resumed ends bit for bit where an uninterrupted one
//! ends (critic and its optimizer included); dynamic sampling replaces all-equal groups and logs
//! how many it drew; GRPO's turn credit runs through the trainer; the KL sample starts at 0 and
//! grows as the policy moves.

use std::path::Path;

use anyhow::Result;
use empathy_gym::learning::credit::Credit;
use empathy_gym::learning::train::{read_metrics, Override, StepMetrics, TrainConfig, Trainer};

use crate::train::{
    adapter_bits, config, parts, share_of_e, share_of_lowercase, tiny_model_dir, untimed, FULL,
};

/// The GRPO learning test's setup (train.rs): 30 steps of 2 x 8 one-turn dialogues of at most 8
/// tokens, reward = share of 'e' in the replies; `top` adds top-level sections, `grpo` lines of
/// the `grpo:` section (indented by two spaces).
fn learning_run(top: &str, grpo: &str) -> Result<Vec<StepMetrics>> {
    learning_run_with(top, grpo, &[])
}

/// [`learning_run`] with `sets` applied last (as `--set` would), over the test's own keys.
fn learning_run_with(top: &str, grpo: &str, sets: &[Override]) -> Result<Vec<StepMetrics>> {
    let model = tiny_model_dir()?;
    let results = tempfile::tempdir()?;
    let extra = format!(
        "{top}env:\n  system_prompt: Be brief.\n\
sampling:\n  max_new_tokens: 8\n\
lora:\n  rank: 8\n\
grpo:\n  steps: 30\n  profiles_per_step: 2\n  group_size: 8\n  micro_batch: 16\n{grpo}\
optim:\n  lr: 0.02\n  max_grad_norm: null\n\
checkpoint:\n  every: 100\n"
    );
    let reward = share_of_e;
    let mut cfg = config(model.path(), results.path(), &extra)?;
    if !sets.is_empty() {
        cfg = TrainConfig::from_yaml(&cfg.to_yaml()?, Path::new("test.yaml"), sets)?;
    }
    let mut t = Trainer::start(parts(cfg, &reward, 1)?)?;
    Ok(t.run(None)?)
}

/// The PPO learning test's top-level sections.
const PPO: &str = "algorithm: ppo\nppo:\n  critic_lr: 0.005\n  critic_warmup: 2\n";

/// The `grpo:` lines of the GSPO / CISPO learning test: the loss `kind`, two updates per batch.
fn two_iterations_of(kind: &str) -> String {
    format!("  iterations: 2\n  loss:\n    kind: {kind}\n")
}

/// Mean reward of the first and last five steps.
fn first_and_last(rows: &[StepMetrics]) -> (f64, f64) {
    let mean = |r: &[StepMetrics]| r.iter().map(|m| m.reward_mean).sum::<f64>() / r.len() as f64;
    (mean(&rows[..5]), mean(&rows[rows.len() - 5..]))
}

/// The learning tests' bar, the GRPO test's: the last five steps' mean reward above the first
/// five's by 0.1 and by a factor 3. `learning_tests_pass_on_most_seeds` measures how often it
/// holds when only the seed changes.
fn learned(first: f64, last: f64) -> bool {
    last > first + 0.1 && last > 3.0 * first
}

/// Mean reward of the first and last five steps; asserts the bar of [`learned`].
fn assert_learns(name: &str, rows: &[StepMetrics]) -> (f64, f64) {
    let (first, last) = first_and_last(rows);
    eprintln!("{name}: share of 'e' first 5 steps {first:.4}, last 5 steps {last:.4}");
    assert!(learned(first, last), "{name}: {first} -> {last}");
    // Every algorithm logs the stability columns: the KL sample (beta is 0 here) and advantages.
    assert!(rows.iter().all(|m| m.kl_sample.is_some()), "{name}");
    assert!(rows.iter().any(|m| m.adv_std > 0.0), "{name}");
    assert_kl_sample_tracks_drift(name, rows);
    (first, last)
}

/// The KL sample is measured with the policy as it sampled the step: at step 1 the adapters' B
/// are zero (LoRA starts equal to the base), so it is 0; after the reward has risen the policy
/// has moved and it is clearly above 0 on every one of the last five steps.
fn assert_kl_sample_tracks_drift(name: &str, rows: &[StepMetrics]) {
    let kl: Vec<f64> = rows
        .iter()
        .map(|m| m.kl_sample.unwrap_or(f64::NAN))
        .collect();
    eprintln!("{name}: kl_sample {kl:.5?}");
    assert!(kl[0].abs() < 1e-6, "{name}: step 1 KL {} (B = 0)", kl[0]);
    assert!(
        kl[kl.len() - 5..].iter().all(|&k| k > 1e-3),
        "{name}: the trained policy's KL sample stayed near 0: {kl:?}"
    );
}

#[test]
fn ppo_raises_the_reward_and_its_critic_explains_variance() -> Result<()> {
    let rows = learning_run(PPO, "")?;
    for m in &rows {
        eprintln!(
            "{} reward {:.4} value_loss {:?} ev {:?} vclip {:?}",
            m.step, m.reward_mean, m.value_loss, m.explained_var, m.value_clip_frac
        );
    }
    assert_learns("ppo", &rows);
    // Warm-up: the first two steps train the critic only (no policy tokens trained on).
    assert!(rows[..2]
        .iter()
        .all(|m| m.policy_tokens == 0 && m.value_loss.is_some()));
    assert!(rows[2..].iter().all(|m| m.policy_tokens > 0));
    // The policy samples step 3 as the warm-up left it: untouched, so its KL sample is still 0
    // (exactly 0 on steps 1 to 3; from step 4, after the first policy update, it moves).
    assert!(
        rows[..3]
            .iter()
            .all(|m| m.kl_sample.is_some_and(|k| k.abs() < 1e-6)),
        "the warm-up moved the policy: {rows:?}"
    );
    // The critic starts at zero (explained variance <= 0) and comes to explain the returns.
    assert!(
        rows[0].explained_var.is_none_or(|e| e <= 1e-6),
        "{:?}",
        rows[0]
    );
    // Negative while the policy is near random, then above 0 on about half of the last 15 steps
    // (the bar asks for 5): the critic learns something the mean does not.
    let late = &rows[15..];
    let positive = late
        .iter()
        .filter(|m| m.explained_var.is_some_and(|e| e > 0.0))
        .count();
    assert!(
        positive >= 5,
        "explained variance above 0 on {positive} of the last 15 steps"
    );
    assert!(
        late.iter()
            .any(|m| m.explained_var.is_some_and(|e| e > 0.05)),
        "explained variance never rose above 0.05"
    );
    Ok(())
}

#[test]
fn rloo_raises_the_reward() -> Result<()> {
    let rows = learning_run("algorithm: rloo\n", "")?;
    assert_learns("rloo", &rows);
    assert!(rows.iter().all(|m| m.value_loss.is_none()));
    Ok(())
}

#[test]
fn reinforce_pp_raises_the_reward() -> Result<()> {
    let rows = learning_run("algorithm: reinforce_pp\n", "")?;
    assert_learns("reinforce_pp", &rows);
    Ok(())
}

#[test]
fn lite_ppo_preset_raises_the_reward() -> Result<()> {
    // The preset (configs/algorithms/lite-ppo.yaml, Liu et al. 2025) is GRPO with group-mean,
    // batch-std advantages and token-mean aggregation: no new code, only options.
    let path = crate::common::root().join("configs/algorithms/lite-ppo.yaml");
    let preset = TrainConfig::load(&path, &[])?;
    let g = &preset.file.grpo;
    assert_eq!(
        preset.file.algorithm,
        empathy_gym::learning::credit::Algorithm::Grpo
    );
    assert_eq!(
        g.advantage_scale,
        empathy_gym::learning::credit::AdvantageScale::Batch
    );
    assert_eq!(
        g.loss.aggregation,
        empathy_gym::learning::optimize::Aggregation::TokenMean
    );
    // The preset's algorithm keys over the learning test's config, so a broken preset fails here.
    let rows = learning_run_with("", "", &algorithm_keys(&preset)?)?;
    assert_learns("lite_ppo", &rows);
    Ok(())
}

/// Every key an algorithm preset may set (the ones `algorithm_configs_differ_...` lets differ
/// from the quickstart, and the loss), as overrides carrying the preset's values.
fn algorithm_keys(preset: &TrainConfig) -> Result<Vec<Override>> {
    let (f, g) = (&preset.file, &preset.file.grpo);
    let keys = [
        ("algorithm", serde_yaml::to_value(f.algorithm)?),
        ("ppo", serde_yaml::to_value(f.ppo)?),
        ("grpo.credit", serde_yaml::to_value(g.credit)?),
        (
            "grpo.advantage_scale",
            serde_yaml::to_value(g.advantage_scale)?,
        ),
        ("grpo.drop_zero_std", serde_yaml::to_value(g.drop_zero_std)?),
        ("grpo.loss.kind", serde_yaml::to_value(g.loss.kind)?),
        (
            "grpo.loss.aggregation",
            serde_yaml::to_value(g.loss.aggregation)?,
        ),
    ];
    Ok(keys
        .into_iter()
        .map(|(key, value)| Override {
            path: key.split('.').map(str::to_string).collect(),
            value,
        })
        .collect())
}

#[test]
fn gspo_and_cispo_losses_raise_the_reward() -> Result<()> {
    // Two updates per batch (mu = 2): with one, the ratio is exactly 1 and both objectives'
    // gradients equal the clipped ratio's; with two, the second update sees ratios away from 1
    // (GSPO's per sequence, CISPO's clipped weights).
    for kind in ["gspo", "cispo"] {
        let rows = learning_run("", &two_iterations_of(kind))?;
        assert_learns(kind, &rows);
    }
    Ok(())
}

#[test]
fn grpo_turn_credit_runs_through_the_trainer_and_with_flat_turns_equals_episode_credit(
) -> Result<()> {
    // FULL (two turns, mu = 2, beta > 0, dropout, dropped groups) with dense rewards. The scripted
    // user never changes emotion, so each dialogue's turn rewards are [0, r] and every turn's
    // return-to-go is r: turn credit must give each token exactly episode credit's advantage
    // (the per-turn numbers are pinned in src/learning/train/estimate.rs). Anything lost or misaligned on
    // the way from estimate() to the loss shows as different metrics or adapters.
    let model = tiny_model_dir()?;
    let reward = share_of_lowercase;
    let dense = FULL.replace("env:\n", "env:\n  aggregate: dense\n");
    let mut outcomes = Vec::new();
    for credit in ["episode", "turn"] {
        let dir = tempfile::tempdir()?;
        let text = dense.replace("grpo:\n", &format!("grpo:\n  credit: {credit}\n"));
        let cfg = config(model.path(), dir.path(), &text)?;
        let want = if credit == "turn" {
            Credit::Turn
        } else {
            Credit::Episode
        };
        assert_eq!(cfg.file.grpo.credit, want);
        let mut t = Trainer::start(parts(cfg, &reward, 2)?)?;
        let rows = untimed(&t.run(None)?);
        assert!(
            rows.iter().any(|m| m.policy_tokens > 0),
            "{credit}: {rows:?}"
        );
        outcomes.push((rows, adapter_bits(t.model())?));
    }
    assert_eq!(outcomes[0].0, outcomes[1].0, "metrics differ");
    assert!(outcomes[0].1 == outcomes[1].1, "adapters differ");
    Ok(())
}

/// The resume test's configuration (train.rs FULL: two turns, mu = 2, beta > 0, LoRA dropout,
/// uneven micro-batches) as PPO with a warm-up step and dynamic sampling.
fn ppo_full() -> String {
    format!(
        "algorithm: ppo\nppo:\n  critic_lr: 0.01\n  critic_warmup: 1\n  lambda: 0.95\n{}",
        FULL
    )
    .replace(
        "drop_zero_std: true",
        "drop_zero_std: true\n  dynamic_sampling_draws: 2",
    )
}

fn critic_bits(t: &Trainer<'_>) -> Result<Vec<(String, Vec<u32>)>> {
    let head = t.critic().expect("a ppo run has a critic");
    head.trainable(t.model())
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

struct PpoOutcome {
    rows: Vec<StepMetrics>,
    episodes: String,
    adapters: Vec<(String, Vec<u32>)>,
    critic: Vec<(String, Vec<u32>)>,
}

fn ppo_outcome(t: &Trainer<'_>) -> Result<PpoOutcome> {
    let dir = t.run_dir();
    Ok(PpoOutcome {
        rows: untimed(&read_metrics(&dir.join("metrics.csv"))?),
        episodes: std::fs::read_to_string(dir.join("episodes.jsonl"))?,
        adapters: adapter_bits(t.model())?,
        critic: critic_bits(t)?,
    })
}

#[test]
fn ppo_stopped_and_resumed_run_equals_an_uninterrupted_one() -> Result<()> {
    let model = tiny_model_dir()?;
    let reward = share_of_lowercase;
    let a_dir = tempfile::tempdir()?;
    let a = {
        let mut t = Trainer::start(parts(
            config(model.path(), a_dir.path(), &ppo_full())?,
            &reward,
            2,
        )?)?;
        t.run(None)?;
        ppo_outcome(&t)?
    };
    assert_eq!(a.rows.len(), 4);
    assert!(a.rows.iter().any(|m| m.value_loss.is_some()));
    assert!(a.rows.iter().all(|m| m.extra_draws <= 2));

    let b_dir = tempfile::tempdir()?;
    {
        let mut t = Trainer::start(parts(
            config(model.path(), b_dir.path(), &ppo_full())?,
            &reward,
            2,
        )?)?;
        t.run(Some(2))?;
    }
    let ck = b_dir.path().join("t/checkpoints/step-2");
    assert!(
        ck.join("critic.safetensors").is_file()
            && ck.join("critic_optimizer.safetensors").is_file()
    );
    let cfg = TrainConfig::load(&b_dir.path().join("t/config.yaml"), &[])?;
    let mut t = Trainer::resume(parts(cfg, &reward, 2)?)?;
    assert_eq!(t.steps_done(), 2);
    t.run(None)?;
    let b = ppo_outcome(&t)?;
    assert_eq!(a.rows, b.rows);
    assert_eq!(a.episodes, b.episodes);
    assert!(a.adapters == b.adapters, "policy adapters differ");
    assert!(a.critic == b.critic, "critic differs");
    Ok(())
}

#[test]
fn dynamic_sampling_replaces_all_equal_groups_and_logs_the_draws() -> Result<()> {
    // share of 'e' is 0 for most replies of the random tiny model: many groups are all zero.
    let model = tiny_model_dir()?;
    let results = tempfile::tempdir()?;
    let extra = "sampling:\n  max_new_tokens: 4\nlora:\n  rank: 2\n\
grpo:\n  steps: 3\n  profiles_per_step: 2\n  group_size: 2\n  dynamic_sampling_draws: 3\n";
    let reward = share_of_e;
    let mut t = Trainer::start(parts(
        config(model.path(), results.path(), extra)?,
        &reward,
        1,
    )?)?;
    let rows = t.run(None)?;
    assert!(rows.iter().all(|m| m.extra_draws <= 3));
    let drawn: u64 = rows.iter().map(|m| m.extra_draws).sum();
    assert!(drawn > 0, "no group was redrawn: {rows:?}");
    // Every dialogue played is logged: 4 per step plus 2 per extra group, the extra groups
    // numbered from profiles_per_step on.
    let log = std::fs::read_to_string(t.run_dir().join("episodes.jsonl"))?;
    assert_eq!(log.lines().count() as u64, 3 * 4 + 2 * drawn);
    assert!(log.contains("\"group\":2"));
    // A step stops drawing once no all-equal group is left or the budget is spent.
    for m in &rows {
        assert!(m.frac_reward_zero_std == 0.0 || m.extra_draws == 3, "{m:?}");
    }
    Ok(())
}

#[test]
fn algorithm_configs_differ_from_the_quickstart_only_where_the_algorithm_needs_it() -> Result<()> {
    use empathy_gym::learning::credit::Algorithm;
    let root = crate::common::root();
    let quick = TrainConfig::load(&root.join("configs/quickstart.yaml"), &[])?.file;
    for (name, algorithm) in [
        ("grpo", Algorithm::Grpo),
        ("ppo", Algorithm::Ppo),
        ("lite-ppo", Algorithm::Grpo),
        ("rloo", Algorithm::Rloo),
        ("reinforce-pp", Algorithm::ReinforcePp),
    ] {
        let path = root.join(format!("configs/algorithms/{name}.yaml"));
        let mut f = TrainConfig::load(&path, &[])?.file;
        assert_eq!((f.run.as_str(), f.algorithm), (name, algorithm));
        // Put back what an algorithm may change; everything else is the quickstart's.
        f.run = quick.run.clone();
        f.algorithm = quick.algorithm;
        f.ppo = quick.ppo;
        f.grpo.drop_zero_std = quick.grpo.drop_zero_std;
        f.grpo.advantage_scale = quick.grpo.advantage_scale;
        assert_eq!(f, quick, "{name}");
    }
    Ok(())
}

/// How much the learning tests' outcome depends on their seed (minutes, so not in CI): each
/// algorithm's learning run with seeds 0-7 must pass the bar on at least 7 of the 8. The tests
/// use seed 0. Run it when a change in rounding (a kernel's summation order, say) fails a
/// learning test, to tell bad luck from a broken algorithm. Nearly every run passed when it was
/// first run; the last five steps' mean reward sits on one of two plateaus of the tiny model
/// (results/perf/step.md, "1/sqrt(d) inside q's rope").
#[test]
#[ignore]
fn learning_tests_pass_on_most_seeds() -> Result<()> {
    let cases = [
        ("grpo", "", String::new()),
        ("gspo", "", two_iterations_of("gspo")),
        ("cispo", "", two_iterations_of("cispo")),
        ("rloo", "algorithm: rloo\n", String::new()),
        ("reinforce_pp", "algorithm: reinforce_pp\n", String::new()),
        ("ppo", PPO, String::new()),
    ];
    let mut misses = Vec::new();
    for (name, top, grpo) in &cases {
        let mut passed = 0;
        for seed in 0..8 {
            let rows = learning_run_with(top, grpo, &[Override::parse(&format!("seed={seed}"))?])?;
            let (first, last) = first_and_last(&rows);
            eprintln!("{name} seed {seed}: share of 'e' {first:.4} -> {last:.4}");
            passed += usize::from(learned(first, last));
        }
        if passed < 7 {
            misses.push(format!("{name} passed on {passed} of 8 seeds"));
        }
    }
    assert!(misses.is_empty(), "{}", misses.join("; "));
    Ok(())
}
