//! Unit tests of the training ops: forward values pinned by hand or to candle's fused kernels,
//! CPU kernels against the compositions (values and gradients), frozen ops give no weight gradient.

use super::*;
use candle_core::DType;
use candle_core::{Device, Var};
use rand::{Rng, SeedableRng};

/// Deterministic test data in [-1, 1) (candle's own RNG is not seedable on CPU).
pub(crate) fn seeded(dims: &[usize], seed: u64) -> Result<Tensor> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let n: usize = dims.iter().product();
    let v: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    Tensor::from_vec(v, dims, &Device::Cpu)
}

pub(crate) fn max_abs_diff(a: &Tensor, b: &Tensor) -> Result<f32> {
    (a - b)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()
}

/// Three fixed rows of n values for the vectorized row loops' tests: spread over [-12, 13.3], over
/// [-1.5, 1.76], and sin(0.37 i).
pub(crate) fn test_rows(n: usize) -> [Vec<f32>; 3] {
    [
        (0..n)
            .map(|i| ((i * 7919) % 1013) as f32 / 40.0 - 12.0)
            .collect(),
        (0..n)
            .map(|i| ((i * 104_729) % 977) as f32 / 300.0 - 1.5)
            .collect(),
        (0..n).map(|i| (i as f32 * 0.37).sin()).collect(),
    ]
}

/// A buffer of n values for a kernel under test to write.
pub(crate) fn uninit(n: usize) -> Vec<std::mem::MaybeUninit<f32>> {
    vec![std::mem::MaybeUninit::uninit(); n]
}

/// The values of a buffer a kernel under test wrote in full.
pub(crate) fn read_written(v: Vec<std::mem::MaybeUninit<f32>>) -> Vec<f32> {
    // SAFETY: the callers pass buffers whose every element the kernel under test wrote.
    v.into_iter().map(|x| unsafe { x.assume_init() }).collect()
}

/// Tolerances relative to the reference's largest value: f32 (summation order only) and bf16 (8
/// significant bits), those of the CUDA tests.
pub(crate) const TOL_F32: f32 = 1e-5;
pub(crate) const TOL_BF16: f32 = 3e-2;

