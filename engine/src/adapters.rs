//! Saving and loading trainable tensors (LoRA A/B, or full projection weights) as safetensors,
//! keyed by their full names ("layers.3.attn.q_proj.lora_a").

use std::collections::HashMap;
use std::path::Path;

use candle_core::{Tensor, Var};

use super::weights::model_err;
use crate::error::{Error, Result};

/// Writes `vars` to `path` (written to a temporary name, then renamed).
pub fn save_vars(vars: &[(String, Var)], path: &Path) -> Result<()> {
    if vars.is_empty() {
        return Err(model_err(
            path,
            "the model has no trainable tensors to save; load it with a LoRA config",
        ));
    }
    let map: HashMap<String, Tensor> = vars
        .iter()
        .map(|(n, v)| (n.clone(), v.as_tensor().detach()))
        .collect();
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".partial");
    let tmp = std::path::PathBuf::from(tmp);
    candle_core::safetensors::save(&map, &tmp)
        .map_err(|e| model_err(&tmp, format!("cannot write adapters: {e}")))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}

/// Sets every var from the tensor of the same name in `path`; the file must hold exactly these
/// names with these shapes.
pub fn load_vars(vars: &[(String, Var)], path: &Path) -> Result<()> {
    if !path.is_file() {
        return Err(model_err(path, "adapter file not found"));
    }
    let mut file = candle_core::safetensors::load(
        path,
        &vars
            .first()
            .map(|(_, v)| v.device().clone())
            .unwrap_or(candle_core::Device::Cpu),
    )
    .map_err(|e| model_err(path, format!("cannot read safetensors: {e}")))?;
    for (name, var) in vars {
        let t = file
            .remove(name)
            .ok_or_else(|| model_err(path, format!("tensor {name} is missing; the adapters were saved for another model or LoRA config")))?;
        if t.dims() != var.dims() {
            return Err(model_err(
                path,
                format!(
                    "tensor {name} has shape {:?}, the model expects {:?}",
                    t.dims(),
                    var.dims()
                ),
            ));
        }
        var.set(&t.to_dtype(var.dtype())?)?;
    }
    if let Some(extra) = file.keys().next() {
        return Err(model_err(
            path,
            format!("tensor {extra} does not belong to this model's adapters"),
        ));
    }
    Ok(())
}
