//! The Llama-family decoder (SmolLM2, Llama 2/3, Qwen2/2.5, Qwen3, Mistral, Gemma 3): embedding,
//! blocks, final norm and output projection, with one `forward` serving both cached inference and
//! differentiable training (see `block` for the per-pass numerics).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use candle_core::{DType, Device, Tensor, Var};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::block::{causal_mask, windowed_causal_mask, Block, BlockDims, RopeSlice, Step};
use super::kv_cache::KvCache;
use super::lora::{AdapterMode, LoraConfig, LoraLinear, LoraTarget, Pass};
use super::model_config::ModelConfig;
use super::ops::{self, Bf16Weight};
use super::rope::RopeTables;
use super::weights::{Proj, Weights};
use crate::error::{Error, Result};

/// A decoder with frozen base weights and optional LoRA adapters.
pub struct Llama {
    /// Runtime configuration.
    pub cfg: ModelConfig,
    embed: Tensor,
    blocks: Vec<Block>,
    norm: Tensor,
    lm_head: Option<Tensor>,
    rope: RopeTables,
    /// Gemma 3's tables for its sliding-window layers.
    local_rope: Option<RopeTables>,
    /// The head's weight packed for bf16 products (`use_bf16_products`).
    head_bf16: Option<Arc<Bf16Weight>>,
    /// Whether a `merge_adapters` guard holds merged copies now.
    merged: AtomicBool,
}

/// The adapters merged into copies of the weights for inference (`Llama::merge_adapters`). Only
/// the outermost of nested guards made the copies, and only it drops them.
pub struct MergedAdapters<'a> {
    model: &'a Llama,
    outermost: bool,
}

impl Drop for MergedAdapters<'_> {
    fn drop(&mut self) {
        if !self.outermost {
            return;
        }
        self.model.merged.store(false, Ordering::SeqCst);
        for b in &self.model.blocks {
            for (_, p) in b.projections() {
                // Dropping a copy only fails on a poisoned lock, which a panic already reported.
                let _ = p.set_merged(false);
            }
        }
    }
}

/// The rotary angles and attention masks of one forward's new tokens, which every block shares.
pub(crate) struct Angles {
    rope: RopeSlice,
    local_rope: Option<RopeSlice>,
    mask: Tensor,
    window_mask: Option<Tensor>,
}

impl Angles {
    /// The blocks' settings for a forward with `mode` and `pass`.
    pub(crate) fn step(&self, mode: AdapterMode, pass: Pass) -> Step<'_> {
        Step {
            rope: &self.rope,
            local_rope: self.local_rope.as_ref(),
            mask: &self.mask,
            window_mask: self.window_mask.as_ref(),
            mode,
            pass,
        }
    }
}

fn linear(p: Proj) -> Result<LoraLinear> {
    Ok(LoraLinear::new(p.weight, p.bias)?)
}

