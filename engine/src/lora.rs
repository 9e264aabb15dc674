//! Linear projections with a frozen base weight and optional LoRA adapters (Hu et al. 2021,
//! "LoRA: Low-Rank Adaptation of Large Language Models").
//!
//! y = x W^T + b + (alpha / r) * dropout(x) A^T B^T, with A [r, in] and B [out, r] trainable and W
//! frozen. B starts at zero (Hu et al. sec. 4.1), so a fresh adapter leaves the model equal to its
//! base; the reference policy of GRPO is the same layer with the adapter switched off
//! (`AdapterMode::Off`), so no second copy of the weights is kept.
//!
//! Two numerics: `Pass::Infer` is the generation path (no graph, fused matmuls); `Pass::Train`
//! routes the base through `ops::frozen_matmul`, whose backward never builds a weight gradient,
//! and a frozen base with a dropout-free adapter through `ops::lora_linear_train`, one op that
//! keeps none of the products alive for backward (same values and gradients, bit for bit).
//! Adapters are kept in f32 whatever the base dtype; the adapter branch casts x to f32 and its
//! result back, so a bf16 base on GPU trains f32 adapters.

use std::sync::{Arc, Mutex};

use candle_core::{DType, Result, Tensor, Var};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::ops::{frozen_matmul, linear_infer, lora_linear_train, plus_low_rank, Bf16Weight};

/// Which projections get adapters. Default: all seven.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum LoraTarget {
    /// Attention query projection.
    Q,
    /// Attention key projection.
    K,
    /// Attention value projection.
    V,
    /// Attention output projection.
    O,
    /// MLP gate projection.
    Gate,
    /// MLP up projection.
    Up,
    /// MLP down projection.
    Down,
}

impl LoraTarget {
    /// All seven projections of a Llama block, attention first.
    pub const ALL: [LoraTarget; 7] = [
        LoraTarget::Q,
        LoraTarget::K,
        LoraTarget::V,
        LoraTarget::O,
        LoraTarget::Gate,
        LoraTarget::Up,
        LoraTarget::Down,
    ];
}

/// LoRA hyper-parameters (Hu et al. 2021): delta W = (alpha / rank) * B A.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoraConfig {
    /// Rank r of the update (default 16).
    #[serde(default = "default_rank")]
    pub rank: usize,
    /// Scale numerator: the update is multiplied by alpha / rank (default 32, i.e. scale 2).
    #[serde(default = "default_alpha")]
    pub alpha: f64,
    /// Probability of zeroing an input feature of the adapter branch while training (default 0).
    #[serde(default)]
    pub dropout: f64,
    /// Projections that get adapters (default: all seven).
    #[serde(default = "default_targets")]
    pub targets: Vec<LoraTarget>,
}

fn default_rank() -> usize {
    16
}

fn default_alpha() -> f64 {
    32.0
}

fn default_targets() -> Vec<LoraTarget> {
    LoraTarget::ALL.to_vec()
}

impl Default for LoraConfig {
    fn default() -> Self {
        LoraConfig {
            rank: default_rank(),
            alpha: default_alpha(),
            dropout: 0.0,
            targets: default_targets(),
        }
    }
}

impl LoraConfig {
    /// The factor alpha / rank that multiplies B A (Hu et al. 2021, sec. 4.1).
    pub fn scale(&self) -> f64 {
        self.alpha / self.rank as f64
    }

    /// Checks the ranges: rank >= 1, alpha finite, 0 <= dropout < 1. The message says what to use.
    pub fn check(&self) -> std::result::Result<(), String> {
        if self.rank == 0 {
            return Err("lora rank must be at least 1 (default 16)".into());
        }
        if !self.alpha.is_finite() {
            return Err(format!(
                "lora alpha must be a finite number, got {}",
                self.alpha
            ));
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return Err(format!(
                "lora dropout must be in [0, 1), got {}",
                self.dropout
            ));
        }
        Ok(())
    }

