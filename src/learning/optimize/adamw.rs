//! AdamW over named candle `Var`s (Loshchilov & Hutter 2019, "Decoupled Weight Decay
//! Regularization", Algorithm 2, in PyTorch's formulation), with global grad-norm clipping, a
//! learning-rate schedule, a guard that skips a step on a non-finite loss or gradient, and state
//! that saves to and loads from safetensors exactly, so a resumed run continues bit for bit.
//!
//! One update at step t (1-based) with rate lr_t from the schedule:
//!   g <- g * min(1, max_norm / (||g|| + 1e-6))          (torch.nn.utils.clip_grad_norm_)
//!   theta <- theta * (1 - lr_t * weight_decay)          (decoupled decay)
//!   m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2
//!   theta <- theta - lr_t / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
//! A skipped step changes nothing: not the weights, not m or v, not the step counter.
//!
//! On a GPU the update runs over all parameters at once, as PyTorch's multi-tensor AdamW does:
//! the gradients are gathered into one flat vector, the moments live in one flat vector each,
//! each formula above is one op, and the new weights are copied back into their `Var`s. One
//! parameter at a time it was ~19 ops each, 8000 kernel launches a step for SmolLM2's 420 LoRA
//! tensors: several times PyTorch's optimizer time on the same GPU (results/perf/gpu.md, "Where
//! the update's time went: the optimizer"). On a CPU each parameter stays its own chunk: its ~15
//! passes then run in cache, where one flat vector made the quickstart's optimizer slower
//! (results/perf/step.md, "AdamW as one flat vector on a GPU, one parameter at a time on a
//! CPU"). The ops are elementwise, so a weight gets the same bits either way. Each dtype makes
//! its own chunk. A chunk's parameters are ordered by size, so each run of one size sums its
//! squares in one reduction with the bits of a sum per parameter.

use std::collections::BTreeMap;

use candle_core::{backprop::GradStore, DType, Device, Tensor, Var};
use serde::{Deserialize, Serialize};

use super::schedule::LrSchedule;
use crate::error::{Error, Result};

/// Added to the gradient norm before dividing, as in `torch.nn.utils.clip_grad_norm_`.
const CLIP_EPS: f64 = 1e-6;

/// Optimizer hyper-parameters; defaults are PyTorch's `AdamW` except the rate and the clip.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdamWConfig {
    /// Peak learning rate (default 1e-5, the warmth paper's LoRA rate; RLVER used 1e-6 for
    /// full fine-tuning of a 7B model).
    #[serde(default = "default_lr")]
    pub lr: f64,
    /// First-moment decay (default 0.9).
    #[serde(default = "default_beta1")]
    pub beta1: f64,
    /// Second-moment decay (default 0.999).
    #[serde(default = "default_beta2")]
    pub beta2: f64,
    /// Added to sqrt(v) (default 1e-8).
    #[serde(default = "default_eps")]
    pub eps: f64,
    /// Decoupled weight decay per unit of learning rate (default 0.01, PyTorch `AdamW`).
    #[serde(default = "default_weight_decay")]
    pub weight_decay: f64,
    /// Global L2 norm the gradients are clipped to (default 1.0; `null` turns clipping off).
    #[serde(default = "default_max_grad_norm")]
    pub max_grad_norm: Option<f64>,
    /// Learning-rate schedule (default: constant, no warmup).
    #[serde(default)]
    pub schedule: LrSchedule,
}

fn default_lr() -> f64 {
    1e-5
}
fn default_beta1() -> f64 {
    0.9
}
fn default_beta2() -> f64 {
    0.999
}
fn default_eps() -> f64 {
    1e-8
}
fn default_weight_decay() -> f64 {
    0.01
}
fn default_max_grad_norm() -> Option<f64> {
    Some(1.0)
}

