//! Training checkpoints: the optimizer's state bytes (`AdamWState::from_bytes`, then loaded into
//! an optimizer and stepped, as a resumed run does) and a checkpoint's `state.json` (a real
//! checkpoint written with `save_checkpoint`, then found, loaded and restored as `train
//! --resume` does).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;
use candle_core::{DType, Device, Tensor, Var};
use empathy_gym::learning::optimize::{AdamW, AdamWConfig, AdamWState};
use empathy_gym::learning::train::checkpoint::{
    latest_checkpoint, load_checkpoint, save_checkpoint, Checkpoint, CriticState,
};
use empathy_gym::learning::train::RngState;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::fuzz::{FuzzContext, Kind, Target};

/// The trainable parameters of the seeds: names and shapes.
const PARAMS: [(&str, &[usize]); 3] = [("a.lora_a", &[2, 3]), ("a.lora_b", &[3, 2]), ("b", &[4])];

/// Fresh parameters with fixed values.
fn params(list: &[(&str, &[usize])]) -> anyhow::Result<Vec<(String, Var)>> {
    list.iter()
        .enumerate()
        .map(|(i, (name, shape))| {
            let n: usize = shape.iter().product();
            let v: Vec<f32> = (0..n).map(|j| 0.1 * (i + j) as f32 - 0.2).collect();
            Ok((
                name.to_string(),
                Var::from_tensor(&Tensor::from_vec(v, *shape, &Device::Cpu)?)?,
            ))
        })
        .collect()
}

/// One optimizer step on a loss of `vars` (sum of squares plus sum).
fn step(opt: &mut AdamW, vars: &[(String, Var)]) -> anyhow::Result<()> {
    let mut loss = Tensor::zeros((), DType::F32, &Device::Cpu)?;
    for (_, v) in vars {
        loss = (loss + (v.as_tensor().sqr()?.sum_all()? + v.as_tensor().sum_all()?)?)?;
    }
    let grads = loss.backward()?;
    opt.step(f64::from(loss.to_scalar::<f32>()?), &grads)?;
    Ok(())
}

/// An optimizer over `vars` after `steps` steps.
fn trained(vars: &[(String, Var)], steps: usize) -> anyhow::Result<AdamW> {
    let mut opt = AdamW::new(vars.to_vec(), AdamWConfig::default())?;
    for _ in 0..steps {
        step(&mut opt, vars)?;
    }
    Ok(opt)
}

/// `optimizer`: AdamW state bytes (safetensors with the step in the metadata).
pub fn optimizer(ctx: &FuzzContext) -> anyhow::Result<Target> {
    let dir = ctx.fresh_dir("optimizer")?;
    let mut seeds = Vec::new();
    for steps in [0, 2] {
        seeds.push(trained(&params(&PARAMS)?, steps)?.state()?.to_bytes()?);
    }
    let source = dir.join("optimizer.safetensors");
    Target::new("optimizer", Kind::Safetensors, seeds, move |input| {
        let state = AdamWState::from_bytes(input, &Device::Cpu, &source)?;
        let vars = params(&PARAMS)?;
        let mut opt = AdamW::new(vars.clone(), AdamWConfig::default())?;
        opt.load_state(state)?;
        step(&mut opt, &vars)?;
        opt.state()?.to_bytes()?;
        Ok(())
    })
}

/// A checkpoint of step 3 with adapters, optimizer state, two generators and a critic.
fn sample_checkpoint() -> anyhow::Result<Checkpoint> {
    let vars = params(&PARAMS)?;
    let opt = trained(&vars, 2)?;
    let head = params(&[("value_head", &[4])])?;
    let critic_opt = trained(&head, 1)?;
    let tensors = |vs: &[(String, Var)]| -> BTreeMap<String, Tensor> {
        vs.iter()
            .map(|(n, v)| (n.clone(), v.as_tensor().clone()))
            .collect()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    rng.next_u32();
    let mut other = ChaCha8Rng::seed_from_u64(8);
    other.set_stream(3);
    Ok(Checkpoint {
        step: 3,
        adapters: tensors(&vars),
        optimizer: opt.state()?,
        rngs: [
            ("profiles".to_string(), RngState::capture(&rng)),
            ("sampling".to_string(), RngState::capture(&other)),
        ]
        .into_iter()
        .collect(),
        meta: serde_json::json!({"run": "fuzz", "config_hash": "abc", "nested": {"list": [1, 2.5, null]}}),
        critic: Some(CriticState {
            tensors: tensors(&head),
            optimizer: critic_opt.state()?,
        }),
    })
}

/// Sets `vars` from `tensors` by name and shape, as a resumed run restores its adapters.
fn restore(vars: &[(String, Var)], tensors: &BTreeMap<String, Tensor>) -> anyhow::Result<()> {
    anyhow::ensure!(vars.len() == tensors.len(), "tensor count differs");
    for (name, var) in vars {
        let t = tensors
            .get(name)
            .filter(|t| t.dims() == var.dims())
            .with_context(|| format!("{name} missing or misshapen"))?;
        var.set(&t.to_dtype(var.dtype())?)?;
    }
    Ok(())
}

/// `checkpoint`: a checkpoint's state.json.
pub fn checkpoint(ctx: &FuzzContext) -> anyhow::Result<Target> {
    let run = ctx.fresh_dir("checkpoint")?;
    let dir = save_checkpoint(&run, &sample_checkpoint()?)?;
    let state = dir.join("state.json");
    let seeds = vec![std::fs::read(&state)?];
    Target::new("checkpoint", Kind::Json, seeds, move |input| {
        std::fs::write(&state, input)?;
        resume(&run)
    })
}

/// What `train --resume` does with the latest checkpoint of `run`.
fn resume(run: &Path) -> anyhow::Result<()> {
    let dir = latest_checkpoint(run)?.context("no checkpoint")?;
    let ck = load_checkpoint(&dir, &Device::Cpu)?;
    for r in ck.rngs.values() {
        r.restore()?.next_u64();
    }
    let vars = params(&PARAMS)?;
    restore(&vars, &ck.adapters)?;
    let mut opt = AdamW::new(vars.clone(), AdamWConfig::default())?;
    opt.load_state(ck.optimizer)?;
    step(&mut opt, &vars)?;
    if let Some(c) = ck.critic {
        let head = params(&[("value_head", &[4])])?;
        restore(&head, &c.tensors)?;
        let mut opt = AdamW::new(head.clone(), AdamWConfig::default())?;
        opt.load_state(c.optimizer)?;
        step(&mut opt, &head)?;
    }
    let _ = ck.step;
    let _ = serde_json::to_string(&ck.meta)?;
    Ok(())
}