    /// True if `target` gets an adapter.
    pub fn targets_contain(&self, target: LoraTarget) -> bool {
        self.targets.contains(&target)
    }
}

/// How a forward pass treats adapters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdapterMode {
    /// Base plus adapter: the policy being trained.
    On,
    /// Base only: the frozen reference policy.
    Off,
    /// Base plus the critic's own adapter (PPO's value network shares the frozen base).
    Critic,
}

/// Training or inference numerics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// Generation: no autograd graph, fused kernels.
    Infer,
    /// Training forward: differentiable ops, frozen weights give no gradient.
    Train,
}

/// The adapter of one layer: A [rank, in], B [out, rank], both f32 Vars.
struct Adapter {
    a: Var,
    b: Var,
    scale: f64,
    dropout: f64,
    /// Source of dropout masks; seeded, since candle's own RNG is not reproducible.
    dropout_rng: Mutex<ChaCha8Rng>,
}

/// A linear projection y = x W^T (+ b) with a frozen base weight and an optional adapter.
pub struct LoraLinear {
    weight: Tensor,
    bias: Option<Tensor>,
    adapter: Option<Adapter>,
    critic: Option<Adapter>,
    full: Option<Var>,
    /// The frozen weight packed for bf16 products (`model.cpu_matmul: bf16`), if asked for.
    bf16: Option<Arc<Bf16Weight>>,
    /// W + scale B A while a generation runs with the adapters merged (`Llama::merge_adapters`):
    /// what `Pass::Infer` with `AdapterMode::On` multiplies by instead of the base and the
    /// adapter.
    merged: Mutex<Option<Merged>>,
}

/// A merged weight W + scale B A: a tensor, or with bf16 products its forward pack (beside the
/// f32 stand-in, as the base keeps).
#[derive(Clone)]
struct Merged {
    weight: Tensor,
    bf16: Option<Arc<Bf16Weight>>,
}

/// x [..., in] as a 2-D [m, in] tensor plus the output dims [..., out].
fn flatten_rows(x: &Tensor, out: usize) -> Result<(Tensor, Vec<usize>)> {
    let in_dim = x.dim(candle_core::D::Minus1)?;
    let mut out_dims = x.dims().to_vec();
    let last = out_dims.len() - 1;
    out_dims[last] = out;
    let m = x.elem_count() / in_dim.max(1);
    Ok((x.contiguous()?.reshape((m, in_dim))?, out_dims))
}

impl LoraLinear {
    /// A layer with base weight [out, in] and optional bias [out]; no adapter, nothing trainable.
    ///
    /// On the CPU the weight is stored column-major (its transpose [in, out] is the contiguous
    /// buffer; `weight()` is still [out, in]): x W^T then multiplies by a contiguous matrix, which
    /// the gemm crate reads in place, while a row-major W is repacked on every call, most of a
    /// decoding step's matmul time at a few rows (results/perf/step.md, "Weights stored
    /// transposed"). Values are the same either way; cuBLAS has no such cost, so CUDA keeps W.
    pub fn new(weight: Tensor, bias: Option<Tensor>) -> Result<Self> {
        let weight = if weight.device().is_cpu() {
            weight.t()?.contiguous()?.t()?
        } else {
            weight
        };
        Ok(LoraLinear {
            weight,
            bias,
            adapter: None,
            critic: None,
            full: None,
            bf16: None,
            merged: Mutex::new(None),
        })
    }

    /// Adds an adapter: A [rank, in] ~ seeded init from `rng`, B [out, rank] = 0 (so the model starts equal to base).
    ///
    /// A is drawn uniformly from [-1/sqrt(in), 1/sqrt(in)], which is what PEFT's
    /// `kaiming_uniform_(a = sqrt(5))` gives: bound = sqrt(6 / ((1 + 5) * in)) = 1 / sqrt(in).
    /// The dropout stream is seeded from `rng` too; `set_dropout_seed` re-seeds it.
    pub fn attach_adapter(&mut self, cfg: &LoraConfig, rng: &mut ChaCha8Rng) -> Result<()> {
        self.adapter = Some(self.new_adapter(cfg, rng)?);
        Ok(())
    }

