//! Per-token log-probabilities of given sequences, the quantity GRPO's ratio and KL are built
//! from: log p(ids[t+1] | ids[..=t]). Differentiable with respect to the trainable tensors when
//! the pass is `Train`; right padding contributes exact zeros.

use candle_core::{DType, Tensor};

use super::activation_checkpoint::Checkpointed;
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
///
/// `scored` ([B, T-1], non-zero where a log-prob is wanted, e.g. the policy's own tokens) limits
/// the vocabulary head and its softmax to those positions and leaves exact zeros elsewhere: the
/// head is a quarter of the model's multiply-adds per position for SmolLM2 (576 x 49152), and in
/// a dialogue most positions are the user's and the prompt's. None scores every position.
pub fn token_logprobs(
    model: &Llama,
    batch: &[Vec<u32>],
    mode: AdapterMode,
    pass: Pass,
    temperature: f64,
    scored: Option<&Tensor>,
) -> Result<Tensor> {
    let (ids, mask, _) = pad_batch(model, batch)?;
    let hidden = model.forward(&ids, None, mode, pass)?;
    head_logprobs(model, &hidden, &ids, &mask, pass, temperature, scored)
}

/// [`token_logprobs`] of the training pass with activation checkpointing
/// ([`Llama::forward_checkpointed`]): build the loss on the log-probs, then take its gradients
/// with the returned [`Checkpointed::backward`].
pub fn token_logprobs_checkpointed<'a>(
    model: &'a Llama,
    batch: &[Vec<u32>],
    mode: AdapterMode,
    temperature: f64,
    scored: Option<&Tensor>,
) -> Result<(Tensor, Checkpointed<'a>)> {
    let (ids, mask, _) = pad_batch(model, batch)?;
    let (hidden, ck) = model.forward_checkpointed(&ids, mode)?;
    let out = head_logprobs(
        model,
        &hidden,
        &ids,
        &mask,
        Pass::Train,
        temperature,
        scored,
    )?;
    Ok((out, ck))
}

/// The log-probs of the next tokens of `ids` [B, T] from the final hidden states [B, T, hidden]:
/// the vocabulary head (at the `scored` positions only, when given) and the log-softmax.
fn head_logprobs(
    model: &Llama,
    hidden: &Tensor,
    ids: &Tensor,
    mask: &Tensor,
    pass: Pass,
    temperature: f64,
    scored: Option<&Tensor>,
) -> Result<Tensor> {
    let (b, t) = ids.dims2()?;
    let hidden = hidden.narrow(1, 0, t - 1)?;
    let h = hidden.dim(2)?;
    let mut hidden = hidden.reshape((b * (t - 1), h))?;
    let mut targets = ids.narrow(1, 1, t - 1)?.contiguous()?.flatten_all()?;
    let rows = match scored {
        None => None,
        Some(s) => {
            if s.dims() != [b, t - 1] {
                return Err(Error::Other(format!(
                    "token_logprobs: the scored mask is {:?}, the batch's targets are [{b}, {}]",
                    s.dims(),
                    t - 1
                )));
            }
            let keep = positions(&(s * mask)?)?;
            if keep.is_empty() {
                return Ok(Tensor::zeros((b, t - 1), DType::F32, model.device())?);
            }
            let n = keep.len();
            Some(Tensor::from_vec(keep, n, model.device())?)
        }
    };
    if let Some(idx) = &rows {
        hidden = hidden.index_select(idx, 0)?;
        targets = targets.index_select(idx, 0)?;
    }
    if temperature != 1.0 {
        // logits / T = head(hidden / T): scaling the hidden state (576 wide for SmolLM2) instead
        // of the logits (49152 wide) costs 85x less, forward and backward.
        hidden = (hidden / temperature)?;
    }
    let logits = model.logits(&hidden, pass)?;
    let picked = ops::target_logprobs(&logits, &targets)?;
    let out = match &rows {
        // Exact zeros outside the scored positions; the gradient flows back through index_add.
        Some(idx) => Tensor::zeros(b * (t - 1), picked.dtype(), model.device())?
            .index_add(idx, &picked, 0)?
            .reshape((b, t - 1))?,
        None => (picked.reshape((b, t - 1))? * mask)?,
    };
    Ok(match pass {
        Pass::Infer => out.detach(),
        Pass::Train => out,
    })
}

/// Flat indices (row-major) of the non-zero entries of a [rows, cols] `mask`.
fn positions(mask: &Tensor) -> Result<Vec<u32>> {
    let flat = mask.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
    Ok((0..flat.len() as u32)
        .filter(|&i| flat[i as usize] != 0.0)
        .collect())
}