impl Llama {
    /// Builds the network from checked weights (see `Weights::check`).
    pub fn new(cfg: ModelConfig, w: Weights, device: &Device) -> Result<Self> {
        // Angles are computed in f32 and then stored in the weights' dtype (as HF does for bf16).
        let in_dtype = |mut r: RopeTables| -> Result<RopeTables> {
            r.cos = r.cos.to_dtype(w.embed.dtype())?;
            r.sin = r.sin.to_dtype(w.embed.dtype())?;
            Ok(r)
        };
        let rope = in_dtype(RopeTables::new(&cfg, device)?)?;
        let local_rope = RopeTables::local(&cfg, device)?.map(in_dtype).transpose()?;
        let blocks = w
            .layers
            .into_iter()
            .map(|l| {
                Ok(Block {
                    attn_norm: l.attn_norm,
                    q: linear(l.q)?,
                    k: linear(l.k)?,
                    v: linear(l.v)?,
                    o: linear(l.o)?,
                    mlp_norm: l.mlp_norm,
                    gate: linear(l.gate)?,
                    up: linear(l.up)?,
                    down: linear(l.down)?,
                    q_norm: l.q_norm,
                    k_norm: l.k_norm,
                    post_attn_norm: l.post_attn_norm,
                    post_mlp_norm: l.post_mlp_norm,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Llama {
            cfg,
            embed: w.embed,
            blocks,
            norm: w.norm,
            lm_head: w.lm_head,
            rope,
            local_rope,
            head_bf16: None,
            merged: AtomicBool::new(false),
        })
    }

    /// Attaches LoRA adapters to the configured projections; A is drawn from a ChaCha8 stream
    /// seeded with `seed`, B starts at zero so the model starts equal to the base.
    pub fn attach_lora(&mut self, lora: &LoraConfig, seed: u64) -> Result<()> {
        self.attach_each(lora, seed, LoraLinear::attach_adapter)
    }

    /// Attaches the critic's own LoRA adapters (PPO) to the configured projections, beside the
    /// policy's: both share the frozen base weights. A is drawn from a stream seeded with `seed`.
    pub fn attach_critic_lora(&mut self, lora: &LoraConfig, seed: u64) -> Result<()> {
        self.attach_each(lora, seed, LoraLinear::attach_critic_adapter)
    }

    /// Calls `attach` on every targeted projection, block by block in a fixed order, drawing from
    /// one ChaCha8 stream seeded with `seed`.
    fn attach_each(
        &mut self,
        lora: &LoraConfig,
        seed: u64,
        attach: fn(&mut LoraLinear, &LoraConfig, &mut ChaCha8Rng) -> candle_core::Result<()>,
    ) -> Result<()> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        for b in self.blocks.iter_mut() {
            let targets = [
                (LoraTarget::Q, &mut b.q),
                (LoraTarget::K, &mut b.k),
                (LoraTarget::V, &mut b.v),
                (LoraTarget::O, &mut b.o),
                (LoraTarget::Gate, &mut b.gate),
                (LoraTarget::Up, &mut b.up),
                (LoraTarget::Down, &mut b.down),
            ];
            for (t, p) in targets {
                if lora.targets.contains(&t) {
                    attach(p, lora, &mut rng)?;
                }
            }
        }
        Ok(())
    }

    /// The critic adapters with full names, e.g. "critic.layers.3.attn.q_proj.lora_a".
    pub fn critic_trainable(&self) -> Vec<(String, Var)> {
        let mut out = Vec::new();
        for (i, b) in self.blocks.iter().enumerate() {
            for (name, p) in b.projections() {
                for (leaf, var) in p.critic_trainable() {
                    out.push((format!("critic.layers.{i}.{name}.{leaf}"), var));
                }
            }
        }
        out
    }

    /// Full fine-tuning: every projection's base weight becomes trainable (embeddings and norms
    /// stay frozen).
    pub fn make_projections_trainable(&mut self) -> Result<()> {
        for b in self.blocks.iter_mut() {
            for p in b.projections_mut() {
                p.make_base_trainable()?;
            }
        }
        Ok(())
    }

    /// Packs every frozen projection and the vocabulary head for bf16 products
    /// (`model.cpu_matmul: bf16`, `ops::Bf16Weight`): their products then run in bf16 with f32
    /// sums, on AMX where the CPU has it and otherwise by AVX-512 or AVX2 (`kernels/bf16_dot/`).
    /// Needs AVX2 and FMA, and frozen weights.
    pub fn use_bf16_products(&mut self) -> Result<()> {
        for b in self.blocks.iter_mut() {
            for p in b.projections_mut() {
                p.pack_bf16()?;
            }
        }
        let head = self.lm_head.as_ref().unwrap_or(&self.embed);
        self.head_bf16 = Some(Arc::new(Bf16Weight::pack(head)?));
        Ok(())
    }

    /// Whether generation decodes with the adapters merged into the weights (`merge_adapters`):
    /// where their own products cost most. On a GPU they are ~1260 more kernel launches per
    /// decoding step of SmolLM2-135M, which made a step several times the plain model's
    /// (results/perf/gpu.md, "The quickstart on the GPU in bf16"). With bf16 products on the CPU
    /// they run in f32 beside the packed base's bf16 and cost a large share of decoding's speed
    /// (results/perf/step.md, "Decoding through the adapters"). In f32 on the CPU they cost
    /// less, about what a merge costs over a few tens of decoding steps (step.md, "f32 rollouts
    /// decode with the adapters merged"), so a call alone does not merge there; the trainer merges
    /// over each rollout on every device (`Trainer::play`), eval over each model's run, and
    /// `serve-model` for the server's life (`keep_adapters_merged`).
    pub fn decodes_merged(&self) -> bool {
        !self.device().is_cpu() || self.head_bf16.is_some()
    }

    /// While the guard lives, `Pass::Infer` forwards with `AdapterMode::On` multiply by
    /// W + scale B A, one product per projection, instead of the base and the adapter (two more
    /// products, a scale, two casts and an add: each a kernel launch on a GPU, and f32 products
    /// beside bf16 ones on the CPU). A and B must not change meanwhile; the guard drops the
    /// merged copies. Under a guard that lives, a new one reuses its copies (the trainer holds one
    /// over a step's rollouts, whose turns each call `generate`).
    pub fn merge_adapters(&self) -> Result<MergedAdapters<'_>> {
        let outermost = !self.merged.swap(true, Ordering::SeqCst);
        let guard = MergedAdapters {
            model: self,
            outermost,
        };
        if !outermost {
            return Ok(guard);
        }
        for b in &self.blocks {
            for (_, p) in b.projections() {
                p.set_merged(true)?;
            }
        }
        Ok(guard)
    }

    /// Merges the adapters for the rest of the model's life, for a model whose adapters will not
    /// change (a server's): every later inference forward multiplies by the merged copies, and
    /// guards made afterwards reuse them and leave them when they drop.
    pub fn keep_adapters_merged(&self) -> Result<()> {
        std::mem::forget(self.merge_adapters()?);
        Ok(())
    }

    /// Trainable tensors with full names, e.g. "layers.3.attn.q_proj.lora_a".
    pub fn trainable(&self) -> Vec<(String, Var)> {
        let mut out = Vec::new();
        for (i, b) in self.blocks.iter().enumerate() {
            for (name, p) in b.projections() {
                for (leaf, var) in p.trainable() {
                    out.push((format!("layers.{i}.{name}.{leaf}"), var));
                }
            }
        }
        out
    }

    /// Blocks, for export and tests.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// Embedding table [vocab, hidden].
    pub fn embedding(&self) -> &Tensor {
        &self.embed
    }

    /// Final norm weight.
    pub fn final_norm(&self) -> &Tensor {
        &self.norm
    }

    /// Untied output projection, if any.
    pub fn lm_head(&self) -> Option<&Tensor> {
        self.lm_head.as_ref()
    }

    /// Device of the weights.
    pub fn device(&self) -> &Device {
        self.embed.device()
    }

    /// Dtype of the weights.
    pub fn dtype(&self) -> DType {
        self.embed.dtype()
    }

    /// A fresh cache for `batch` rows and `cap` columns.
    pub fn new_cache(&self, batch: usize, cap: usize) -> Result<KvCache> {
        KvCache::new(
            self.cfg.num_layers,
            batch,
            self.cfg.num_kv_heads,
            self.cfg.head_dim,
            cap,
            self.dtype(),
            self.device(),
        )
    }

    pub(crate) fn dims(&self) -> BlockDims<'_> {
        BlockDims {
            heads: self.cfg.num_heads,
            kv_heads: self.cfg.num_kv_heads,
            head_dim: self.cfg.head_dim,
            eps: self.cfg.rms_norm_eps,
            rope: self.cfg.rope_layout,
            windows: &self.cfg.sliding_layers,
            act: self.cfg.mlp_act,
            attn_scale: 1.0
                / self
                    .cfg
                    .gemma
                    .as_ref()
                    .map_or(self.cfg.head_dim as f64, |g| g.query_pre_attn_scalar)
                    .sqrt(),
        }
    }