/// Runs `f` on `inputs` cast to `dtype` and made variables; returns its output and the gradients
/// of every input of sum(y * r) for a fixed r, all in f32. The output must keep `dtype`.
pub(crate) fn run(
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
pub(crate) fn assert_close(what: &str, a: &Tensor, b: &Tensor, tol: f32) -> Result<()> {
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
pub(crate) fn agrees(
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
fn rms_norm_hand_computed() -> Result<()> {
    // x = [3, 4]: mean(x^2) = (9 + 16) / 2 = 12.5, rms = sqrt(12.5) = 3.5355339;
    // y = [3 / 3.5355339 * 1, 4 / 3.5355339 * 2] = [0.8485281, 2.2627417].
    let x = Tensor::new(&[[3f32, 4.]], &Device::Cpu)?;
    let w = Tensor::new(&[1f32, 2.], &Device::Cpu)?;
    let y = rms_norm_train(&x, &w, 0.0)?.to_vec2::<f32>()?;
    assert!((y[0][0] - 0.848_528_1).abs() < 1e-6, "{y:?}");
    assert!((y[0][1] - 2.262_741_7).abs() < 1e-6, "{y:?}");
    Ok(())
}

#[test]
fn rms_norm_matches_fused() -> Result<()> {
    let x = seeded(&[2, 5, 64], 1)?;
    let w = seeded(&[64], 2)?;
    let fused = candle_nn::ops::rms_norm(&x, &w, 1e-5)?;
    let ours = rms_norm_train(&x, &w, 1e-5)?;
    assert!(max_abs_diff(&fused, &ours)? < 1e-5);
    Ok(())
}

#[test]
fn rms_norm_cpu_kernel_and_composition_agree_with_gradients() -> Result<()> {
    let x = Var::from_tensor(&seeded(&[2, 3, 16], 18)?)?;
    let w = Var::from_tensor(&seeded(&[16], 19)?)?;
    let r = seeded(&[2, 3, 16], 20)?;
    let y_op = rms_norm_train(&x, &w, 1e-5)?;
    let y_comp = rms_norm_composed(&x, &w, 1e-5)?;
    assert!(max_abs_diff(&y_op, &y_comp)? < 1e-5);
    let g_op = (y_op * &r)?.sum_all()?.backward()?;
    let g_comp = (y_comp * &r)?.sum_all()?.backward()?;
    for v in [&x, &w] {
        let (a, b) = (g_op.get(v).expect("grad"), g_comp.get(v).expect("grad"));
        assert!(max_abs_diff(a, b)? < 1e-5);
        assert!(a.abs()?.sum_all()?.to_scalar::<f32>()? > 1e-3);
    }
    Ok(())
}

#[test]
fn rope_hand_computed_both_layouts() -> Result<()> {
    // d = 4: pair 0 turns by 90 degrees (cos 0, sin 1), pair 1 by 0 (cos 1, sin 0).
    // Interleaved pairs (x0, x1), (x2, x3) of x = [1, 0, 0, 1]:
    //   (1, 0) -> (1*0 - 0*1, 1*1 + 0*0) = (0, 1); (0, 1) -> (0, 1)  => [0, 1, 0, 1].
    // Half-split pairs (x0, x2), (x1, x3): (1, 0) -> (0, 1); (0, 1) -> (0, 1) => [0, 0, 1, 1].
    let dev = Device::Cpu;
    let x = Tensor::new(&[1f32, 0., 0., 1.], &dev)?.reshape((1, 1, 1, 4))?;
    let cos = Tensor::new(&[[0f32, 1.]], &dev)?;
    let sin = Tensor::new(&[[1f32, 0.]], &dev)?;
    let inter = rope_train(&x, &cos, &sin, true, 1.0)?
        .flatten_all()?
        .to_vec1::<f32>()?;
    let halves = rope_train(&x, &cos, &sin, false, 1.0)?
        .flatten_all()?
        .to_vec1::<f32>()?;
    assert_eq!(inter, vec![0., 1., 0., 1.]);
    assert_eq!(halves, vec![0., 0., 1., 1.]);
    Ok(())
}

#[test]
fn rope_matches_fused_both_layouts() -> Result<()> {
    let (t, d) = (7, 64);
    let x = seeded(&[2, 3, t, d], 3)?;
    let angles = seeded(&[t, d / 2], 4)?.affine(3.0, 0.0)?;
    let (cos, sin) = (angles.cos()?, angles.sin()?);
    let fused_i = candle_nn::rotary_emb::rope_i(&x, &cos, &sin)?;
    let fused_h = candle_nn::rotary_emb::rope(&x, &cos, &sin)?;
    assert!(max_abs_diff(&fused_i, &rope_train(&x, &cos, &sin, true, 1.0)?)? < 1e-6);
    assert!(max_abs_diff(&fused_h, &rope_train(&x, &cos, &sin, false, 1.0)?)? < 1e-6);
    // The two layouts really differ, so the flag matters.
    assert!(max_abs_diff(&fused_i, &fused_h)? > 1e-2);
    Ok(())
}

#[test]
fn rope_cpu_kernel_and_composition_agree_with_gradients() -> Result<()> {
    let x = Var::from_tensor(&seeded(&[2, 3, 5, 8], 15)?)?;
    let r = seeded(&[2, 3, 5, 8], 16)?;
    let angles = seeded(&[5, 4], 17)?.affine(3.0, 0.0)?;
    let (cos, sin) = (angles.cos()?, angles.sin()?);
    for interleaved in [true, false] {
        let y_op = rope_train(&x, &cos, &sin, interleaved, 1.0)?;
        let y_comp = rope_composed(&x, &cos, &sin, interleaved)?;
        assert!(max_abs_diff(&y_op, &y_comp)? < 1e-6);
        let g_op = (y_op * &r)?.sum_all()?.backward()?;
        let g_comp = (y_comp * &r)?.sum_all()?.backward()?;
        let (g_op, g_comp) = (g_op.get(&x).expect("grad"), g_comp.get(&x).expect("grad"));
        assert!(max_abs_diff(g_op, g_comp)? < 1e-6);
        assert!(g_op.abs()?.sum_all()?.to_scalar::<f32>()? > 1e-3);
    }
    Ok(())
}

/// The heads view of a projection's output ([b, t, h, d] transposed to [b, h, t, d], here also
/// narrowed so that it starts inside its buffer) is read in place: the same bits as rotating a
/// contiguous copy, in value and gradient.
#[test]
fn rope_reads_a_strided_heads_view_in_place() -> Result<()> {
    let proj = Var::from_tensor(&seeded(&[3, 5, 3, 8], 18)?)?;
    let view = proj.narrow(0, 1, 2)?.transpose(1, 2)?;
    assert!(!view.is_contiguous());
    let r = seeded(&[2, 3, 5, 8], 19)?;
    let angles = seeded(&[5, 4], 20)?.affine(3.0, 0.0)?;
    let (cos, sin) = (angles.cos()?, angles.sin()?);
    for interleaved in [true, false] {
        let y_view = rope_train(&view, &cos, &sin, interleaved, 1.0)?;
        let y_copy = rope_train(&view.contiguous()?, &cos, &sin, interleaved, 1.0)?;
        assert_eq!(max_abs_diff(&y_view, &y_copy)?, 0.0);
        let g_view = (y_view * &r)?.sum_all()?.backward()?;
        let g_copy = (y_copy * &r)?.sum_all()?.backward()?;
        let (a, b) = (
            g_view.get(&proj).expect("grad"),
            g_copy.get(&proj).expect("grad"),
        );
        assert_eq!(max_abs_diff(a, b)?, 0.0);
        assert!(a.abs()?.sum_all()?.to_scalar::<f32>()? > 1e-3);
    }
    Ok(())
}

/// Rope times a scale (q's 1/sqrt(d)) has the bits of rope followed by `x * scale`, in value and
/// gradient: on the CPU kernel in f32, and on the portable op (CUDA's) in f32 and bf16.
#[test]
fn scaled_rope_has_the_bits_of_rope_then_the_product() -> Result<()> {
    let r = seeded(&[2, 3, 5, 8], 22)?;
    let angles = seeded(&[5, 4], 23)?.affine(3.0, 0.0)?;
    let (cos, sin) = (angles.cos()?, angles.sin()?);
    let scale = 8f64.sqrt().recip();
    for dtype in [DType::F32, DType::BF16] {
        let x = Var::from_tensor(&seeded(&[2, 3, 5, 8], 21)?.to_dtype(dtype)?)?;
        for interleaved in [true, false] {
            let run = |y: Tensor| -> Result<(Tensor, Tensor)> {
                let y = y.to_dtype(DType::F32)?;
                let g = (&y * &r)?.sum_all()?.backward()?;
                Ok((y, g.get(&x).expect("grad").to_dtype(DType::F32)?))
            };
            // rope_train takes the CPU kernel in f32 and the portable op in bf16; portable::rope is
            // the portable op in f32.
            for name in ["rope_train", "portable::rope"] {
                let op = |s| match name {
                    "rope_train" => rope_train(&x, &cos, &sin, interleaved, s),
                    _ => portable::rope(&x, &cos, &sin, interleaved, s),
                };
                let (y_op, g_op) = run(op(scale)?)?;
                let (y_two, g_two) = run((op(1.0)? * scale)?)?;
                assert_eq!(max_abs_diff(&y_op, &y_two)?, 0.0, "{name} {dtype:?}");
                assert_eq!(max_abs_diff(&g_op, &g_two)?, 0.0, "{name} {dtype:?}");
                assert!(max_abs_diff(&y_op, &x.to_dtype(DType::F32)?)? > 1e-2);
            }
        }
    }
    Ok(())
}

#[test]
fn rope_rejects_unnarrowed_table() -> Result<()> {
    let x = seeded(&[1, 1, 3, 8], 5)?;
    let table = seeded(&[10, 4], 6)?;
    assert!(rope_train(&x, &table, &table, true, 1.0).is_err());
    Ok(())
}

#[test]
fn softmax_hand_computed_and_matches_fused() -> Result<()> {
    // [0, ln 3]: exp = [1, 3], sum 4 => [0.25, 0.75].
    let x = Tensor::new(&[[0f32, 3f32.ln()]], &Device::Cpu)?;
    let y = softmax_train(&x)?.to_vec2::<f32>()?;
    assert!((y[0][0] - 0.25).abs() < 1e-6 && (y[0][1] - 0.75).abs() < 1e-6);
    let x = seeded(&[2, 3, 9, 9], 7)?.affine(20.0, 0.0)?;
    let fused = candle_nn::ops::softmax_last_dim(&x)?;
    assert!(max_abs_diff(&fused, &softmax_train(&x)?)? < 1e-6);
    Ok(())
}

#[test]
fn softmax_cpu_kernel_and_composition_agree_with_gradients() -> Result<()> {
    let x = Var::from_tensor(&seeded(&[3, 4, 11], 13)?.affine(5.0, 0.0)?)?;
    let r = seeded(&[3, 4, 11], 14)?;
    let (y_op, y_comp) = (softmax_train(&x)?, softmax_composed(&x)?);
    assert!(max_abs_diff(&y_op, &y_comp)? < 1e-6);
    let g_op = (y_op * &r)?.sum_all()?.backward()?;
    let g_comp = (y_comp * &r)?.sum_all()?.backward()?;
    let (g_op, g_comp) = (g_op.get(&x).expect("grad"), g_comp.get(&x).expect("grad"));
    assert!(max_abs_diff(g_op, g_comp)? < 1e-6);
    assert!(g_op.abs()?.sum_all()?.to_scalar::<f32>()? > 1e-3);
    // bf16 input takes the composed path (computed in f32) and keeps its dtype.
    let y16 = softmax_train(&x.to_dtype(DType::BF16)?)?;
    assert_eq!(y16.dtype(), DType::BF16);
    assert!(max_abs_diff(&y16.to_dtype(DType::F32)?, &softmax_composed(&x)?)? < 1e-2);
    Ok(())
}

#[test]
fn frozen_matmul_hand_computed_and_matches_matmul() -> Result<()> {
    // [1, 2] @ [[1, 0], [0, 1], [1, 1]]^T = [1, 2, 3].
    let dev = Device::Cpu;
    let x = Tensor::new(&[[1f32, 2.]], &dev)?;
    let w = Tensor::new(&[[1f32, 0.], [0., 1.], [1., 1.]], &dev)?;
    assert_eq!(
        frozen_matmul(&x, &w, None)?.to_vec2::<f32>()?,
        vec![vec![1., 2., 3.]]
    );
    let x = seeded(&[2, 5, 16], 8)?;
    let w = seeded(&[12, 16], 9)?;
    let plain = x.broadcast_matmul(&w.t()?)?;
    let frozen = frozen_matmul(&x, &w, None)?;
    assert_eq!(frozen.dims(), &[2, 5, 12]);
    assert!(max_abs_diff(&plain, &frozen)? < 1e-5);
    Ok(())
}

#[test]
fn frozen_matmul_gives_no_weight_gradient() -> Result<()> {
    let x = Var::from_tensor(&seeded(&[3, 4], 10)?)?;
    let w = Var::from_tensor(&seeded(&[5, 4], 11)?)?;
    let grads = frozen_matmul(&x, &w, None)?.sum_all()?.backward()?;
    assert!(
        grads.get(&w).is_none(),
        "frozen weight must get no gradient"
    );
    // d sum(x W^T) / dx = ones [3, 5] @ W = column sums of W in every row.
    let gx = grads.get(&x).expect("input gradient");
    let want = Tensor::ones((3, 5), DType::F32, &Device::Cpu)?.matmul(w.as_tensor())?;
    assert!(max_abs_diff(gx, &want)? < 1e-6);
    Ok(())
}

#[test]
fn frozen_matmul_on_a_column_major_weight_gives_the_same_values_and_gradient() -> Result<()> {
    // LoraLinear keeps CPU weights column-major; the op must give what the row-major copy gives.
    let w = seeded(&[12, 16], 9)?;
    let w_cols = w.t()?.contiguous()?.t()?;
    assert!(!w_cols.is_contiguous() && w_cols.t()?.is_contiguous());
    let x = Var::from_tensor(&seeded(&[5, 16], 8)?)?;
    let rows = frozen_matmul(&x, &w, None)?;
    let cols = frozen_matmul(&x, &w_cols, None)?;
    assert!(max_abs_diff(&rows, &cols)? < 1e-6);
    let g_rows = rows.sqr()?.sum_all()?.backward()?;
    let g_cols = cols.sqr()?.sum_all()?.backward()?;
    let (a, b) = (g_rows.get(&x).expect("grad"), g_cols.get(&x).expect("grad"));
    assert!(max_abs_diff(a, b)? < 1e-5);
    Ok(())
}

#[test]
fn frozen_embedding_gives_no_table_gradient() -> Result<()> {
    let dev = Device::Cpu;
    let table = Var::from_tensor(&seeded(&[6, 3], 12)?)?;
    let scale = Var::from_tensor(&Tensor::ones(3, DType::F32, &dev)?)?;
    let ids = Tensor::new(&[[1u32, 4], [4, 0]], &dev)?;
    let emb = frozen_embedding(&ids, &table)?;
    assert_eq!(emb.dims(), &[2, 2, 3]);
    let row4 = table.as_tensor().get(4)?.to_vec1::<f32>()?;
    assert_eq!(emb.get(0)?.get(1)?.to_vec1::<f32>()?, row4);
    let grads = emb.broadcast_mul(&scale)?.sum_all()?.backward()?;
    assert!(
        grads.get(&table).is_none(),
        "frozen table must get no gradient"
    );
    assert!(grads.get(&scale).is_some());
    Ok(())
}

#[test]
fn target_logprobs_hand_computed() -> Result<()> {
    // Row [0, ln 3]: lse = ln(1 + 3) = ln 4; log p(1) = ln 3 - ln 4 = -0.2876821,
    // log p(0) = -ln 4 = -1.3862944. d/dx of log p(1) = onehot(1) - softmax = [-0.25, 0.25].
    let x = Var::new(&[[0f32, 3f32.ln()], [0., 3f32.ln()]], &Device::Cpu)?;
    let t = Tensor::new(&[1u32, 0], &Device::Cpu)?;
    let lp = target_logprobs(&x, &t)?;
    let v = lp.to_vec1::<f32>()?;
    assert!(
        (v[0] + 0.287_682_1).abs() < 1e-6 && (v[1] + 1.386_294_4).abs() < 1e-6,
        "{v:?}"
    );
    let g = lp.narrow(0, 0, 1)?.sum_all()?.backward()?;
    let gx = g.get(&x).expect("grad").to_vec2::<f32>()?;
    assert!(
        (gx[0][0] + 0.25).abs() < 1e-6 && (gx[0][1] - 0.25).abs() < 1e-6,
        "{gx:?}"
    );
    assert_eq!(gx[1], vec![0.0, 0.0]);
    Ok(())
}

#[test]
fn target_logprobs_cpu_kernel_and_composition_agree_with_gradients() -> Result<()> {
    let x = Var::from_tensor(&(seeded(&[6, 300], 30)? * 8.0)?)?;
    let t = Tensor::new(&[0u32, 299, 17, 17, 150, 3], &Device::Cpu)?;
    let r = seeded(&[6], 31)?;
    let y_op = target_logprobs(&x, &t)?;
    let y_comp = target_logprobs_composed(&x, &t)?;
    assert!(max_abs_diff(&y_op, &y_comp)? < 1e-5);
    let g_op = (y_op * &r)?.sum_all()?.backward()?;
    let g_comp = (y_comp * &r)?.sum_all()?.backward()?;
    let (a, b) = (g_op.get(&x).expect("grad"), g_comp.get(&x).expect("grad"));
    assert!(max_abs_diff(a, b)? < 1e-6);
    assert!(a.abs()?.sum_all()?.to_scalar::<f32>()? > 1e-3);
    Ok(())
}

/// The CPU op's own check (the portable path leaves it to candle's gather).
#[cfg(feature = "cpu-kernels")]
#[test]
fn target_logprobs_rejects_a_target_outside_the_vocabulary() -> Result<()> {
    if crate::kernels::choice::portable() {
        return Ok(());
    }
    let x = seeded(&[2, 5], 32)?;
    let t = Tensor::new(&[1u32, 5], &Device::Cpu)?;
    let err = target_logprobs(&x, &t).expect_err("target 5 of 5");
    assert!(err.to_string().contains("outside the vocabulary"), "{err}");
    Ok(())
}

/// The causal mask of the training forward for t positions, [1, 1, 1, t, t].
pub(crate) fn causal(t: usize) -> Result<Tensor> {
    crate::block::causal_mask(t, &Device::Cpu).map_err(|e| candle_core::Error::Msg(e.to_string()))
}

#[test]
fn attention_hand_computed() -> Result<()> {
    // One head, t = 2, d = 1: q = [1, 2], k = [0, ln 3], v = [10, 20]. Row 0 sees key 0 only:
    // y = 10. Row 1: scores [2 * 0, 2 * ln 3] = [0, ln 9] -> softmax [1/10, 9/10], y = 1 + 18 = 19.
    let dev = Device::Cpu;
    let q = Tensor::new(&[1f32, 2.], &dev)?.reshape((1, 1, 2, 1))?;
    let k = Tensor::new(&[0f32, 3f32.ln()], &dev)?.reshape((1, 1, 2, 1))?;
    let v = Tensor::new(&[10f32, 20.], &dev)?.reshape((1, 1, 2, 1))?;
    let y = attention_train(&q, &k, &v, &causal(2)?)?
        .flatten_all()?
        .to_vec1::<f32>()?;
    assert!(
        (y[0] - 10.0).abs() < 1e-5 && (y[1] - 19.0).abs() < 1e-5,
        "{y:?}"
    );
    Ok(())
}

/// softmax(q k^T + mask) v from candle ops, its heads merged: the reference of the CPU op.
pub(crate) fn attention_composed(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: &Tensor,
) -> Result<Tensor> {
    merge_heads(
        &attention_probs_composed(q, k, mask)?.matmul(v)?,
        mask.dim(0)?,
    )
}

/// Grouped-query heads stacked as the block stacks them (3 query heads per KV head) over 150
/// positions, so that the 64-row blocks end mid-head.
fn attention_inputs(t: usize, keys: usize) -> Result<[Tensor; 3]> {
    let (b, g, rep, d) = (2, 2, 3, 8);
    Ok([
        seeded(&[b, g, rep * t, d], 31)?.affine(3.0, 0.0)?,
        seeded(&[b, g, keys, d], 32)?,
        seeded(&[b, g, keys, d], 33)?,
    ])
}

/// The CPU op against the composition (matmul, mask add, softmax, matmul) for t queries over the
/// mask's keys: values and the gradients of q, k and v within summation order.
fn attention_agrees_under(t: usize, mask: &Tensor) -> Result<()> {
    let keys = mask.dim(D::Minus1)?;
    let mask2 = mask.reshape((t, keys))?;
    agrees(
        &attention_inputs(t, keys)?,
        DType::F32,
        |x| attention_train(&x[0], &x[1], &x[2], mask),
        |x| attention_composed(&x[0], &x[1], &x[2], &mask2),
    )
}

/// Under the causal mask.
#[test]
fn attention_cpu_op_agrees_with_the_composition() -> Result<()> {
    attention_agrees_under(150, &causal(150)?)
}

/// Masks that are not causal: more keys than queries (a cached prefix), hidden keys inside a
/// row's visible range, rows that see fewer keys than rows above them (so blocks differ in how far
/// their rows reach), and a row that sees a single key.
#[test]
fn attention_cpu_op_agrees_with_the_composition_under_other_masks() -> Result<()> {
    let (t, keys) = (150, 170);
    let hidden = f32::NEG_INFINITY;
    let m: Vec<f32> = (0..t * keys)
        .map(|i| {
            let (p, j) = (i / keys, i % keys);
            let reach = if p % 7 == 3 { p / 2 } else { keys - t + p };
            let open = j <= reach && (j % 11 != 5 || j == reach) && !(p == 70 && j > 0);
            if open {
                0.25 * (j % 3) as f32
            } else {
                hidden
            }
        })
        .collect();
    attention_agrees_under(t, &Tensor::from_vec(m, (t, keys), &Device::Cpu)?)
}

/// q, k and v given as heads views (the [b, t, g, d] projection layout transposed, as the block
/// passes v) are read in place: the bits of the op on contiguous copies, in value and gradient.
#[test]
fn attention_cpu_op_reads_heads_views_in_place() -> Result<()> {
    let t = 70;
    let mask = causal(t)?;
    let x = attention_inputs(t, t)?;
    let vars = x
        .iter()
        .map(|x| Var::from_tensor(&x.transpose(1, 2)?.contiguous()?))
        .collect::<Result<Vec<_>>>()?;
    let views = vars
        .iter()
        .map(|v| v.transpose(1, 2))
        .collect::<Result<Vec<_>>>()?;
    assert!(views.iter().all(|v| !v.is_contiguous()));
    let r = seeded(&[2, t, 2 * 3 * 8], 36)?;
    let run = |copy: bool| -> Result<Vec<Vec<f32>>> {
        let [q, k, v] = [0, 1, 2].map(|i| match copy {
            true => views[i].contiguous(),
            false => Ok(views[i].clone()),
        });
        let y = attention_train(&q?, &k?, &v?, &mask)?;
        value_and_grads(&y, &r, &vars)
    };
    assert_eq!(run(false)?, run(true)?);
    Ok(())
}

/// y's values, then the gradient of sum(y * r) for each of `vars`, as f32 vectors: what the
/// bit-equality tests compare.
fn value_and_grads(y: &Tensor, r: &Tensor, vars: &[Var]) -> Result<Vec<Vec<f32>>> {
    let grads = (y * r)?.sum_all()?.backward()?;
    let mut out = vec![y.flatten_all()?.to_vec1::<f32>()?];
    for v in vars {
        out.push(
            grads
                .get(v)
                .expect("grad")
                .flatten_all()?
                .to_vec1::<f32>()?,
        );
    }
    Ok(out)
}

/// f64 through the same op agrees with the composition to f64 rounding.
#[test]
fn attention_cpu_op_in_f64() -> Result<()> {
    let t = 70;
    let mask = causal(t)?.to_dtype(DType::F64)?.reshape((t, t))?;
    let x = attention_inputs(t, t)?.map(|x| x.to_dtype(DType::F64).expect("f64"));
    let (q, k, v) = (
        Var::from_tensor(&x[0])?,
        Var::from_tensor(&x[1])?,
        Var::from_tensor(&x[2])?,
    );
    let y = attention_train(&q, &k, &v, &mask)?;
    let r = seeded(y.dims(), 34)?.to_dtype(DType::F64)?;
    let y_ref = attention_composed(&q, &k, &v, &mask)?;
    let g = (&y * &r)?.sum_all()?.backward()?;
    let g_ref = (&y_ref * &r)?.sum_all()?.backward()?;
    let diff = |a: &Tensor, b: &Tensor| -> Result<f64> {
        (a - b)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f64>()
    };
    assert!(diff(&y, &y_ref)? < 1e-12);
    for v in [&q, &k, &v] {
        assert!(diff(g.get(v).expect("grad"), g_ref.get(v).expect("grad"))? < 1e-12);
    }
    Ok(())
}

/// Every output element is made by one task in a fixed order: one thread and the default pool
/// give the same bits, forward and backward.
#[test]
fn attention_cpu_op_does_not_depend_on_the_thread_count() -> Result<()> {
    let t = 150;
    let mask = causal(t)?;
    let x = attention_inputs(t, t)?;
    let run = || -> Result<Vec<Vec<f32>>> {
        let vars = x.iter().map(Var::from_tensor).collect::<Result<Vec<_>>>()?;
        let y = attention_train(&vars[0], &vars[1], &vars[2], &mask)?;
        value_and_grads(&y, &seeded(y.dims(), 35)?, &vars)
    };
    same_on_one_thread(run)
}

/// `run` gives the same result on a one-thread pool as on the default one.
pub(crate) fn same_on_one_thread<R: PartialEq + std::fmt::Debug + Send>(
    run: impl Fn() -> Result<R> + Sync,
) -> Result<()> {
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool")
        .install(&run)?;
    assert_eq!(one, run()?);
    Ok(())
}

#[test]
fn attention_rejects_a_mask_per_batch_row() -> Result<()> {
    let q = seeded(&[2, 1, 3, 4], 34)?;
    let k = seeded(&[2, 1, 3, 4], 35)?;
    let per_row = Tensor::zeros((2, 1, 1, 3, 3), DType::F32, &Device::Cpu)?;
    let e = attention_train(&q, &k, &k, &per_row)
        .unwrap_err()
        .to_string();
    assert!(e.contains("one [t, keys] mask"), "{e}");
    Ok(())
}

#[test]
fn swiglu_op_equals_composition_values_and_gradients() -> Result<()> {
    // Odd sizes so that the parallel chunks end mid-row. The op's exp is the polynomial of
    // rows.rs (within 2 ulp of libm's), candle's silu libm's: the same formula otherwise, so the
    // two agree to a few ulp.
    let g = Var::from_tensor(&(seeded(&[3, 7001], 21)? * 4.0)?)?;
    let u = Var::from_tensor(&seeded(&[3, 7001], 22)?)?;
    let w = seeded(&[3, 7001], 23)?;
    let y_op = swiglu_train(g.as_tensor(), u.as_tensor())?;
    let y_comp = (g.as_tensor().silu()? * u.as_tensor())?;
    assert_close("output", &y_op, &y_comp, 1e-6)?;
    let grads_op = (y_op * &w)?.sum_all()?.backward()?;
    let grads_comp = (y_comp * &w)?.sum_all()?.backward()?;
    for v in [&g, &u] {
        let (a, b) = (grads_op.get(v).unwrap(), grads_comp.get(v).unwrap());
        assert_close("gradient", a, b, 1e-6)?;
        assert!(a.abs()?.sum_all()?.to_scalar::<f32>()? > 1e-3);
    }
    Ok(())
}

#[test]
fn swiglu_gradient_hand_computed() -> Result<()> {
    // d silu/dg = s (1 + g (1 - s)) with s = sigmoid(g). g = 0: s = 1/2, silu = 0,
    // d silu/dg = 1/2; with up = 3 and grad 1: dgate = 1.5, dup = 0. g = 2: s = 0.8807971,
    // silu = 1.7615942, d silu/dg = 0.8807971 * (1 + 2 * 0.1192029) = 1.0907843; up = -1:
    // dgate = -1.0907843, dup = 1.7615942.
    let g = Var::new(&[0f32, 2.], &Device::Cpu)?;
    let u = Var::new(&[3f32, -1.], &Device::Cpu)?;
    let grads = swiglu_train(g.as_tensor(), u.as_tensor())?
        .sum_all()?
        .backward()?;
    let dg = grads.get(&g).unwrap().to_vec1::<f32>()?;
    let du = grads.get(&u).unwrap().to_vec1::<f32>()?;
    assert!(
        (dg[0] - 1.5).abs() < 1e-6 && (dg[1] + 1.090_784_3).abs() < 1e-6,
        "{dg:?}"
    );
    assert!(
        du[0].abs() < 1e-6 && (du[1] - 1.761_594_2).abs() < 1e-6,
        "{du:?}"
    );
    Ok(())
}

#[test]
fn the_head_matmul_equals_x_times_w_transposed_bit_for_bit() -> Result<()> {
    // SmolLM2's tied head [49152, 576], at every row count up to 20 (the transposed form runs at
    // 2-15): the same bits as x w^T (where the few-rows op does not run: no AVX-512).
    let w = seeded(&[49152, 576], 7)?;
    for m in 1..=20 {
        let x = seeded(&[m, 576], 100 + m as u64)?;
        let want = x.matmul(&w.t()?)?;
        let got = head_matmul_gemm(&x, &w)?;
        assert_eq!(got.dims(), &[m, 49152]);
        assert_eq!(max_abs_diff(&got, &want)?, 0.0, "{m} rows");
    }
    Ok(())
}

#[test]
fn plus_low_rank_hand_computed_with_transposed_factors() -> Result<()> {
    // w = [[1, 2, 3], [4, 5, 6]], u = [[1], [2]] (rank 1), v = [[1, 0, -1]], scale 2:
    // w + 2 u v = [[3, 2, 1], [8, 5, 2]]. u and v are given as transposed views, as a merged
    // weight's transpose takes A^T and B^T.
    let w = Tensor::new(&[[1f32, 2., 3.], [4., 5., 6.]], &Device::Cpu)?;
    let u = Tensor::new(&[[1f32, 2.]], &Device::Cpu)?.t()?;
    let v = Tensor::new(&[[1f32], [0.], [-1.]], &Device::Cpu)?.t()?;
    let y = plus_low_rank(&w, &u, &v, 2.0)?;
    assert_eq!(y.to_vec2::<f32>()?, [[3., 2., 1.], [8., 5., 2.]]);
    assert_eq!(
        w.to_vec2::<f32>()?,
        [[1., 2., 3.], [4., 5., 6.]],
        "w is copied, not changed"
    );
    // Larger and random: the composition's values, up to summation order.
    let (w, u, v) = (
        seeded(&[64, 96], 1)?,
        seeded(&[16, 64], 2)?,
        seeded(&[96, 16], 3)?,
    );
    let want = (&w + (u.t()?.matmul(&v.t()?)? * 0.5)?)?;
    assert!(max_abs_diff(&plus_low_rank(&w, &u.t()?, &v.t()?, 0.5)?, &want)? < 1e-5);
    // Shapes that do not fit, and a w that is not contiguous, are refused.
    for w in [w.t()?, w.t()?.contiguous()?.t()?] {
        let err = plus_low_rank(&w, &u.t()?, &v.t()?, 1.0).unwrap_err();
        assert!(err.to_string().contains("plus_low_rank"), "{err}");
    }
    Ok(())
}