impl Default for AdamWConfig {
    fn default() -> Self {
        Self {
            lr: default_lr(),
            beta1: default_beta1(),
            beta2: default_beta2(),
            eps: default_eps(),
            weight_decay: default_weight_decay(),
            max_grad_norm: default_max_grad_norm(),
            schedule: LrSchedule::default(),
        }
    }
}

/// What one call to [`AdamW::step`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum StepOutcome {
    /// The weights moved.
    Applied {
        /// The optimizer step just taken (1-based).
        step: u64,
        /// Learning rate used.
        lr: f64,
        /// Global gradient L2 norm before clipping.
        grad_norm: f64,
        /// Whether the gradients were scaled down.
        clipped: bool,
    },
    /// Nothing changed.
    Skipped(SkipReason),
}

impl StepOutcome {
    /// The pre-clip gradient norm, when the step was applied.
    pub fn grad_norm(&self) -> Option<f64> {
        match self {
            StepOutcome::Applied { grad_norm, .. } => Some(*grad_norm),
            StepOutcome::Skipped(_) => None,
        }
    }
}

/// Why a step was skipped.
#[derive(Debug, Clone, PartialEq)]
pub enum SkipReason {
    /// The loss was NaN or infinite.
    NonFiniteLoss(f64),
    /// The gradient of this parameter had a NaN or infinite entry (or its squares overflowed).
    NonFiniteGrad {
        /// Name of the first such parameter.
        param: String,
    },
}

/// The optimizer's state: the number of steps taken and both moments per named parameter.
#[derive(Debug, Clone)]
pub struct AdamWState {
    /// Steps applied so far.
    pub step: u64,
    /// First moments by parameter name.
    pub m: BTreeMap<String, Tensor>,
    /// Second moments by parameter name.
    pub v: BTreeMap<String, Tensor>,
}

struct Param {
    name: String,
    var: Var,
    /// The chunk that holds the parameter, and where its elements start in the chunk's vectors.
    chunk: usize,
    offset: usize,
}

impl Param {
    fn len(&self) -> usize {
        self.var.elem_count()
    }

    /// This parameter's part of its chunk's flat vector `flat`, in its own shape.
    fn part_of(&self, flat: &Tensor) -> Result<Tensor> {
        Ok(flat
            .narrow(0, self.offset, self.len())?
            .reshape(self.var.shape())?)
    }
}

/// Parameters updated together, by ops over one flat vector of their elements.
struct Chunk {
    /// Indices into the optimizer's parameters, by size then by name: the flat order.
    members: Vec<usize>,
    /// Runs of members with the same number of elements.
    runs: Vec<SizeRun>,
    m: Tensor,
    v: Tensor,
}

/// Consecutive members of a chunk that have the same number of elements.
struct SizeRun {
    offset: usize,
    count: usize,
    len: usize,
}

impl Chunk {
    /// Chunk `k` of `members` (indices into `params`, in flat order, of one dtype), with zero
    /// moments; sets each member's chunk and offset.
    fn new(k: usize, members: Vec<usize>, params: &mut [Param]) -> Result<Self> {
        let mut runs: Vec<SizeRun> = Vec::new();
        let mut offset = 0;
        for &i in &members {
            let len = params[i].len();
            (params[i].chunk, params[i].offset) = (k, offset);
            match runs.last_mut() {
                Some(r) if r.len == len => r.count += 1,
                _ => runs.push(SizeRun {
                    offset,
                    count: 1,
                    len,
                }),
            }
            offset += len;
        }
        let first = &params[members[0]].var;
        let m = Tensor::zeros(offset, first.dtype(), first.device())?;
        Ok(Self {
            members,
            runs,
            v: m.clone(),
            m,
        })
    }

    /// One flat vector of `part(i)` for every member `i`, in flat order.
    fn gather(&self, part: impl Fn(usize) -> Result<Tensor>) -> Result<Tensor> {
        let parts = self
            .members
            .iter()
            .map(|&i| Ok(part(i)?.flatten_all()?))
            .collect::<Result<Vec<_>>>()?;
        Ok(Tensor::cat(&parts, 0)?)
    }