    /// Adds the critic's own adapter (PPO), initialised like the policy's (B = 0), used only by
    /// `AdapterMode::Critic` forwards.
    pub fn attach_critic_adapter(&mut self, cfg: &LoraConfig, rng: &mut ChaCha8Rng) -> Result<()> {
        self.critic = Some(self.new_adapter(cfg, rng)?);
        Ok(())
    }

    fn new_adapter(&self, cfg: &LoraConfig, rng: &mut ChaCha8Rng) -> Result<Adapter> {
        cfg.check().map_err(candle_core::Error::Msg)?;
        let (out_dim, in_dim) = self.weight.dims2()?;
        let device = self.weight.device();
        let bound = 1.0 / (in_dim as f32).sqrt();
        let a: Vec<f32> = (0..cfg.rank * in_dim)
            .map(|_| rng.random_range(-bound..=bound))
            .collect();
        let a = Var::from_tensor(&Tensor::from_vec(a, (cfg.rank, in_dim), device)?)?;
        let b = Var::zeros((out_dim, cfg.rank), DType::F32, device)?;
        Ok(Adapter {
            a,
            b,
            scale: cfg.scale(),
            dropout: cfg.dropout,
            dropout_rng: Mutex::new(ChaCha8Rng::seed_from_u64(rng.random())),
        })
    }

    /// Full fine-tuning: the base weight becomes a Var (trained with plain matmul backward).
    pub fn make_base_trainable(&mut self) -> Result<()> {
        if self.full.is_none() {
            let var = Var::from_tensor(&self.weight)?;
            // Share the Var's storage so the original copy can be freed.
            self.weight = var.as_tensor().clone();
            self.full = Some(var);
        }
        Ok(())
    }

    /// Packs the frozen base weight for bf16 products (`ops::Bf16Weight`): its products, in
    /// training, scoring and generation, then run in bf16 with f32 sums. An error under full
    /// fine-tuning (the weight changes every step) or without AVX2 and FMA.
    ///
    /// No product reads the f32 weight after this, so it is dropped (SmolLM2-135M: 424 MB): a
    /// stand-in of its shape takes its place, NaN wherever something reads it by mistake, and
    /// `merged_weight` refuses (export loads the model with f32 products).
    pub fn pack_bf16(&mut self) -> Result<()> {
        if self.full.is_some() {
            candle_core::bail!("bf16 products need frozen base weights, not full fine-tuning")
        }
        self.bf16 = Some(Arc::new(Bf16Weight::pack(&self.weight)?));
        self.weight =
            Tensor::new(f32::NAN, self.weight.device())?.broadcast_as(self.weight.shape())?;
        Ok(())
    }

    /// Re-seeds the dropout mask stream of the adapter (no effect without one or at dropout 0).
    pub fn set_dropout_seed(&self, seed: u64) -> Result<()> {
        let critic_seed = crate::seed::derive(seed, 1);
        let both = [(&self.adapter, seed), (&self.critic, critic_seed)];
        for (ad, seed) in both {
            let Some(ad) = ad else { continue };
            let mut rng = ad
                .dropout_rng
                .lock()
                .map_err(|_| candle_core::Error::Msg("lora dropout rng lock poisoned".into()))?;
            *rng = ChaCha8Rng::seed_from_u64(seed);
        }
        Ok(())
    }

    /// The dropout streams of the adapter and the critic's adapter as they are now, for
    /// [`LoraLinear::restore_dropout_streams`] (activation checkpointing draws a recomputed
    /// forward's masks again from the same state).
    pub(crate) fn dropout_streams(&self) -> Result<[Option<ChaCha8Rng>; 2]> {
        let read = |ad: &Option<Adapter>| -> Result<Option<ChaCha8Rng>> {
            ad.as_ref()
                .map(|ad| {
                    ad.dropout_rng.lock().map(|r| r.clone()).map_err(|_| {
                        candle_core::Error::Msg("lora dropout rng lock poisoned".into())
                    })
                })
                .transpose()
        };
        Ok([read(&self.adapter)?, read(&self.critic)?])
    }

