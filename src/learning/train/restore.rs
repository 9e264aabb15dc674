//! Restoring a checkpoint's tensors into a live model (policy adapters, PPO's critic) and seeding
//! the critic's dropout streams: the trainer's helpers that touch model tensors directly.

use super::checkpoint::{Checkpoint, ADAPTERS_FILE};
use crate::error::{Error, Result};
use crate::model::ChatModel;
use crate::seed::derive;

/// Seeds the adapters' dropout streams for the critic's update (the policy update re-seeds them
/// per micro-batch before its own passes, so the two never share masks).
pub fn set_critic_dropout(model: &ChatModel, seed: u64) -> Result<()> {
    if model.lora.as_ref().is_none_or(|l| l.dropout == 0.0) {
        return Ok(());
    }
    let base = derive(seed, u64::MAX);
    for (bi, block) in model.model.blocks().iter().enumerate() {
        for (pi, (_, proj)) in block.projections().iter().enumerate() {
            proj.set_dropout_seed(derive(base, (bi * 8 + pi) as u64))?;
        }
    }
    Ok(())
}

/// Sets `vars` from `tensors` by name; names and shapes must match exactly.
pub fn restore_vars(
    vars: &[(String, candle_core::Var)],
    tensors: &std::collections::BTreeMap<String, candle_core::Tensor>,
    file: &std::path::Path,
) -> Result<()> {
    if vars.len() != tensors.len() {
        return Err(Error::input(
            file,
            "tensors",
            format!(
                "{} tensors, the model has {}; resume with the run's own config.yaml",
                tensors.len(),
                vars.len()
            ),
        ));
    }
    for (name, var) in vars {
        let t = tensors
            .get(name)
            .filter(|t| t.dims() == var.dims())
            .ok_or_else(|| {
                Error::input(
                    file,
                    name,
                    "missing or misshapen; resume with the run's own config.yaml",
                )
            })?;
        var.set(&t.to_dtype(var.dtype())?)?;
    }
    Ok(())
}

/// Sets the model's adapters from a checkpoint; names and shapes must match exactly.
pub fn restore_adapters(model: &ChatModel, ckpt: &Checkpoint, dir: &std::path::Path) -> Result<()> {
    let vars = model.trainable();
    let file = dir.join(ADAPTERS_FILE);
    if vars.len() != ckpt.adapters.len() {
        return Err(Error::input(
            &file,
            "tensors",
            format!(
                "{} adapter tensors, the model has {}; resume with the run's own config.yaml",
                ckpt.adapters.len(),
                vars.len()
            ),
        ));
    }
    for (name, var) in vars {
        let t = ckpt
            .adapters
            .get(&name)
            .filter(|t| t.dims() == var.dims())
            .ok_or_else(|| {
                Error::input(
                    &file,
                    &name,
                    "missing or misshapen; resume with the run's own config.yaml",
                )
            })?;
        var.set(&t.to_dtype(var.dtype())?)?;
    }
    Ok(())
}
