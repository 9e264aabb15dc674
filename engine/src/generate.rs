//! Batched sampling with a KV cache over all live sequences. Identical prompts are prefilled
//! once and their cache rows copied; every sequence draws from its own ChaCha8 stream (seeded by
//! the caller), so a sample does not depend on what else is in the batch; finished sequences
//! leave the batch and the cache shrinks with them.
//!
//! A multi-turn dialogue can be continued instead of prefilled again: `generate_continuing` hands
//! back, per sequence, a [`Continuation`] (the cache of its prompt and reply), and a later prompt
//! that extends those tokens prefills only the new part (the user's next message). The keys of
//! the earlier reply are then the ones computed while sampling it, equal to a fresh prefill's up
//! to rounding (`model::tests` pins both paths' logits to each other).

use std::collections::HashMap;

use candle_core::{Tensor, D};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::kv_cache::KvCache;
use super::llama::Llama;
use super::lora::{AdapterMode, Pass};
use super::sampler::{sample_rows, SamplingParams};
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
    prefill_from(model, model.new_cache(1, prompt.len())?, prompt, mode)
}

/// Runs `rest` through the model after the tokens cached in `cache` (one row); returns the
/// extended cache and the last position's logits.
pub fn prefill_from(
    model: &Llama,
    mut cache: KvCache,
    rest: &[u32],
    mode: AdapterMode,
) -> Result<(KvCache, Vec<f32>)> {
    if rest.is_empty() {
        return Err(Error::Other("prefill_from: nothing to add".into()));
    }
    let ids = Tensor::new(rest, model.device())?.unsqueeze(0)?;
    let hidden = model.forward(&ids, Some(&mut cache), mode, Pass::Infer)?;
    let last = hidden.narrow(1, rest.len() - 1, 1)?;
    let logits = model
        .logits(&last, Pass::Infer)?
        .flatten_all()?
        .to_dtype(candle_core::DType::F32)?
        .to_vec1()?;
    Ok((cache, logits))
}

/// What a finished sequence leaves for its next turn: the tokens whose keys and values are
/// cached (the prompt and every sampled token but the last, which was never fed back) and that
/// single-row cache.
#[derive(Debug)]
pub struct Continuation {
    tokens: Vec<u32>,
    cache: KvCache,
}

impl Continuation {
    /// The cached tokens.
    pub fn tokens(&self) -> &[u32] {
        &self.tokens
    }
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
    generate(model, prompts, seeds, params, stop, mode, None)
}

/// As [`generate_tokens`], continuing from `conts`: a prompt that shares a prefix with
/// `conts[i]`'s tokens prefills only what follows it (a prompt sharing nothing is prefilled
/// whole). On return `conts[i]` holds sequence i's continuation for its next turn. The cached
/// keys are only valid for the weights that computed them: continue within one set of weights.
pub fn generate_continuing(
    model: &Llama,
    prompts: &[Vec<u32>],
    seeds: &[u64],
    params: &SamplingParams,
    stop: &[u32],
    mode: AdapterMode,
    conts: &mut [Option<Continuation>],
) -> Result<Vec<RawGeneration>> {
    if conts.len() != prompts.len() {
        return Err(Error::Other(format!(
            "generate: {} prompts but {} continuations",
            prompts.len(),
            conts.len()
        )));
    }
    generate(model, prompts, seeds, params, stop, mode, Some(conts))
}