    /// Puts back streams saved by [`LoraLinear::dropout_streams`].
    pub(crate) fn restore_dropout_streams(&self, saved: &[Option<ChaCha8Rng>; 2]) -> Result<()> {
        for (ad, state) in [&self.adapter, &self.critic].into_iter().zip(saved) {
            if let (Some(ad), Some(state)) = (ad, state) {
                *ad.dropout_rng.lock().map_err(|_| {
                    candle_core::Error::Msg("lora dropout rng lock poisoned".into())
                })? = state.clone();
            }
        }
        Ok(())
    }

    /// The current base weight [out, in] (the Var's value under full fine-tuning).
    pub fn weight(&self) -> &Tensor {
        match &self.full {
            Some(v) => v.as_tensor(),
            None => &self.weight,
        }
    }

    /// The bias [out], if the layer has one (Qwen2 q/k/v).
    pub fn bias(&self) -> Option<&Tensor> {
        self.bias.as_ref()
    }

    /// True if an adapter is attached.
    pub fn has_adapter(&self) -> bool {
        self.adapter.is_some()
    }

    /// The adapter factors (A [rank, in], B [out, rank]) and scale alpha / rank, if attached.
    pub fn adapter_parts(&self) -> Option<(&Var, &Var, f64)> {
        self.adapter.as_ref().map(|ad| (&ad.a, &ad.b, ad.scale))
    }

    /// Infer: fused fast path (adapter added when On). Train: frozen_matmul for the base (or plain matmul when
    /// the base is trainable) + differentiable adapter path (dropout mask from `dropout_rng` when dropout > 0).
    pub fn forward(&self, x: &Tensor, mode: AdapterMode, pass: Pass) -> Result<Tensor> {
        let (out_dim, _) = self.weight.dims2()?;
        let (x2, out_dims) = flatten_rows(x, out_dim)?;
        let adapter = match mode {
            AdapterMode::On => self.adapter.as_ref(),
            AdapterMode::Critic => self.critic.as_ref(),
            AdapterMode::Off => None,
        };
        // Frozen base, adapter without dropout: one op that keeps no intermediate for backward.
        if let (Pass::Train, None, Some(ad)) = (pass, &self.full, adapter) {
            if ad.dropout == 0.0 {
                let (a, b) = (ad.a.as_tensor(), ad.b.as_tensor());
                let bias = self.bias.as_ref();
                let w = (&self.weight, self.bf16.as_ref());
                return lora_linear_train(&x2, w, bias, a, b, ad.scale)?.reshape(out_dims);
            }
        }
        let merged = match (pass, mode) {
            (Pass::Infer, AdapterMode::On) => self.merged_copy()?,
            _ => None,
        };
        let mut y = match (pass, &self.full, &merged) {
            (Pass::Infer, _, Some(m)) => linear_infer(&x2.detach(), &m.weight, m.bf16.as_ref())?,
            (Pass::Infer, _, None) => {
                linear_infer(&x2.detach(), &self.weight().detach(), self.bf16.as_ref())?
            }
            (Pass::Train, Some(w), _) => x2.matmul(&w.as_tensor().t()?)?,
            (Pass::Train, None, _) => frozen_matmul(&x2, &self.weight, self.bf16.as_ref())?,
        };
        if let Some(b) = &self.bias {
            y = y.broadcast_add(&b.to_dtype(y.dtype())?)?;
        }
        // A merged copy holds the adapter already.
        if let (Some(ad), None) = (adapter, &merged) {
            let delta = match pass {
                Pass::Infer => adapter_infer(ad, &x2)?,
                Pass::Train => adapter_train(ad, &x2)?,
            };
            y = (y + delta.to_dtype(x.dtype())?)?;
        }
        y.reshape(out_dims)
    }