    /// The members' sums of the squares of `g` (this chunk's gathered gradient) in f64, in flat
    /// order, not yet read back: one reduction per run of one size.
    fn sums_of_squares(&self, g: &Tensor) -> Result<Vec<Tensor>> {
        let sq = g.to_dtype(DType::F64)?.sqr()?;
        self.runs
            .iter()
            .map(|r| {
                let run = sq.narrow(0, r.offset, r.count * r.len)?;
                Ok(run.reshape((r.count, r.len))?.sum(1)?)
            })
            .collect()
    }
}

/// AdamW over a fixed, named set of trainable variables.
pub struct AdamW {
    cfg: AdamWConfig,
    /// Sorted by name: the order the norm is summed in and the state is listed in.
    params: Vec<Param>,
    chunks: Vec<Chunk>,
    step: u64,
}

impl AdamW {
    /// An optimizer with zero moments over `vars` (names must be unique; they are kept sorted so
    /// sums run in the same order every time).
    ///
    /// All parameters must be on one device. A GPU updates them as one chunk per dtype, a CPU
    /// one parameter at a time (module doc).
    pub fn new(vars: impl IntoIterator<Item = (String, Var)>, cfg: AdamWConfig) -> Result<Self> {
        let vars: Vec<(String, Var)> = vars.into_iter().collect();
        let per_param = vars.first().is_some_and(|(_, v)| v.device().is_cpu());
        Self::chunked(vars, cfg, per_param)
    }

