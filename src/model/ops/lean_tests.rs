//! The lean ops (`lean.rs`: what CUDA and half precision run) against the compositions of candle
//! ops, in value and gradient. They run on the CPU here: in f32 called directly (the public ops
//! take the CPU kernels there) and in bf16 through the public ops, which route half precision to
//! them. `tests/integration/cuda.rs` checks the same ops on a GPU against the CPU.

use candle_core::{DType, Result, Tensor, Var};

use super::tests::{causal, max_abs_diff, seeded};
use super::*;

/// Tolerances relative to the reference's largest value: f32 (summation order only) and bf16 (8
/// significant bits), those of the CUDA tests.
const TOL_F32: f32 = 1e-5;
const TOL_BF16: f32 = 3e-2;

/// Runs `f` on `inputs` cast to `dtype` and made variables; returns its output and the gradients
/// of every input of sum(y * r) for a fixed r, all in f32. The output must keep `dtype`.
fn run(
    inputs: &[Tensor],
    dtype: DType,
    f: &dyn Fn(&[Tensor]) -> Result<Tensor>,
) -> Result<(Tensor, Vec<Tensor>)> {
    let vars = inputs
        .iter()
        .map(|x| Var::from_tensor(&x.to_dtype(dtype)?))
        .collect::<Result<Vec<_>>>()?;
    let xs: Vec<Tensor> = vars.iter().map(|v| v.as_tensor().clone()).collect();
    let y = f(&xs)?;
    assert_eq!(y.dtype(), dtype, "the op keeps its input's dtype");
    let y = y.to_dtype(DType::F32)?;
    let r = seeded(y.dims(), 99)?;
    let grads = (&y * r)?.sum_all()?.backward()?;
    let g = vars
        .iter()
        .map(|v| {
            grads
                .get(v)
                .expect("a gradient for every input")
                .to_dtype(DType::F32)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((y, g))
}

/// `a` within `tol` of the reference `b`, relative to b's largest magnitude.
fn assert_close(what: &str, a: &Tensor, b: &Tensor, tol: f32) -> Result<()> {
    let scale = b
        .abs()?
        .flatten_all()?
        .max(0)?
        .to_scalar::<f32>()?
        .max(1e-6);
    let err = max_abs_diff(a, b)? / scale;
    assert!(err <= tol, "{what}: relative error {err} > {tol}");
    Ok(())
}

/// `op` at `dtype` agrees with `reference` in f32: outputs and the gradient of every input, and
/// the gradients are not zero.
fn agrees(
    inputs: &[Tensor],
    dtype: DType,
    op: impl Fn(&[Tensor]) -> Result<Tensor>,
    reference: impl Fn(&[Tensor]) -> Result<Tensor>,
) -> Result<()> {
    let tol = if dtype == DType::F32 {
        TOL_F32
    } else {
        TOL_BF16
    };
    let (y, g) = run(inputs, dtype, &op)?;
    let (y_ref, g_ref) = run(inputs, DType::F32, &reference)?;
    assert_close("output", &y, &y_ref, tol)?;
    for (i, (a, b)) in g.iter().zip(&g_ref).enumerate() {
        assert_close(&format!("gradient of input {i}"), a, b, tol)?;
        assert!(a.abs()?.sum_all()?.to_scalar::<f32>()? > 1e-3);
    }
    Ok(())
}

#[test]
fn lean_rms_norm_agrees_with_the_composition() -> Result<()> {
    let inputs = [seeded(&[2, 3, 64], 1)?, seeded(&[64], 2)?.affine(0.5, 1.0)?];
    let reference = |x: &[Tensor]| rms_norm_composed(&x[0], &x[1], 1e-5);
    agrees(
        &inputs,
        DType::F32,
        |x| lean::rms_norm(&x[0], &x[1], 1e-5),
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
        let lean_f32 = |x: &[Tensor]| lean::rope(&heads(&x[0])?, &cos, &sin, interleaved);
        let public = |x: &[Tensor]| rope_train(&heads(&x[0])?, &cos, &sin, interleaved);
        agrees(&inputs, DType::F32, lean_f32, reference)?;
        agrees(&inputs, DType::BF16, public, reference)?;
    }
    Ok(())
}

#[test]
fn lean_softmax_agrees_with_the_composition() -> Result<()> {
    let inputs = [seeded(&[3, 4, 11], 5)?.affine(5.0, 0.0)?];
    let reference = |x: &[Tensor]| softmax_composed(&x[0]);
    agrees(&inputs, DType::F32, |x| lean::softmax(&x[0]), reference)?;
    agrees(&inputs, DType::BF16, |x| softmax_train(&x[0]), reference)
}

/// Grouped-query heads stacked as the block stacks them (3 query heads per KV head, t = 5) under
/// the causal mask.
#[test]
fn lean_attention_probs_agree_with_the_composition() -> Result<()> {
    let (b, g, rep, t, d) = (2, 2, 3, 5, 8);
    let inputs = [seeded(&[b, g, rep * t, d], 6)?, seeded(&[b, g, t, d], 7)?];
    let mask = causal(t)?;
    let mask2 = mask.reshape((t, t))?;
    let reference = |x: &[Tensor]| attention_probs_composed(&x[0], &x[1], &mask2);
    let lean_f32 = |x: &[Tensor]| lean::attention_probs(&x[0], &x[1], &mask2);
    agrees(&inputs, DType::F32, lean_f32, reference)?;
    let public = |x: &[Tensor]| attention_probs_train(&x[0], &x[1], &mask);
    agrees(&inputs, DType::BF16, public, reference)?;
    // Masked keys get exactly zero probability.
    let p = lean::attention_probs(&inputs[0], &inputs[1], &mask2)?;
    let row = p.get(1)?.get(1)?.get(t + 1)?.to_vec1::<f32>()?;
    assert!(row[2..].iter().all(|&v| v == 0.0) && (row[0] + row[1] - 1.0).abs() < 1e-6);
    Ok(())
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
        |x| lean::swiglu(&x[0], &x[1]),
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
    let lean = |x: &[Tensor]| lean::target_logprobs(&x[0], &t);
    agrees(&inputs, DType::F32, lean, reference)
}

/// A frozen norm weight (not a variable) gets no gradient, and x's is unchanged by that.
#[test]
fn lean_rms_norm_with_a_frozen_weight_gives_the_input_gradient_only() -> Result<()> {
    let x = Var::from_tensor(&seeded(&[4, 64], 11)?)?;
    let w = seeded(&[64], 12)?;
    let r = seeded(&[4, 64], 13)?;
    let grads = (lean::rms_norm(&x, &w, 1e-5)? * &r)?
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