    /// Named trainable tensors of this layer, names relative to the layer: "lora_a", "lora_b" or "weight".
    pub fn trainable(&self) -> Vec<(String, Var)> {
        let mut out = Vec::new();
        if let Some(w) = &self.full {
            out.push(("weight".to_string(), w.clone()));
        }
        if let Some(ad) = &self.adapter {
            out.push(("lora_a".to_string(), ad.a.clone()));
            out.push(("lora_b".to_string(), ad.b.clone()));
        }
        out
    }

    /// The critic adapter's tensors ("lora_a", "lora_b"), if attached.
    pub fn critic_trainable(&self) -> Vec<(String, Var)> {
        match &self.critic {
            Some(ad) => vec![
                ("lora_a".to_string(), ad.a.clone()),
                ("lora_b".to_string(), ad.b.clone()),
            ],
            None => Vec::new(),
        }
    }

    /// W + (alpha/rank) B A, for export (row-major [out, in]). An error once the weight is packed
    /// for bf16 products (`pack_bf16` drops the f32 weight).
    pub fn merged_weight(&self) -> Result<Tensor> {
        if self.bf16.is_some() {
            candle_core::bail!(
                "the merged weight needs the f32 base weight, which bf16 products \
                 (model.cpu_matmul: bf16) drop: load the model with f32 products to export it"
            )
        }
        let w = self.weight().detach();
        match &self.adapter {
            None => w.contiguous(),
            Some(ad) => w
                .to_dtype(DType::F32)?
                .add(&adapter_delta(ad)?)?
                .to_dtype(w.dtype()),
        }
    }

    /// Keeps W + scale B A for `Pass::Infer` with `AdapterMode::On` (`merge: true`, a layer with
    /// an adapter) or drops it (`merge: false`): `merged_weight()`, or with bf16 products
    /// bf16(bf16(W) + scale B A) packed (`Bf16Weight::plus_product`). The copy goes stale when A
    /// or B change: the `Llama::merge_adapters` guard that made it drops it.
    pub fn set_merged(&self, merge: bool) -> Result<()> {
        let m = match (merge, &self.adapter, &self.bf16) {
            (true, Some(ad), Some(p)) => {
                let (a, b) = (ad.a.as_tensor(), ad.b.as_tensor());
                Some(Merged {
                    weight: self.weight.clone(),
                    bf16: Some(Arc::new(p.plus_product(a, b, ad.scale)?)),
                })
            }
            (true, Some(ad), None) => Some(Merged {
                weight: self.merged_in_base_order(ad)?,
                bf16: None,
            }),
            _ => None,
        };
        *self.merged.lock().map_err(|_| poisoned())? = m;
        Ok(())
    }

    /// W + scale B A stored as W is: column-major in f32 on the CPU (`new`), so that decoding
    /// reads the merged weight as it reads the base's (`ops::plus_low_rank`: one copy of W and
    /// gemm adding the product into it); elsewhere `merged_weight()`.
    fn merged_in_base_order(&self, ad: &Adapter) -> Result<Tensor> {
        let w = self.weight().detach();
        if !w.device().is_cpu() || w.dtype() != DType::F32 || !w.t()?.is_contiguous() {
            return self.merged_weight();
        }
        let (a, b) = (ad.a.as_tensor().detach(), ad.b.as_tensor().detach());
        // (W + scale B A)^T = W^T + scale A^T B^T, [in, out] contiguous.
        plus_low_rank(&w.t()?, &a.t()?, &b.t()?, ad.scale)?.t()
    }

    fn merged_copy(&self) -> Result<Option<Merged>> {
        Ok(self.merged.lock().map_err(|_| poisoned())?.clone())
    }
}