/// A prefill to run: a whole prompt (shared by identical prompts) or the rest of one prompt after
/// the part of its sequence's continuation it shares.
enum Prefill<'p> {
    Whole(&'p [u32]),
    Rest(KvCache, &'p [u32]),
}

fn generate(
    model: &Llama,
    prompts: &[Vec<u32>],
    seeds: &[u64],
    params: &SamplingParams,
    stop: &[u32],
    mode: AdapterMode,
    mut conts: Option<&mut [Option<Continuation>]>,
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
    // Hundreds of small parallel ops follow; the pool's other workers poll between them.
    let _awake = super::threads::KeepAwake::for_device(model.device());
    let _merged = match mode {
        AdapterMode::On if model.decodes_merged() => Some(model.merge_adapters()?),
        _ => None,
    };
    // A prompt sharing a prefix with its continuation prefills only the rest (at least its last
    // token, whose logits are needed); identical other prompts share one prefill.
    let mut unique: HashMap<&[u32], usize> = HashMap::new();
    let mut order: Vec<Prefill> = Vec::new();
    let mut src = Vec::with_capacity(prompts.len());
    for (i, p) in prompts.iter().enumerate() {
        let cont = conts.as_deref_mut().and_then(|c| c[i].take());
        let shared = cont.as_ref().map_or(0, |c| {
            let common = p.iter().zip(&c.tokens).take_while(|(a, b)| a == b).count();
            common.min(p.len() - 1)
        });
        let u = match cont {
            Some(c) if shared > 0 => {
                let cache = if shared == c.tokens.len() {
                    c.cache
                } else {
                    c.cache.row_prefix(0, shared)?
                };
                order.push(Prefill::Rest(cache, &p[shared..]));
                order.len() - 1
            }
            _ => *unique.entry(p.as_slice()).or_insert_with(|| {
                order.push(Prefill::Whole(p.as_slice()));
                order.len() - 1
            }),
        };
        src.push(u);
    }
    let mut prefixes = Vec::with_capacity(order.len());
    let mut first_logits = Vec::with_capacity(order.len());
    for job in order {
        let (c, l) = match job {
            Prefill::Whole(p) => prefill(model, p, mode)?,
            Prefill::Rest(cache, rest) => prefill_from(model, cache, rest, mode)?,
        };
        prefixes.push(c);
        first_logits.push(l);
    }
    // One generator per sequence, kept in the order of `live` as sequences leave.
    let mut rngs: Vec<ChaCha8Rng> = seeds
        .iter()
        .map(|&s| ChaCha8Rng::seed_from_u64(s))
        .collect();
    let firsts: Vec<&[f32]> = src.iter().map(|&u| first_logits[u].as_slice()).collect();
    let toks = sample_rows(&firsts, params, &mut rngs);
    let mut live = Vec::new();
    for (i, tok) in toks.into_iter().enumerate() {
        if !push_token(&mut out[i], tok, stop, params.max_new_tokens) {
            live.push(i);
        } else {
            leave(
                conts.as_deref_mut(),
                i,
                &prompts[i],
                &out[i].tokens,
                &prefixes[src[i]],
                0,
            )?;
        }
    }
    if live.is_empty() {
        return Ok(out);
    }
    let mut rngs: Vec<ChaCha8Rng> = live.iter().map(|&i| rngs[i].clone()).collect();
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
        let toks = sample_rows(&logits, params, &mut rngs);
        let mut keep = Vec::with_capacity(live.len());
        for ((row, &i), tok) in live.iter().enumerate().zip(toks) {
            if !push_token(&mut out[i], tok, stop, params.max_new_tokens) {
                keep.push(row);
            } else {
                leave(
                    conts.as_deref_mut(),
                    i,
                    &prompts[i],
                    &out[i].tokens,
                    &cache,
                    row,
                )?;
            }
        }
        if keep.is_empty() {
            break;
        }
        if keep.len() < live.len() {
            cache.retain_rows(&keep)?;
            live = keep.iter().map(|&r| live[r]).collect();
            rngs = keep.iter().map(|&r| rngs[r].clone()).collect();
        }
    }
    Ok(out)
}

/// Stores finished sequence i's continuation (its prompt, its sampled tokens but the last, and
/// `row` of `cache`, which holds exactly those) when continuations are kept.
fn leave(
    conts: Option<&mut [Option<Continuation>]>,
    i: usize,
    prompt: &[u32],
    sampled: &[u32],
    cache: &KvCache,
    row: usize,
) -> Result<()> {
    if let Some(c) = conts {
        let mut tokens = prompt.to_vec();
        tokens.extend_from_slice(&sampled[..sampled.len() - 1]);
        let cache = cache.row(row)?;
        debug_assert_eq!(cache.len(), tokens.len());
        c[i] = Some(Continuation { tokens, cache });
    }
    Ok(())
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
