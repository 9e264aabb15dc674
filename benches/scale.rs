//! How far the trainer goes past 135M parameters (results/perf/scale.md): random-weight decoders
//! at the shapes of Qwen3-0.6B, 1.7B, 4B and 8B (weights do not change speed or memory), with
//! rank-16 LoRA on every projection. Cases, each printed as one markdown row:
//! - `update:BxT`: one LoRA update (forward, backward, AdamW) over B rows of T tokens, with
//!   activation checkpointing off and on (`CHECKPOINT=off|on|both`);
//! - `decode:B`: B prompts of 256 tokens decoded greedily for 64 new tokens (batched, KV-cached).
//!
//! Each row gives the seconds of the last of `STEPS` repetitions (the first warms the caches), the
//! tokens per second (decode: new tokens), the most bytes of tensors alive at once during that
//! repetition above what was alive before it and in all (`alloc::high_water_bytes`: weights,
//! adapters and optimizer state included), and the process's peak resident memory so far.
//!
//! Run: `SHAPE=qwen3-0.6b CASES=update:1x2048,decode:8 cargo bench --bench scale`
//! (defaults: SHAPE qwen3-0.6b, CASES update:1x2048, CHECKPOINT both, STEPS 2, DTYPE f32,
//! DEVICE cpu; `DEVICE=cuda DTYPE=bf16` in a CUDA build on a GPU); scripts/scale.sh runs the table.
//! On a GPU the memory columns read the CPU allocator and say nothing: nvidia-smi's peak is the
//! one to read there.

use empathy_test_support as common;

use std::time::Instant;

use anyhow::{bail, Context};
use candle_core::{DType, Device, Tensor};
use empathy_engine::model_config::{HfConfig, ModelConfig};
use empathy_engine::weights::{LayerWeights, Proj, Weights};
use empathy_engine::{alloc, ChatModel, ChatTemplate, Llama, LoraConfig, ModelSource};
use empathy_gym::learning::optimize::adamw::{AdamW, AdamWConfig};
use empathy_gym::model::{AdapterMode, Pass, SamplingParams};

// As the binary: large blocks kept for reuse (engine/src/alloc.rs).
#[global_allocator]
static ALLOC: empathy_engine::alloc::CachingAlloc = empathy_engine::alloc::CachingAlloc;

/// (name, hidden, MLP width, layers, heads, KV heads, tied embeddings) of the published Qwen3
/// configs; all have head_dim 128 and 151,936 tokens.
const SHAPES: [(&str, usize, usize, usize, usize, usize, bool); 4] = [
    ("qwen3-0.6b", 1024, 3072, 28, 16, 8, true),
    ("qwen3-1.7b", 2048, 6144, 28, 16, 8, true),
    ("qwen3-4b", 2560, 9728, 36, 32, 8, true),
    ("qwen3-8b", 4096, 12288, 36, 32, 8, false),
];
const PROMPT: usize = 256;
const NEW_TOKENS: usize = 64;

fn env_or(key: &str, default: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| default.to_string())
}

fn config(shape: &str) -> anyhow::Result<ModelConfig> {
    let Some(&(_, h, i, l, q, kv, tied)) = SHAPES.iter().find(|s| s.0 == shape) else {
        bail!("SHAPE={shape}: expected one of qwen3-0.6b, qwen3-1.7b, qwen3-4b, qwen3-8b");
    };
    let json = serde_json::json!({
        "architectures": ["Qwen3ForCausalLM"], "hidden_size": h, "intermediate_size": i,
        "num_hidden_layers": l, "num_attention_heads": q, "num_key_value_heads": kv,
        "head_dim": 128, "vocab_size": 151936, "tie_word_embeddings": tied,
        "rope_theta": 1_000_000.0, "max_position_embeddings": 40960, "rms_norm_eps": 1e-6,
    });
    let hf: HfConfig = serde_json::from_value(json)?;
    Ok(hf.validate(std::path::Path::new(shape))?)
}

