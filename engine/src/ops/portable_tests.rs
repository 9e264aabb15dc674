//! The portable ops (`portable.rs`: what CUDA and half precision run) against the compositions of candle
//! ops, in value and gradient. They run on the CPU here: in f32 called directly (the public ops
//! take the CPU kernels there) and in bf16 through the public ops, which route half precision to
//! them. `tests/integration/cuda.rs` checks the same ops on a GPU against the CPU.

use candle_core::{DType, Result, Tensor, Var};

use super::tests::{agrees, assert_close, attention_composed, causal, seeded, TOL_F32};
use super::*;

#[test]
fn lean_rms_norm_agrees_with_the_composition() -> Result<()> {
    let inputs = [seeded(&[2, 3, 64], 1)?, seeded(&[64], 2)?.affine(0.5, 1.0)?];
    let reference = |x: &[Tensor]| rms_norm_composed(&x[0], &x[1], 1e-5);
    agrees(
        &inputs,
        DType::F32,
        |x| portable::rms_norm(&x[0], &x[1], 1e-5),
        reference,
    )?;
    agrees(
        &inputs,
        DType::BF16,
        |x| rms_norm_train(&x[0], &x[1], 1e-5),
        reference,
    )
}

#[test]
fn lean_rope_agrees_with_the_composition_in_both_layouts() -> Result<()> {
    // x arrives as the block makes it: [b, t, h, d] transposed to [b, h, t, d] (not contiguous).
    let inputs = [seeded(&[2, 5, 3, 8], 3)?];
    let angles = seeded(&[5, 4], 4)?.affine(3.0, 0.0)?;
    let (cos, sin) = (angles.cos()?, angles.sin()?);
    for interleaved in [true, false] {
        let heads = |x: &Tensor| x.transpose(1, 2);
        let reference = |x: &[Tensor]| rope_composed(&heads(&x[0])?, &cos, &sin, interleaved);
        let lean_f32 = |x: &[Tensor]| portable::rope(&heads(&x[0])?, &cos, &sin, interleaved, 1.0);
        let public = |x: &[Tensor]| rope_train(&heads(&x[0])?, &cos, &sin, interleaved, 1.0);
        agrees(&inputs, DType::F32, lean_f32, reference)?;
        agrees(&inputs, DType::BF16, public, reference)?;
    }
    Ok(())
}

#[test]
fn lean_softmax_agrees_with_the_composition() -> Result<()> {
    let inputs = [seeded(&[3, 4, 11], 5)?.affine(5.0, 0.0)?];
    let reference = |x: &[Tensor]| softmax_composed(&x[0]);
    agrees(&inputs, DType::F32, |x| portable::softmax(&x[0]), reference)?;
    agrees(&inputs, DType::BF16, |x| softmax_train(&x[0]), reference)
}

/// Grouped-query heads stacked as the block stacks them (3 query heads per KV head, t = 5) under
/// the causal mask: the values and the gradients of q, k and v, the probabilities recomputed in
/// the backward.
#[test]
fn lean_attention_agrees_with_the_composition() -> Result<()> {
    let (b, g, rep, t, d) = (2, 2, 3, 5, 8);
    let inputs = [
        seeded(&[b, g, rep * t, d], 6)?,
        seeded(&[b, g, t, d], 7)?,
        seeded(&[b, g, t, d], 8)?,
    ];
    let mask = causal(t)?;
    let mask2 = mask.reshape((t, t))?;
    let reference = |x: &[Tensor]| attention_probs_composed(&x[0], &x[1], &mask2)?.matmul(&x[2]);
    let lean_f32 = |x: &[Tensor]| portable::attention(&x[0], &x[1], &x[2], &mask2);
    agrees(&inputs, DType::F32, lean_f32, reference)?;
    // The public op in bf16 takes it, then merges the heads.
    let public = |x: &[Tensor]| attention_train(&x[0], &x[1], &x[2], &mask);
    let reference = |x: &[Tensor]| attention_composed(&x[0], &x[1], &x[2], &mask2);
    agrees(&inputs, DType::BF16, public, reference)
}

#[test]
fn lean_swiglu_agrees_with_the_composition() -> Result<()> {
    let inputs = [
        seeded(&[3, 701], 8)?.affine(4.0, 0.0)?,
        seeded(&[3, 701], 9)?,
    ];
    let reference = |x: &[Tensor]| x[0].silu()? * &x[1];
    agrees(
        &inputs,
        DType::F32,
        |x| portable::swiglu(&x[0], &x[1]),
        reference,
    )?;
    agrees(
        &inputs,
        DType::BF16,
        |x| swiglu_train(&x[0], &x[1]),
        reference,
    )
}

