//! Activation checkpointing per layer (Chen et al. 2016, "Training Deep Nets with Sublinear
//! Memory Cost"): the training forward keeps only each block's input and lets go of everything
//! inside the block; the backward runs the blocks again one at a time, last first, and
//! backpropagates through each with the gradient that arrived at its output. Peak memory then
//! holds the block inputs and one block's intermediates instead of every block's, for one more
//! forward of the blocks.
//!
//! The recomputed forward must be the first one bit for bit: the same inputs, weights, and LoRA
//! dropout masks (each block's dropout streams are saved before its first forward and put back
//! before it runs again).

use candle_core::backprop::GradStore;
use candle_core::{Tensor, Var};
use rand_chacha::ChaCha8Rng;

use super::llama::{Angles, Llama};
use super::lora::{AdapterMode, Pass};
use crate::error::{Error, Result};

/// A training forward that kept only the block boundaries ([`Llama::forward_checkpointed`]).
pub struct Checkpointed<'a> {
    model: &'a Llama,
    angles: Angles,
    mode: AdapterMode,
    /// Each block's input, detached.
    inputs: Vec<Tensor>,
    /// Each block's projections' dropout streams before its first forward.
    dropout: Vec<Vec<[Option<ChaCha8Rng>; 2]>>,
    /// The last block's output as a leaf, which the returned hidden states are built on.
    top: Var,
}

impl Llama {
    /// The training forward's hidden states after the final norm, [batch, t, hidden], like
    /// `forward(ids, None, mode, Pass::Train)`, with the blocks' intermediates dropped: build the
    /// loss on the result, then call [`Checkpointed::backward`] instead of `loss.backward()`.
    pub fn forward_checkpointed(
        &self,
        ids: &Tensor,
        mode: AdapterMode,
    ) -> Result<(Tensor, Checkpointed<'_>)> {
        let t = ids.dims2()?.1;
        let angles = self.angles(None, t)?;
        let dims = self.dims();
        let mut x = self.embed_tokens(ids, Pass::Train)?.detach();
        let mut inputs = Vec::with_capacity(self.blocks().len());
        let mut dropout = Vec::with_capacity(self.blocks().len());
        {
            let step = angles.step(mode, Pass::Train);
            for (i, block) in self.blocks().iter().enumerate() {
                dropout.push(
                    block
                        .projections()
                        .iter()
                        .map(|(_, p)| Ok(p.dropout_streams()?))
                        .collect::<Result<Vec<_>>>()?,
                );
                let y = block.forward(&x, &dims, i, None, &step)?.detach();
                inputs.push(std::mem::replace(&mut x, y));
            }
        }
        let top = Var::from_tensor(&x)?;
        let hidden = self.final_norm_of(top.as_tensor(), Pass::Train)?;
        Ok((
            hidden,
            Checkpointed {
                model: self,
                angles,
                mode,
                inputs,
                dropout,
                top,
            },
        ))
    }
}

impl Checkpointed<'_> {
    /// The gradients of `loss` (built on the hidden states `forward_checkpointed` returned)
    /// with respect to every trainable tensor of the model, the policy's and the critic's, as
    /// `loss.backward()` would give them without checkpointing.
    pub fn backward(self, loss: &Tensor) -> Result<GradStore> {
        let model = self.model;
        let vars: Vec<Var> = model
            .trainable()
            .into_iter()
            .chain(model.critic_trainable())
            .map(|(_, v)| v)
            .collect();
        let mut grads = loss.backward()?;
        let mut out = GradStore::default();
        gather(&vars, &mut grads, &mut out)?;
        let mut upstream = grads.remove(self.top.as_tensor()).ok_or_else(|| {
            Error::Other("checkpointed backward: the loss does not depend on the model".into())
        })?;
        let dims = model.dims();
        let step = self.angles.step(self.mode, Pass::Train);
        for (i, block) in model.blocks().iter().enumerate().rev() {
            for ((_, p), saved) in block.projections().iter().zip(&self.dropout[i]) {
                p.restore_dropout_streams(saved)?;
            }
            let input = Var::from_tensor(&self.inputs[i])?;
            let y = block.forward(input.as_tensor(), &dims, i, None, &step)?;
            // d(sum(y * g))/dtheta = g . dy/dtheta: the vector-Jacobian product through the block.
            let mut g = (y * &upstream)?.sum_all()?.backward()?;
            gather(&vars, &mut g, &mut out)?;
            if i > 0 {
                upstream = g.remove(input.as_tensor()).ok_or_else(|| {
                    Error::Other(format!(
                        "checkpointed backward: no gradient reached block {i}'s input"
                    ))
                })?;
            }
        }
        Ok(out)
    }
}

/// Moves the gradients of `vars` from `from` into `into`, adding to what is there.
fn gather(vars: &[Var], from: &mut GradStore, into: &mut GradStore) -> Result<()> {
    for v in vars {
        if let Some(g) = from.remove(v.as_tensor()) {
            let sum = match into.remove(v.as_tensor()) {
                Some(prev) => (prev + g)?,
                None => g,
            };
            into.insert(v.as_tensor(), sum);
        }
    }
    Ok(())
}