    /// Hidden states after the final norm, [batch, t, hidden], for token ids [batch, t] (u32).
    /// With a cache (inference only) the tokens continue the cached rows and are appended to it;
    /// without one they start at position 0 with a causal mask (right padding is harmless: no
    /// real token attends to a later pad).
    pub fn forward(
        &self,
        ids: &Tensor,
        mut cache: Option<&mut KvCache>,
        mode: AdapterMode,
        pass: Pass,
    ) -> Result<Tensor> {
        let t = ids.dims2()?.1;
        if pass == Pass::Train && cache.is_some() {
            return Err(Error::Other(
                "the training forward does not use a KV cache".into(),
            ));
        }
        let angles = self.angles(cache.as_deref(), t)?;
        let x = self.embed_tokens(ids, pass)?;
        let step = angles.step(mode, pass);
        let dims = self.dims();
        let mut x = x;
        for (i, block) in self.blocks.iter().enumerate() {
            x = block.forward(&x, &dims, i, cache.as_deref_mut(), &step)?;
        }
        if let Some(c) = cache {
            c.advance(t);
        }
        self.final_norm_of(&x, pass)
    }

    /// The rotary angles and masks of `t` new tokens: continuing `cache`, or from position 0
    /// with a causal mask.
    pub(crate) fn angles(&self, cache: Option<&KvCache>, t: usize) -> Result<Angles> {
        let window = self.cfg.sliding_window;
        let local = self.local_rope.as_ref();
        Ok(match cache {
            Some(c) => Angles {
                rope: self.rope_for_cache(&self.rope, c, t)?,
                local_rope: local.map(|r| self.rope_for_cache(r, c, t)).transpose()?,
                mask: c.mask(t, None, self.device())?,
                window_mask: window
                    .map(|w| c.mask(t, Some(w), self.device()))
                    .transpose()?,
            },
            None => Angles {
                rope: self.rope_range(&self.rope, 0, t)?,
                local_rope: local.map(|r| self.rope_range(r, 0, t)).transpose()?,
                mask: causal_mask(t, self.device())?,
                window_mask: window
                    .map(|w| windowed_causal_mask(t, Some(w), self.device()))
                    .transpose()?,
            },
        })
    }

