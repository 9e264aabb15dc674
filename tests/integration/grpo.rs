//! The GRPO pieces assembled into a toy trainer (a 4-token bandit "policy" writing 3-token
//! replies, reward = share of token 2): it learns, and a run interrupted after step 2 and resumed
//! from its checkpoint ends bit for bit where an uninterrupted run ends, metrics.csv included.

use std::path::Path;

use candle_core::{backprop::GradStore, DType, Device, Tensor, Var};
use empathy_gym::learning::credit::{frac_reward_zero_std, group_advantages, AdvantageScale};
use empathy_gym::learning::optimize::{
    grpo_loss, AdamW, AdamWConfig, LossConfig, LossInputs, StepOutcome,
};
use empathy_gym::learning::train::{
    latest_checkpoint, load_checkpoint, save_checkpoint, Checkpoint, MetricsWriter, RngState,
    StepMetrics,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const GROUP: usize = 4;
const GROUPS: usize = 2;
const LEN: usize = 3;
const GOOD_TOKEN: u32 = 2;

struct Trainer {
    logits: Var,
    opt: AdamW,
    rng: ChaCha8Rng,
    metrics: MetricsWriter,
    step: u64,
}

fn config() -> AdamWConfig {
    AdamWConfig {
        lr: 0.1,
        ..AdamWConfig::default()
    }
}

fn fresh(run: &Path) -> Trainer {
    let logits = Var::zeros(4, DType::F32, &Device::Cpu).unwrap();
    let opt = AdamW::new([("logits".to_string(), logits.clone())], config()).unwrap();
    let metrics = MetricsWriter::create(&run.join("metrics.csv")).unwrap();
    let rng = ChaCha8Rng::seed_from_u64(7);
    Trainer {
        logits,
        opt,
        rng,
        metrics,
        step: 0,
    }
}

fn resume(run: &Path) -> Trainer {
    let dir = latest_checkpoint(run).unwrap().expect("a checkpoint");
    let ck = load_checkpoint(&dir, &Device::Cpu).unwrap();
    let logits = Var::from_tensor(&ck.adapters["logits"]).unwrap();
    let mut opt = AdamW::new([("logits".to_string(), logits.clone())], config()).unwrap();
    opt.load_state(ck.optimizer).unwrap();
    let rng = ck.rngs["sampler"].restore().unwrap();
    let metrics = MetricsWriter::resume(&run.join("metrics.csv"), ck.step).unwrap();
    Trainer {
        logits,
        opt,
        rng,
        metrics,
        step: ck.step,
    }
}

fn log_probs(logits: &Tensor) -> Tensor {
    let lse = logits.exp().unwrap().sum_keepdim(0).unwrap().log().unwrap();
    logits.broadcast_sub(&lse).unwrap()
}

fn sample(t: &mut Trainer) -> Vec<u32> {
    let probs: Vec<f32> = log_probs(t.logits.as_tensor())
        .exp()
        .unwrap()
        .to_vec1()
        .unwrap();
    (0..GROUP * GROUPS * LEN)
        .map(|_| {
            let u: f32 = t.rng.random();
            let mut acc = 0.0;
            probs
                .iter()
                .position(|p| {
                    acc += p;
                    u < acc
                })
                .unwrap_or(probs.len() - 1) as u32
        })
        .collect()
}

fn train_step(t: &mut Trainer, run: &Path) {
    let ids = sample(t);
    let rewards: Vec<f32> = ids
        .chunks(LEN)
        .map(|s| s.iter().filter(|&&x| x == GOOD_TOKEN).count() as f32 / LEN as f32)
        .collect();
    let adv = group_advantages(&rewards, GROUP, AdvantageScale::Group).unwrap();
    let b = GROUP * GROUPS;
    let idx = Tensor::from_vec(ids, b * LEN, &Device::Cpu).unwrap();
    let logp = log_probs(t.logits.as_tensor())
        .index_select(&idx, 0)
        .unwrap()
        .reshape((b, LEN))
        .unwrap();
    let old = logp.detach();
    let adv_t = Tensor::from_vec(adv, b, &Device::Cpu).unwrap();
    let mask = Tensor::ones((b, LEN), DType::F32, &Device::Cpu).unwrap();
    let inputs = LossInputs {
        logp_new: &logp,
        logp_old: &old,
        logp_ref: None,
        advantages: &adv_t,
        mask: &mask,
    };
    let out = grpo_loss(&inputs, &LossConfig::default(), None).unwrap();
    let grads: GradStore = out.loss.backward().unwrap();
    let lr = t.opt.next_lr();
    let outcome = t.opt.step(out.stats.loss, &grads).unwrap();
    assert!(matches!(outcome, StepOutcome::Applied { .. }));
    t.step += 1;
    let mean = rewards.iter().sum::<f32>() as f64 / rewards.len() as f64;
    t.metrics
        .append(&StepMetrics {
            step: t.step,
            reward_mean: mean,
            frac_reward_zero_std: frac_reward_zero_std(&rewards, GROUP).unwrap(),
            clip_frac_low: out.stats.clip_frac_low(),
            clip_frac_high: out.stats.clip_frac_high(),
            policy_tokens: out.stats.tokens as u64,
            lr,
            grad_norm: outcome.grad_norm(),
            ..StepMetrics::default()
        })
        .unwrap();
    let ck = Checkpoint {
        step: t.step,
        adapters: [("logits".to_string(), t.logits.as_tensor().clone())]
            .into_iter()
            .collect(),
        optimizer: t.opt.state().unwrap(),
        rngs: [("sampler".to_string(), RngState::capture(&t.rng))]
            .into_iter()
            .collect(),
        meta: serde_json::json!({"toy": true}),
        critic: None,
    };
    save_checkpoint(run, &ck).unwrap();
}

fn bits(v: &Var) -> Vec<u32> {
    let x: Vec<f32> = v.as_tensor().to_vec1().unwrap();
    x.iter().map(|f| f.to_bits()).collect()
}

#[test]
fn toy_grpo_learns_and_resumes_bit_for_bit() {
    let a = tempfile::tempdir().unwrap();
    let mut whole = fresh(a.path());
    for _ in 0..6 {
        train_step(&mut whole, a.path());
    }
    // It learns: the rewarded token's logit rose above the others (all started at 0).
    let l: Vec<f32> = whole.logits.as_tensor().to_vec1().unwrap();
    assert!(
        l[2] > 0.0 && l.iter().enumerate().all(|(i, &x)| i == 2 || x < l[2]),
        "{l:?}"
    );

    let b = tempfile::tempdir().unwrap();
    let mut first = fresh(b.path());
    for _ in 0..4 {
        train_step(&mut first, b.path());
    }
    drop(first);
    // The crash came after step 4's metrics row but we resume from step 2's checkpoint, as if
    // step 3 and 4's checkpoints had never been written.
    let ckdir = b.path().join("checkpoints");
    std::fs::write(ckdir.join("latest"), "step-2\n").unwrap();
    let mut resumed = resume(b.path());
    assert_eq!(resumed.step, 2);
    for _ in 0..4 {
        train_step(&mut resumed, b.path());
    }
    assert_eq!(bits(&resumed.logits), bits(&whole.logits));
    let csv = |d: &Path| std::fs::read_to_string(d.join("metrics.csv")).unwrap();
    assert_eq!(csv(b.path()), csv(a.path()));
}