/// scale B A [out, in] without a graph, in f32: what merging adds to W.
fn adapter_delta(ad: &Adapter) -> Result<Tensor> {
    let (a, b) = (ad.a.as_tensor().detach(), ad.b.as_tensor().detach());
    b.matmul(&a)? * ad.scale
}

/// scale * (x A^T) B^T without a graph, in f32.
fn adapter_infer(ad: &Adapter, x2: &Tensor) -> Result<Tensor> {
    let xf = x2.detach().to_dtype(DType::F32)?;
    let h = (linear_infer(&xf, &ad.a.as_tensor().detach(), None)? * ad.scale)?;
    linear_infer(&h, &ad.b.as_tensor().detach(), None)
}

/// scale * (dropout(x) A^T) B^T with gradients for A and B (and x), in f32.
fn adapter_train(ad: &Adapter, x2: &Tensor) -> Result<Tensor> {
    let mut xf = x2.to_dtype(DType::F32)?;
    if ad.dropout > 0.0 {
        xf = xf.mul(&dropout_mask(ad, xf.dims2()?, xf.device())?)?;
    }
    // Scaling the [m, rank] intermediate is cheaper than scaling the [m, out] result.
    let h = (xf.matmul(&ad.a.as_tensor().t()?)? * ad.scale)?;
    h.matmul(&ad.b.as_tensor().t()?)
}

/// Inverted-dropout mask [m, in]: 0 with probability p, else 1 / (1 - p) (Srivastava et al. 2014),
/// drawn from the adapter's seeded stream.
fn dropout_mask(ad: &Adapter, (m, n): (usize, usize), dev: &candle_core::Device) -> Result<Tensor> {
    let keep = (1.0 / (1.0 - ad.dropout)) as f32;
    let mut rng = ad
        .dropout_rng
        .lock()
        .map_err(|_| candle_core::Error::Msg("lora dropout rng lock poisoned".into()))?;
    let mask: Vec<f32> = (0..m * n)
        .map(|_| {
            if rng.random::<f64>() < ad.dropout {
                0.0
            } else {
                keep
            }
        })
        .collect();
    Tensor::from_vec(mask, (m, n), dev)
}

fn poisoned() -> candle_core::Error {
    candle_core::Error::Msg("lora: the merged weight's lock was poisoned".into())
}

#[cfg(test)]
mod tests {
    use candle_core::{DType, Device, Tensor};
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn on_the_cpu_a_merged_copy_is_stored_as_the_base_is_and_holds_the_sum() -> Result<()> {
        // W [3, 2] = [[1, 2], [3, 4], [5, 6]], A [1, 2] = [[1, -1]], B [3, 1] = [[1], [0], [2]],
        // alpha 2 at rank 1 (scale 2): W + 2 B A = [[3, 0], [3, 4], [9, 2]].
        let w = Tensor::new(&[[1f32, 2.], [3., 4.], [5., 6.]], &Device::Cpu)?;
        let mut layer = LoraLinear::new(w, None)?;
        let cfg = LoraConfig {
            rank: 1,
            alpha: 2.0,
            ..LoraConfig::default()
        };
        layer.attach_adapter(&cfg, &mut ChaCha8Rng::seed_from_u64(0))?;
        let t = layer.trainable();
        t[0].1.set(&Tensor::new(&[[1f32, -1.]], &Device::Cpu)?)?;
        t[1].1
            .set(&Tensor::new(&[[1f32], [0.], [2.]], &Device::Cpu)?)?;
        layer.set_merged(true)?;
        let merged = layer.merged_copy()?.expect("a merged copy").weight;
        // Column-major, as `new` stores the base, so decoding reads W^T's rows in place.
        assert!(merged.t()?.is_contiguous() && layer.weight().t()?.is_contiguous());
        assert_eq!(merged.dtype(), DType::F32);
        assert_eq!(merged.to_vec2::<f32>()?, [[3., 0.], [3., 4.], [9., 2.]]);
        layer.set_merged(false)?;
        assert!(layer.merged_copy()?.is_none());
        Ok(())
    }
}