    /// [`new`](Self::new) with the chunks chosen: one per parameter, or one per dtype.
    fn chunked(vars: Vec<(String, Var)>, cfg: AdamWConfig, per_param: bool) -> Result<Self> {
        let mut params: Vec<Param> = vars
            .into_iter()
            .map(|(name, var)| Param {
                name,
                var,
                chunk: 0,
                offset: 0,
            })
            .collect();
        params.sort_by(|a, b| a.name.cmp(&b.name));
        if let Some(w) = params.windows(2).find(|w| w[0].name == w[1].name) {
            return Err(Error::Other(format!(
                "AdamW: parameter {} given twice",
                w[0].name
            )));
        }
        if let Some(first) = params.first() {
            let device = first.var.device();
            if let Some(p) = params.iter().find(|p| !p.var.device().same_device(device)) {
                return Err(Error::Other(format!(
                    "AdamW: parameters {} and {} are on different devices; one optimizer takes \
                     parameters on one device",
                    first.name, p.name
                )));
            }
        }
        // The flat order: by dtype, then size, then name (a stable sort of the names). A chunk
        // is a run of it of one dtype, or a single parameter.
        let key = |p: &Param| (p.var.dtype().as_str(), p.len());
        let mut flat_order: Vec<usize> = (0..params.len()).collect();
        flat_order.sort_by_key(|&i| key(&params[i]));
        let mut members: Vec<Vec<usize>> = Vec::new();
        for i in flat_order {
            let dtype = params[i].var.dtype();
            match members.last_mut() {
                Some(m) if !per_param && params[m[0]].var.dtype() == dtype => m.push(i),
                _ => members.push(vec![i]),
            }
        }
        let chunks = members
            .into_iter()
            .enumerate()
            .map(|(k, members)| Chunk::new(k, members, &mut params))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            cfg,
            params,
            chunks,
            step: 0,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &AdamWConfig {
        &self.cfg
    }

    /// Steps applied so far (skipped steps do not count).
    pub fn steps_done(&self) -> u64 {
        self.step
    }

    /// The learning rate the next applied step will use.
    pub fn next_lr(&self) -> f64 {
        self.cfg.schedule.lr_at(self.cfg.lr, self.step + 1)
    }

    /// The parameters, sorted by name.
    pub fn vars(&self) -> impl Iterator<Item = (&str, &Var)> {
        self.params.iter().map(|p| (p.name.as_str(), &p.var))
    }

    /// One update from `grads` (accumulated over micro-batches if need be) for a batch whose loss
    /// was `loss`. Every parameter must have a gradient in `grads`.
    pub fn step(&mut self, loss: f64, grads: &GradStore) -> Result<StepOutcome> {
        if !loss.is_finite() {
            return Ok(StepOutcome::Skipped(SkipReason::NonFiniteLoss(loss)));
        }
        let gs = self
            .chunks
            .iter()
            .map(|c| {
                c.gather(|i| {
                    let p = &self.params[i];
                    let g = grads.get(p.var.as_tensor()).ok_or_else(|| {
                        Error::Other(format!("AdamW: no gradient for parameter {}", p.name))
                    })?;
                    Ok(g.detach().to_dtype(p.var.dtype())?)
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let mut sum_sq = 0.0f64;
        for (p, sq) in self.params.iter().zip(self.sums_of_squares(&gs)?) {
            if !sq.is_finite() {
                let param = p.name.clone();
                return Ok(StepOutcome::Skipped(SkipReason::NonFiniteGrad { param }));
            }
            sum_sq += sq;
        }
        let grad_norm = sum_sq.sqrt();
        let coef = clip_coefficient(grad_norm, self.cfg.max_grad_norm);
        let t = self.step + 1;
        let lr = self.cfg.schedule.lr_at(self.cfg.lr, t);
        for (c, g) in self.chunks.iter_mut().zip(gs) {
            let g = if coef < 1.0 { (g * coef)? } else { g };
            let theta = c.gather(|i| Ok(self.params[i].var.as_tensor().clone()))?;
            let (next, m, v) = adamw_update(&theta, &g, &c.m, &c.v, &self.cfg, lr, t)?;
            for &i in &c.members {
                let p = &self.params[i];
                p.var.set(&p.part_of(&next)?)?;
            }
            (c.m, c.v) = (m, v);
        }
        self.step = t;
        Ok(StepOutcome::Applied {
            step: t,
            lr,
            grad_norm,
            clipped: coef < 1.0,
        })
    }

    /// Each parameter's sum of squared gradients in f64, in name order, from every chunk's
    /// gathered gradient `gs`: read back at once, on a GPU one synchronization per step rather
    /// than one per parameter.
    fn sums_of_squares(&self, gs: &[Tensor]) -> Result<Vec<f64>> {
        let mut sums = Vec::new();
        for (c, g) in self.chunks.iter().zip(gs) {
            sums.extend(c.sums_of_squares(g)?);
        }
        if sums.is_empty() {
            return Ok(Vec::new());
        }
        let flat_sums = Tensor::cat(&sums, 0)?.to_vec1::<f64>()?;
        let mut by_name = vec![0.0; self.params.len()];
        let flat_order = self.chunks.iter().flat_map(|c| &c.members);
        for (&i, sum) in flat_order.zip(flat_sums) {
            by_name[i] = sum;
        }
        Ok(by_name)
    }

    /// A copy of the state, one tensor per parameter and moment. A parameter alone in its
    /// chunk (a CPU) shares the chunk's immutable tensor. Of a chunk of several (a GPU), each
    /// part is copied on the device into storage of its own size: candle reads any part of a GPU
    /// tensor back by copying its whole storage (and `Tensor::copy` clones it whole), so a
    /// checkpoint of views would move the whole chunk (20 MB for SmolLM2's adapters) 840 times.
    pub fn state(&self) -> Result<AdamWState> {
        let parts = |first: bool| -> Result<BTreeMap<String, Tensor>> {
            let moments = |p: &Param| -> Result<Tensor> {
                let c = &self.chunks[p.chunk];
                let part = p.part_of(if first { &c.m } else { &c.v })?;
                match c.members.len() {
                    1 => Ok(part),
                    _ => Ok(part.force_contiguous()?),
                }
            };
            self.params
                .iter()
                .map(|p| Ok((p.name.clone(), moments(p)?)))
                .collect()
        };
        Ok(AdamWState {
            step: self.step,
            m: parts(true)?,
            v: parts(false)?,
        })
    }

    /// Replaces the state with `state`, which must hold exactly this optimizer's parameters with
    /// matching shapes.
    pub fn load_state(&mut self, state: AdamWState) -> Result<()> {
        let mut state = state;
        if state.m.len() != self.params.len() || state.v.len() != self.params.len() {
            return Err(Error::Other(format!(
                "AdamW state holds {} / {} moments for {} parameters",
                state.m.len(),
                state.v.len(),
                self.params.len()
            )));
        }
        let mut loaded = Vec::with_capacity(self.params.len());
        for p in &self.params {
            let shape = p.var.as_tensor().shape();
            match (state.m.remove(&p.name), state.v.remove(&p.name)) {
                (Some(m), Some(v)) if m.shape() == shape && v.shape() == shape => {
                    loaded.push((m, v));
                }
                _ => {
                    return Err(Error::Other(format!(
                        "AdamW state: missing or misshapen moments for {} (expected {shape:?})",
                        p.name
                    )))
                }
            };
        }
        let mut moments = Vec::with_capacity(self.chunks.len());
        for c in &self.chunks {
            let moment = |first: bool| {
                c.gather(|i| {
                    let (p, (m, v)) = (&self.params[i], &loaded[i]);
                    let t = if first { m } else { v };
                    Ok(t.to_device(p.var.device())?.to_dtype(p.var.dtype())?)
                })
            };
            moments.push((moment(true)?, moment(false)?));
        }
        for (c, (m, v)) in self.chunks.iter_mut().zip(moments) {
            (c.m, c.v) = (m, v);
        }
        self.step = state.step;
        Ok(())
    }
}

/// The factor gradients are scaled by: max_norm / (norm + 1e-6) when that is below 1, else 1
/// (`torch.nn.utils.clip_grad_norm_`).
pub fn clip_coefficient(grad_norm: f64, max_norm: Option<f64>) -> f64 {
    match max_norm {
        Some(max) => (max / (grad_norm + CLIP_EPS)).min(1.0),
        None => 1.0,
    }
}

/// One AdamW update of weights `theta` with (clipped) gradient `g` and moments `m`, `v` at step
/// `t` and rate `lr` (the formulas at the top of this file): the new weights and moments.
fn adamw_update(
    theta: &Tensor,
    g: &Tensor,
    m: &Tensor,
    v: &Tensor,
    cfg: &AdamWConfig,
    lr: f64,
    t: u64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let decayed = (theta * (1.0 - lr * cfg.weight_decay))?;
    let m = ((m * cfg.beta1)? + (g * (1.0 - cfg.beta1))?)?;
    let v = ((v * cfg.beta2)? + (g.sqr()? * (1.0 - cfg.beta2))?)?;
    let bc1 = 1.0 - cfg.beta1.powi(t as i32);
    let bc2_sqrt = (1.0 - cfg.beta2.powi(t as i32)).sqrt();
    let denom = ((v.sqrt()? / bc2_sqrt)? + cfg.eps)?;
    let next = (decayed - ((&m / denom)? * (lr / bc1))?)?;
    Ok((next, m, v))
}

/// `bytes` (a safetensors file) with its JSON header's keys sorted. safetensors writes the
/// metadata from a HashMap, whose order changes from one process to the next, so two runs of one
/// seed wrote checkpoints that differed in that order alone. Sorting keeps the header's length,
/// and readers find tensors by name and offset, not by order.
fn sorted_header(mut bytes: Vec<u8>) -> Result<Vec<u8>> {
    let internal = |what: &str| Error::Other(format!("AdamW state: {what} after serializing"));
    let len = bytes
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .map(|b: [u8; 8]| u64::from_le_bytes(b) as usize)
        .filter(|&n| 8 + n <= bytes.len())
        .ok_or_else(|| internal("no header"))?;
    let header = std::str::from_utf8(&bytes[8..8 + len]).map_err(|_| internal("a bad header"))?;
    let json = header.trim_end(); // safetensors pads the header with spaces
    let mut top: BTreeMap<String, serde_json::Value> =
        serde_json::from_str(json).map_err(|_| internal("a bad header"))?;
    if let Some(meta) = top.remove("__metadata__") {
        let meta: BTreeMap<String, String> =
            serde_json::from_value(meta).map_err(|_| internal("bad metadata"))?;
        let meta = serde_json::to_value(meta).map_err(|_| internal("bad metadata"))?;
        top.insert("__metadata__".to_string(), meta);
    }
    let sorted = serde_json::to_string(&top).map_err(|_| internal("a bad header"))?;
    if sorted.len() != json.len() {
        return Err(internal("a header of another length"));
    }
    bytes[8..8 + sorted.len()].copy_from_slice(sorted.as_bytes());
    Ok(bytes)
}

/// Safetensors metadata key holding the step count.
const STEP_KEY: &str = "step";
/// Safetensors metadata key naming the format.
const SCHEMA_KEY: &str = "schema";
/// The format written by [`AdamWState::to_bytes`].
pub const ADAMW_SCHEMA: &str = "empathy-gym/adamw/v1";

impl AdamWState {
    /// Safetensors bytes: tensors `m.<name>` and `v.<name>`, the step in the metadata. The same
    /// state always gives the same bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut tensors: Vec<(String, &Tensor)> = Vec::new();
        for (k, t) in &self.m {
            tensors.push((format!("m.{k}"), t));
        }
        for (k, t) in &self.v {
            tensors.push((format!("v.{k}"), t));
        }
        let meta = [
            (SCHEMA_KEY.to_string(), ADAMW_SCHEMA.to_string()),
            (STEP_KEY.to_string(), self.step.to_string()),
        ];
        let bytes = safetensors::serialize(tensors, Some(meta.into_iter().collect()))
            .map_err(|e| Error::Other(format!("AdamW state: cannot serialize: {e}")))?;
        sorted_header(bytes)
    }

    /// Reads what [`to_bytes`](Self::to_bytes) wrote; `source` names the file in errors.
    pub fn from_bytes(bytes: &[u8], device: &Device, source: &std::path::Path) -> Result<Self> {
        let bad = |msg: String| Error::input(source, "safetensors header", msg);
        let (_, header) = safetensors::SafeTensors::read_metadata(bytes).map_err(|e| {
            bad(format!(
                "not a safetensors file ({e}); the checkpoint is damaged"
            ))
        })?;
        let meta = header.metadata().clone().unwrap_or_default();
        if meta.get(SCHEMA_KEY).map(String::as_str) != Some(ADAMW_SCHEMA) {
            return Err(bad(format!("metadata `schema` is not {ADAMW_SCHEMA}")));
        }
        let step = meta
            .get(STEP_KEY)
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(|| bad("metadata `step` is missing or not a whole number".into()))?;
        let mut state = AdamWState {
            step,
            m: BTreeMap::new(),
            v: BTreeMap::new(),
        };
        for (name, t) in candle_core::safetensors::load_buffer(bytes, device)? {
            match name.split_once('.') {
                Some(("m", k)) => state.m.insert(k.to_string(), t),
                Some(("v", k)) => state.v.insert(k.to_string(), t),
                _ => return Err(bad(format!("unexpected tensor `{name}`"))),
            };
        }
        Ok(state)
    }
}

#[cfg(test)]
#[path = "adamw_tests.rs"]
mod tests;