/// Random weights of `cfg` in `dtype` on `dev` (N(0, 0.02), norms 1).
fn weights(cfg: &ModelConfig, dtype: DType, dev: &Device) -> anyhow::Result<Weights> {
    let dev = dev.clone();
    let rand = |dims: &[usize]| -> anyhow::Result<Tensor> {
        Ok(Tensor::randn(0f32, 0.02, dims, &dev)?.to_dtype(dtype)?)
    };
    let ones = |n: usize| -> anyhow::Result<Tensor> { Ok(Tensor::ones(n, dtype, &dev)?) };
    let (h, i, hd) = (cfg.hidden_size, cfg.intermediate_size, cfg.head_dim);
    let (qd, kvd) = (cfg.num_heads * hd, cfg.num_kv_heads * hd);
    let proj = |o: usize, n: usize| -> anyhow::Result<Proj> { Ok(Proj::new(rand(&[o, n])?)) };
    let layers = (0..cfg.num_layers)
        .map(|_| {
            Ok(LayerWeights {
                attn_norm: ones(h)?,
                q: proj(qd, h)?,
                k: proj(kvd, h)?,
                v: proj(kvd, h)?,
                o: proj(h, qd)?,
                mlp_norm: ones(h)?,
                gate: proj(i, h)?,
                up: proj(i, h)?,
                down: proj(h, i)?,
                q_norm: Some(ones(hd)?),
                k_norm: Some(ones(hd)?),
                post_attn_norm: None,
                post_mlp_norm: None,
            })
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(Weights {
        embed: rand(&[cfg.vocab_size, h])?,
        norm: ones(h)?,
        lm_head: (!cfg.tie_word_embeddings)
            .then(|| rand(&[cfg.vocab_size, h]))
            .transpose()?,
        layers,
    })
}

/// Random token ids [rows][len] below `vocab` (fixed, so every run sees the same).
fn ids(rows: usize, len: usize, vocab: usize) -> Vec<Vec<u32>> {
    (0..rows)
        .map(|r| {
            (0..len)
                .map(|t| ((r * 7919 + t * 104_729) % vocab) as u32)
                .collect()
        })
        .collect()
}

struct Row {
    seconds: f64,
    tokens_per_s: f64,
    /// The most bytes of tensors alive at once, weights included.
    tensors_gib: f64,
    /// The same above what was alive before the repetition (the weights, adapters and optimizer
    /// state): the activations, gradients and caches of the case itself.
    above_gib: f64,
}

/// Times `f` from a fresh high-water mark.
fn measured(tokens: impl FnOnce() -> anyhow::Result<usize>) -> anyhow::Result<Row> {
    alloc::reset_high_water();
    let before = alloc::high_water_bytes();
    let t = Instant::now();
    let n = tokens()?;
    let seconds = t.elapsed().as_secs_f64();
    let peak = alloc::high_water_bytes();
    Ok(Row {
        seconds,
        tokens_per_s: n as f64 / seconds,
        tensors_gib: gib(peak),
        above_gib: gib(peak.saturating_sub(before)),
    })
}

fn gib(bytes: usize) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

/// The last of `steps` LoRA updates over `batch`.
fn update(
    m: &ChatModel,
    batch: &[Vec<u32>],
    checkpoint: bool,
    steps: usize,
) -> anyhow::Result<Row> {
    let mut opt = AdamW::new(
        m.trainable(),
        AdamWConfig {
            lr: 1e-5,
            ..AdamWConfig::default()
        },
    )?;
    let width = batch[0].len() - 1;
    let scored = Tensor::ones((batch.len(), width), DType::F32, &m.device)?;
    let mut last = None;
    for _ in 0..steps {
        last = Some(measured(|| {
            let grads = if checkpoint {
                let (lp, ck) =
                    m.scored_logprobs_checkpointed(batch, AdapterMode::On, 1.0, &scored)?;
                let loss = lp.mean_all()?.neg()?;
                ck.backward(&loss)?
            } else {
                let lp = m.scored_logprobs(batch, AdapterMode::On, Pass::Train, 1.0, &scored)?;
                lp.mean_all()?.neg()?.backward()?
            };
            opt.step(0.0, &grads)?;
            // A GPU's kernels run behind the host: the step ends when they are done.
            m.device.synchronize()?;
            Ok(batch.len() * batch[0].len())
        })?);
    }
    last.context("STEPS must be at least 1")
}

/// The last of `steps` batched greedy decodes of `rows` prompts.
fn decode(m: &ChatModel, rows: usize, steps: usize) -> anyhow::Result<Row> {
    let prompts = ids(rows, PROMPT, m.config.vocab_size);
    let params = SamplingParams {
        greedy: true,
        max_new_tokens: NEW_TOKENS,
        ..SamplingParams::default()
    };
    let seeds = vec![0; rows];
    let mut last = None;
    for _ in 0..steps {
        last = Some(measured(|| {
            let out = m.generate(&prompts, &seeds, &params)?;
            Ok(out.iter().map(|g| g.tokens.len()).sum())
        })?);
    }
    last.context("STEPS must be at least 1")
}

fn main() -> anyhow::Result<()> {
    empathy_gym::model::fix_thread_count();
    empathy_gym::model::on_compute_pool(run)
}

fn run() -> anyhow::Result<()> {
    let shape = env_or("SHAPE", "qwen3-0.6b");
    let cases = env_or("CASES", "update:1x2048");
    let steps: usize = env_or("STEPS", "2").parse().context("STEPS: a count")?;
    let dtype = common::dtype_from_env("DTYPE")?;
    let checkpoints: &[bool] = match env_or("CHECKPOINT", "both").as_str() {
        "off" => &[false],
        "on" => &[true],
        "both" => &[false, true],
        other => bail!("CHECKPOINT={other}: expected off, on or both"),
    };
    let dev = match env_or("DEVICE", "cpu").as_str() {
        "cpu" => Device::Cpu,
        "cuda" => empathy_engine::open_cuda(0)?,
        other => bail!("DEVICE={other}: expected cpu or cuda"),
    };
    let cfg = config(&shape)?;
    let t = Instant::now();
    let mut model = Llama::new(cfg.clone(), weights(&cfg, dtype, &dev)?, &dev)?;
    let lora = LoraConfig {
        rank: 16,
        ..LoraConfig::default()
    };
    model.attach_lora(&lora, 0)?;
    let m = ChatModel {
        model,
        tokenizer: common::tiny_model::tiny_tokenizer()?,
        template: ChatTemplate::Qwen3 { thinking: false },
        config: cfg.clone(),
        device: dev.clone(),
        name: shape.clone(),
        stop_tokens: Vec::new(),
        source: ModelSource::HfFolder(shape.clone().into()),
        lora: Some(lora),
    };
    eprintln!(
        "{shape}: {:.2}B parameters in {dtype:?}, built in {:.0} s",
        cfg.parameter_count() as f64 / 1e9,
        t.elapsed().as_secs_f64()
    );
    for case in cases.split(',') {
        let (kind, arg) = case
            .split_once(':')
            .context("a case is update:BxT or decode:B")?;
        let rows: Vec<(String, Row)> = match kind {
            "update" => {
                let (b, t) = arg.split_once('x').context("update:BxT")?;
                let batch = ids(b.parse()?, t.parse()?, cfg.vocab_size);
                checkpoints
                    .iter()
                    .map(|&c| {
                        let label = format!(
                            "update {arg}, checkpointing {}",
                            if c { "on" } else { "off" }
                        );
                        Ok((label, update(&m, &batch, c, steps)?))
                    })
                    .collect::<anyhow::Result<_>>()?
            }
            "decode" => vec![(
                format!("decode {arg} x ({PROMPT} + {NEW_TOKENS})"),
                decode(&m, arg.parse()?, steps)?,
            )],
            other => bail!("case kind {other}: expected update or decode"),
        };
        for (label, r) in rows {
            println!(
                "| {shape} | {dtype:?} | {label} | {:.1} | {:.1} | {:.2} | {:.2} | {:.2} |",
                r.seconds,
                r.tokens_per_s,
                r.above_gib,
                r.tensors_gib,
                common::peak_rss_mib() / 1024.0
            );
        }
    }
    Ok(())
}
