//! Building a run's pieces from its configuration: the device, the policy model with its LoRA
//! adapters, and the profiles the steps draw from. Shared by `train`, `export` and the tests.

use candle_core::{DType, Device};

use super::config::TrainConfig;
use super::config_file::{CpuMatmul, DeviceKind, WeightDtype};
use super::difficulty_schedule::DifficultyPlan;
use super::trainer::streams;
use crate::environment::profile::{Catalog, Profile};
use crate::error::{Error, Result};
use crate::model::{load_model, open_cuda, ChatModel, ChatTemplate, LoadOptions};

/// The configured device.
pub fn device(cfg: &TrainConfig) -> Result<Device> {
    resolve_device(cfg.file.model.device, "model.device")
}

/// Where the appraiser embeds: `simulator.device`, by default the policy's device `policy`.
pub fn simulator_device(cfg: &TrainConfig, policy: &Device) -> Result<Device> {
    match cfg.file.simulator.device {
        Some(kind) => resolve_device(kind, "simulator.device"),
        None => Ok(policy.clone()),
    }
}

/// A device kind as a candle device (`field` names the setting in errors); `auto` falls back to
/// the CPU without CUDA.
pub fn resolve_device(kind: DeviceKind, field: &str) -> Result<Device> {
    match kind {
        DeviceKind::Cpu => Ok(Device::Cpu),
        DeviceKind::Auto if candle_core::utils::cuda_is_available() => Ok(open_cuda(0)?),
        DeviceKind::Auto => Ok(Device::Cpu),
        DeviceKind::Cuda => open_cuda(0).map_err(|e| {
            Error::Other(format!(
                "{field} is cuda but no CUDA device is usable ({e}); build with --features cuda \
                 on a machine with a GPU, or set {field}: cpu"
            ))
        }),
    }
}

/// The policy with fresh LoRA adapters (A drawn from the run seed, B zero).
pub fn load_policy(cfg: &TrainConfig, device: &Device) -> Result<ChatModel> {
    // A CPU setting: with model.device: auto on a GPU it does not apply.
    let bf16_products = cfg.file.model.cpu_matmul == CpuMatmul::Bf16 && device.is_cpu();
    if let Some(why) = bf16_products
        .then(crate::model::bf16_products_unavailable)
        .flatten()
    {
        return Err(Error::Other(format!(
            "model.cpu_matmul is bf16, but {why}; set model.cpu_matmul: f32 (the default)"
        )));
    }
    let opts = LoadOptions {
        lora: Some(cfg.file.lora.clone()),
        full_finetune: false,
        seed: crate::seed::derive(cfg.file.seed, streams::LORA_INIT),
        dtype: match cfg.file.model.dtype {
            WeightDtype::F32 => DType::F32,
            WeightDtype::Bf16 => DType::BF16,
        },
        bf16_products,
    };
    let mut model = load_model(&cfg.model_path, device, &opts)?;
    // Qwen3 thinks natively: with think-then-say its template leaves the <think> block to the
    // model; otherwise it writes the empty block that turns thinking off.
    if let ChatTemplate::Qwen3 { thinking } = &mut model.template {
        *thinking = cfg.file.env.think;
    }
    Ok(model)
}

/// The profiles of the configured split at the configured difficulty and knobs.
pub fn profiles(catalog: &Catalog, cfg: &TrainConfig) -> Result<Vec<Profile>> {
    let env = &cfg.file.env;
    catalog
        .split(env.split)
        .iter()
        .map(|id| catalog.profile(id, env.difficulty, &env.knobs))
        .collect()
}

/// The knobs of each step: the configured preset, or the `auto` controller.
pub fn difficulty_plan(catalog: &Catalog, cfg: &TrainConfig) -> DifficultyPlan {
    let env = &cfg.file.env;
    DifficultyPlan::new(
        &catalog.presets,
        env.difficulty,
        &env.knobs,
        env.auto.unwrap_or_default(),
    )
}

#[cfg(all(test, not(feature = "cuda")))]
mod tests {
    use super::*;

    #[test]
    fn auto_falls_back_to_the_cpu_without_cuda() {
        assert!(resolve_device(DeviceKind::Auto, "model.device")
            .unwrap()
            .is_cpu());
        assert!(resolve_device(DeviceKind::Cuda, "model.device").is_err());
    }

    #[test]
    fn the_simulator_embeds_on_the_policys_device_unless_told() {
        let cfg = |text: &str| TrainConfig::from_yaml(text, std::path::Path::new("t.yaml"), &[]);
        let dev = device(&cfg("").unwrap()).unwrap();
        assert!(simulator_device(&cfg("").unwrap(), &dev).unwrap().is_cpu());
        let told = cfg("simulator:\n  device: cuda\n").unwrap();
        let err = simulator_device(&told, &dev).unwrap_err().to_string();
        assert!(err.contains("simulator.device is cuda") && err.contains("simulator.device: cpu"));
    }
}