/// f32 only: the public op computes log-probs in f32 whatever the logits' dtype.
#[test]
fn lean_target_logprobs_agree_with_the_composition() -> Result<()> {
    let inputs = [seeded(&[6, 300], 10)?.affine(8.0, 0.0)?];
    let t = Tensor::new(&[0u32, 299, 17, 17, 150, 3], &candle_core::Device::Cpu)?;
    let reference = |x: &[Tensor]| target_logprobs_composed(&x[0], &t);
    let portable = |x: &[Tensor]| portable::target_logprobs(&x[0], &t);
    agrees(&inputs, DType::F32, portable, reference)?;
    // By blocks of rows (4 + 2 here, 256 in use): the same bits as in one block, both ways.
    let bits = |block_rows: usize| -> Result<Vec<u32>> {
        let op = |x: &[Tensor]| portable::target_logprobs_in_blocks(&x[0], &t, block_rows);
        let (y, g) = super::tests::run(&inputs, DType::F32, &op)?;
        let mut all = y.flatten_all()?.to_vec1::<f32>()?;
        all.extend(g[0].flatten_all()?.to_vec1::<f32>()?);
        Ok(all.iter().map(|v| v.to_bits()).collect())
    };
    assert_eq!(bits(4)?, bits(6)?);
    assert_eq!(bits(1)?, bits(6)?);
    // bf16 logits kept as they are give the bits of converting them to f32 first, the log-probs
    // and the logits' gradient both (the public op takes them in bf16 on the CPU too).
    let x = Var::from_tensor(&inputs[0].to_dtype(DType::BF16)?)?;
    let r = seeded(&[6], 14)?;
    let bits = |lp: Tensor| -> Result<Vec<u32>> {
        let mut all = lp.to_vec1::<f32>()?;
        let g = (lp * &r)?.sum_all()?.backward()?;
        let g = g.get(&x).expect("a gradient for the logits");
        assert_eq!(g.dtype(), DType::BF16);
        all.extend(g.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?);
        Ok(all.iter().map(|v| v.to_bits()).collect())
    };
    let kept = bits(target_logprobs(&x, &t)?)?;
    assert_eq!(
        kept,
        bits(portable::target_logprobs(&x.to_dtype(DType::F32)?, &t)?)?
    );
    Ok(())
}

/// A frozen norm weight (not a variable) gets no gradient, and x's is unchanged by that.
#[test]
fn lean_rms_norm_with_a_frozen_weight_gives_the_input_gradient_only() -> Result<()> {
    let x = Var::from_tensor(&seeded(&[4, 64], 11)?)?;
    let w = seeded(&[64], 12)?;
    let r = seeded(&[4, 64], 13)?;
    let grads = (portable::rms_norm(&x, &w, 1e-5)? * &r)?
        .sum_all()?
        .backward()?;
    let reference = (rms_norm_composed(&x, &w, 1e-5)? * &r)?
        .sum_all()?
        .backward()?;
    assert!(grads.get(&w).is_none());
    let (a, b) = (
        grads.get(&x).expect("grad"),
        reference.get(&x).expect("grad"),
    );
    assert_close("gradient of x", a, b, TOL_F32)
}

/// A portable op's forward takes a fresh result's storage over (the same memory, no copy); a result
/// another tensor still holds is copied.
#[test]
fn a_precomputed_result_is_moved_unless_shared() -> Result<()> {
    let address = |s: &candle_core::CpuStorage| -> Result<usize> {
        Ok(s.as_slice::<f32>()?.as_ptr() as usize)
    };
    let fresh = seeded(&[4, 8], 15)?.exp()?.reshape((2, 16))?;
    let at = {
        let (s, _) = fresh.storage_and_layout();
        match &*s {
            candle_core::Storage::Cpu(s) => address(s)?,
            _ => unreachable!("a CPU tensor"),
        }
    };
    let (storage, shape) = portable::Precomputed::new(fresh.clone()).cpu()?;
    assert_ne!(address(&storage)?, at, "held by `fresh` too: a copy");
    let (storage, shape2) = portable::Precomputed::new(fresh).cpu()?;
    assert_eq!(address(&storage)?, at, "the only holder: moved");
    assert_eq!((shape.dims(), shape2.dims()), (&[2, 16][..], &[2, 16][..]));
    Ok(())
}