    /// The embeddings [batch, t, hidden] of token ids [batch, t] (scaled for Gemma).
    pub(crate) fn embed_tokens(&self, ids: &Tensor, pass: Pass) -> Result<Tensor> {
        let (b, t) = ids.dims2()?;
        let x = match pass {
            Pass::Infer => self.embed.index_select(&ids.flatten_all()?, 0)?.reshape((
                b,
                t,
                self.cfg.hidden_size,
            ))?,
            Pass::Train => ops::frozen_embedding(ids, &self.embed)?,
        };
        if !self.cfg.gemma.as_ref().is_some_and(|g| g.embed_scale) {
            return Ok(x);
        }
        // Gemma's normalizer sqrt(hidden), rounded to the weights' dtype as transformers'
        // Gemma3TextScaledWordEmbedding does.
        let scale = Tensor::new((self.cfg.hidden_size as f32).sqrt(), self.device())?
            .to_dtype(self.dtype())?;
        Ok(x.broadcast_mul(&scale)?)
    }

    /// The final norm of the last block's output.
    pub(crate) fn final_norm_of(&self, x: &Tensor, pass: Pass) -> Result<Tensor> {
        super::block::rms_norm(x, &self.norm, self.cfg.rms_norm_eps, pass)
    }

    /// Logits [.., vocab] from hidden states [.., hidden].
    pub fn logits(&self, hidden: &Tensor, pass: Pass) -> Result<Tensor> {
        let w = self.lm_head.as_ref().unwrap_or(&self.embed);
        let dims = hidden.dims().to_vec();
        let h = *dims.last().unwrap_or(&0);
        let x = hidden.reshape(((), h))?;
        let y = match pass {
            Pass::Infer => ops::head_matmul(&x, w, self.head_bf16.as_ref())?,
            Pass::Train => ops::frozen_matmul(&x, w, self.head_bf16.as_ref())?,
        };
        let mut out = dims;
        if let Some(last) = out.last_mut() {
            *last = self.cfg.vocab_size;
        }
        Ok(y.reshape(out)?)
    }

    fn rope_range(&self, tables: &RopeTables, start: usize, t: usize) -> Result<RopeSlice> {
        self.check_positions(start + t)?;
        Ok(RopeSlice {
            cos: tables.cos.narrow(0, start, t)?,
            sin: tables.sin.narrow(0, start, t)?,
        })
    }

    fn rope_for_cache(&self, tables: &RopeTables, c: &KvCache, t: usize) -> Result<RopeSlice> {
        let starts = c.starts();
        if let Some(&s0) = starts.first() {
            if starts.iter().all(|&s| s == s0) {
                return self.rope_range(tables, c.len() - s0, t);
            }
        }
        let pos = c.positions(t);
        self.check_positions(pos.iter().copied().max().map_or(0, |p| p as usize + 1))?;
        let idx = Tensor::new(pos, self.device())?;
        let half = self.cfg.head_dim / 2;
        let cos = tables
            .cos
            .index_select(&idx, 0)?
            .reshape((c.batch(), t, half))?;
        let sin = tables
            .sin
            .index_select(&idx, 0)?
            .reshape((c.batch(), t, half))?;
        Ok(RopeSlice { cos, sin })
    }

    fn check_positions(&self, n: usize) -> Result<()> {
        if n > self.rope.len() {
            return Err(Error::Other(format!(
                "sequence of {n} tokens is longer than the model's {} positions",
                self.rope.len()
            )));
        }
        Ok(())
    }
}
