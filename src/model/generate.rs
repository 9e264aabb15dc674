//! Batched sampling with a KV cache over all live sequences. Identical prompts are prefilled
//! once and their cache rows copied; every sequence draws from its own ChaCha8 stream (seeded by
//! the caller), so a sample does not depend on what else is in the batch; finished sequences
//! leave the batch and the cache shrinks with them.

use std::collections::HashMap;

use candle_core::{Tensor, D};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::kv_cache::KvCache;
use super::llama::Llama;
use super::lora::{AdapterMode, Pass};
use super::sampler::{sample_token, SamplingParams};
use crate::error::{Error, Result};

/// Tokens generated for one prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawGeneration {
    /// New tokens, ending with the stop token when `stopped`.
    pub tokens: Vec<u32>,
    /// True when a stop token ended the sequence, false when `max_new_tokens` did.
    pub stopped: bool,
}

/// Checks prompts against the vocabulary and the seeds against the prompts.
fn check_inputs(model: &Llama, prompts: &[Vec<u32>], seeds: &[u64]) -> Result<()> {
    if prompts.len() != seeds.len() {
        return Err(Error::Other(format!(
            "generate: {} prompts but {} seeds",
            prompts.len(),
            seeds.len()
        )));
    }
    let vocab = model.cfg.vocab_size as u32;
    for (i, p) in prompts.iter().enumerate() {
        if p.is_empty() {
            return Err(Error::Other(format!("generate: prompt {i} is empty")));
        }
        if let Some(bad) = p.iter().find(|&&t| t >= vocab) {
            return Err(Error::Other(format!(
                "generate: prompt {i} has token id {bad} outside the vocabulary of {vocab}"
            )));
        }
    }
    Ok(())
}

/// Runs one prompt through the model; returns its cache and last-position logits.
fn prefill(model: &Llama, prompt: &[u32], mode: AdapterMode) -> Result<(KvCache, Vec<f32>)> {
    let mut cache = model.new_cache(1, prompt.len())?;
    let ids = Tensor::new(prompt, model.device())?.unsqueeze(0)?;
    let hidden = model.forward(&ids, Some(&mut cache), mode, Pass::Infer)?;
    let last = hidden.narrow(1, prompt.len() - 1, 1)?;
    let logits = model
        .logits(&last, Pass::Infer)?
        .flatten_all()?
        .to_dtype(candle_core::DType::F32)?
        .to_vec1()?;
    Ok((cache, logits))
}

/// Generates continuations of `prompts`; sequence i samples with `ChaCha8Rng::seed_from_u64(seeds[i])`.
pub fn generate_tokens(
    model: &Llama,
    prompts: &[Vec<u32>],
    seeds: &[u64],
    params: &SamplingParams,
    stop: &[u32],
    mode: AdapterMode,
) -> Result<Vec<RawGeneration>> {
    check_inputs(model, prompts, seeds)?;
    let mut out: Vec<RawGeneration> = prompts
        .iter()
        .map(|_| RawGeneration {
            tokens: Vec::new(),
            stopped: false,
        })
        .collect();
    if params.max_new_tokens == 0 || prompts.is_empty() {
        return Ok(out);
    }
    // Identical prompts share one prefill.
    let mut unique: HashMap<&[u32], usize> = HashMap::new();
    let mut order: Vec<&[u32]> = Vec::new();
    let src: Vec<usize> = prompts
        .iter()
        .map(|p| {
            *unique.entry(p.as_slice()).or_insert_with(|| {
                order.push(p.as_slice());
                order.len() - 1
            })
        })
        .collect();
    let mut prefixes = Vec::with_capacity(order.len());
    let mut first_logits = Vec::with_capacity(order.len());
    for p in &order {
        let (c, l) = prefill(model, p, mode)?;
        prefixes.push(c);
        first_logits.push(l);
    }
    let mut rngs: Vec<ChaCha8Rng> = seeds
        .iter()
        .map(|&s| ChaCha8Rng::seed_from_u64(s))
        .collect();
    let mut live = Vec::new();
    for i in 0..prompts.len() {
        let tok = sample_token(&first_logits[src[i]], params, &mut rngs[i]);
        if !push_token(&mut out[i], tok, stop, params.max_new_tokens) {
            live.push(i);
        }
    }
    if live.is_empty() {
        return Ok(out);
    }
    let rows: Vec<usize> = live.iter().map(|&i| src[i]).collect();
    let mut cache = KvCache::from_prefixes(&prefixes, &rows, params.max_new_tokens)?;
    drop(prefixes);
    while !live.is_empty() {
        let last: Vec<u32> = live
            .iter()
            .map(|&i| *out[i].tokens.last().unwrap_or(&0))
            .collect();
        let ids = Tensor::new(last, model.device())?.unsqueeze(D::Minus1)?;
        let hidden = model.forward(&ids, Some(&mut cache), mode, Pass::Infer)?;
        let logits: Vec<Vec<f32>> = model
            .logits(&hidden, Pass::Infer)?
            .squeeze(1)?
            .to_dtype(candle_core::DType::F32)?
            .to_vec2()?;
        let mut keep = Vec::with_capacity(live.len());
        for (row, &i) in live.iter().enumerate() {
            let tok = sample_token(&logits[row], params, &mut rngs[i]);
            if !push_token(&mut out[i], tok, stop, params.max_new_tokens) {
                keep.push(row);
            }
        }
        if keep.is_empty() {
            break;
        }
        if keep.len() < live.len() {
            cache.retain_rows(&keep)?;
            live = keep.iter().map(|&r| live[r]).collect();
        }
    }
    Ok(out)
}

/// Appends `tok`; returns true when the sequence is finished.
fn push_token(g: &mut RawGeneration, tok: u32, stop: &[u32], max_new: usize) -> bool {
    g.tokens.push(tok);
    if stop.contains(&tok) {
        g.stopped = true;
        return true;
    }
    g.tokens.len() >= max_new
}
