//! Per-token log-probabilities of given sequences, the quantity GRPO's ratio and KL are built
//! from: log p(ids[t+1] | ids[..=t]). Differentiable with respect to the trainable tensors when
//! the pass is `Train`; right padding contributes exact zeros.

use candle_core::Tensor;

use super::llama::Llama;
use super::lora::{AdapterMode, Pass};
use super::ops;
use crate::error::{Error, Result};

/// Right-pads `batch` with id 0; returns ids [B, T] and the per-target mask [B, T-1].
fn pad_batch(model: &Llama, batch: &[Vec<u32>]) -> Result<(Tensor, Tensor, usize)> {
    let t = batch.iter().map(Vec::len).max().unwrap_or(0);
    if batch.is_empty() || t < 2 {
        return Err(Error::Other(
            "token_logprobs needs at least one sequence of two or more tokens".into(),
        ));
    }
    let vocab = model.cfg.vocab_size as u32;
    let mut ids = Vec::with_capacity(batch.len() * t);
    let mut mask = Vec::with_capacity(batch.len() * (t - 1));
    for (i, row) in batch.iter().enumerate() {
        if let Some(bad) = row.iter().find(|&&x| x >= vocab) {
            return Err(Error::Other(format!(
                "token_logprobs: row {i} has token id {bad} outside the vocabulary of {vocab}"
            )));
        }
        ids.extend(
            row.iter()
                .copied()
                .chain(std::iter::repeat_n(0, t - row.len())),
        );
        mask.extend((1..t).map(|j| if j < row.len() { 1f32 } else { 0f32 }));
    }
    let dev = model.device();
    Ok((
        Tensor::from_vec(ids, (batch.len(), t), dev)?,
        Tensor::from_vec(mask, (batch.len(), t - 1), dev)?,
        t,
    ))
}

/// log p(batch[b][t+1] | batch[b][..=t]) as [B, T-1] (f32), zero where t+1 is padding, under
/// softmax(logits / `temperature`): 1 is the model itself; a trainer that samples at another
/// temperature scores its tokens under the distribution it sampled from (as verl and TRL do;
/// top-p truncation is not modelled, as there). `mode = Off` gives the reference policy (base
/// weights only).
pub fn token_logprobs(
    model: &Llama,
    batch: &[Vec<u32>],
    mode: AdapterMode,
    pass: Pass,
    temperature: f64,
) -> Result<Tensor> {
    let (ids, mask, t) = pad_batch(model, batch)?;
    let mut hidden = model.forward(&ids, None, mode, pass)?.narrow(1, 0, t - 1)?;
    if temperature != 1.0 {
        // logits / T = head(hidden / T): scaling the hidden state (576 wide for SmolLM2) instead
        // of the logits (49152 wide) costs 85x less, forward and backward.
        hidden = (hidden / temperature)?;
    }
    let logits = model.logits(&hidden, pass)?;
    let (b, rows, vocab) = logits.dims3()?;
    let targets = ids.narrow(1, 1, t - 1)?.contiguous()?.flatten_all()?;
    let picked =
        ops::target_logprobs(&logits.reshape((b * rows, vocab))?, &targets)?.reshape((b, rows))?;
    let out = (picked * mask)?;
    Ok(match pass {
        Pass::Infer => out.detach(),
        Pass::Train => out,
    })
}
