//! Differentiable building blocks for the TRAINING forward pass.
//!
//! candle's fused kernels (`rms_norm`, `softmax_last_dim`, `rope`, `rope_i`) have no backward: they
//! run through `apply_op*_no_bwd` and silently detach their output (CANDLE-NOTES). The training
//! forward therefore uses the functions here, which are built from differentiable tensor ops and
//! agree with the fused kernels in the forward direction (unit tests below pin that).
//!
//! `frozen_matmul` and `frozen_embedding` exist for memory and time: candle's matmul backward
//! always computes the gradient of both operands, so with LoRA every frozen projection (and the
//! tied lm-head, a [49152, 576] table) got a full weight gradient, making LoRA as costly as full
//! fine-tuning. `frozen_matmul` is a custom op whose backward returns only the input gradient.
//! Its forward calls the backend's own matmul, so it is the same kernel on CPU and CUDA.

use candle_core::backend::BackendStorage;
use candle_core::{
    CpuStorage, CudaStorage, CustomOp1, CustomOp2, DType, Layout, Result, Shape, Tensor, WithDType,
    D,
};

/// Internal dtype for reductions: half types are upcast to f32 (as candle's `rms_norm_slow` does).
fn internal_dtype(dtype: DType) -> DType {
    match dtype {
        DType::F16 | DType::BF16 => DType::F32,
        d => d,
    }
}

/// RMSNorm built from differentiable ops (candle's fused rms_norm detaches its output).
///
/// y = x / sqrt(mean(x^2, last dim) + eps) * weight (Zhang & Sennrich 2019, eq. 4), computed in
/// f32 for half-precision inputs and cast back.
pub fn rms_norm_train(x: &Tensor, weight: &Tensor, eps: f64) -> Result<Tensor> {
    let hidden = x.dim(D::Minus1)?;
    if weight.dims() != [hidden] {
        candle_core::bail!(
            "rms_norm_train: weight shape {:?} does not match hidden size {hidden} of x {:?}",
            weight.shape(),
            x.shape()
        )
    }
    let x_dtype = x.dtype();
    let xf = x.to_dtype(internal_dtype(x_dtype))?;
    let mean_sq = xf.sqr()?.mean_keepdim(D::Minus1)?;
    let inv_rms = (mean_sq + eps)?.sqrt()?.recip()?;
    let normed = xf.broadcast_mul(&inv_rms)?.to_dtype(x_dtype)?;
    normed.broadcast_mul(&weight.to_dtype(x_dtype)?)
}

/// Rotary embedding with backward. `cos`/`sin`: [seq, head_dim/2], already narrowed to the
/// positions of x. x: [batch, heads, seq, head_dim]. `interleaved = true` for GGUF weights
/// (pairs (2i, 2i+1)), false for HF safetensors (halves).
///
/// Each pair (x0, x1) rotates by the angle of its position and frequency (Su et al. 2021, RoFormer
/// eq. 34): y0 = x0 cos - x1 sin, y1 = x0 sin + x1 cos. Interleaved pairs are (x[2i], x[2i+1])
/// (candle's `rope_i`); half-split pairs are (x[i], x[i + d/2]) (candle's `rope`).
pub fn rope_train(x: &Tensor, cos: &Tensor, sin: &Tensor, interleaved: bool) -> Result<Tensor> {
    let (b, h, t, d) = x.dims4()?;
    let half = d / 2;
    for (name, table) in [("cos", cos), ("sin", sin)] {
        if d % 2 != 0 || table.dims() != [t, half] {
            candle_core::bail!(
                "rope_train: {name} has shape {:?}, expected [{t}, {half}] for x {:?} \
                 (narrow the table to the positions of x)",
                table.shape(),
                x.shape()
            )
        }
    }
    let cos = cos.to_dtype(x.dtype())?;
    let sin = sin.to_dtype(x.dtype())?;
    if interleaved {
        let cos = cos.reshape((1, 1, t, half, 1))?;
        let sin = sin.reshape((1, 1, t, half, 1))?;
        let xp = x.reshape((b, h, t, half, 2))?;
        let x0 = xp.narrow(D::Minus1, 0, 1)?;
        let x1 = xp.narrow(D::Minus1, 1, 1)?;
        let y0 = (x0.broadcast_mul(&cos)? - x1.broadcast_mul(&sin)?)?;
        let y1 = (x0.broadcast_mul(&sin)? + x1.broadcast_mul(&cos)?)?;
        Tensor::cat(&[y0, y1], D::Minus1)?.reshape((b, h, t, d))
    } else {
        let cos = cos.reshape((1, 1, t, half))?;
        let sin = sin.reshape((1, 1, t, half))?;
        let x0 = x.narrow(D::Minus1, 0, half)?;
        let x1 = x.narrow(D::Minus1, half, half)?;
        let y0 = (x0.broadcast_mul(&cos)? - x1.broadcast_mul(&sin)?)?;
        let y1 = (x0.broadcast_mul(&sin)? + x1.broadcast_mul(&cos)?)?;
        Tensor::cat(&[y0, y1], D::Minus1)
    }
}

/// Softmax over the last dim with backward (numerically stable).
///
/// softmax(x) = exp(x - m) / sum exp(x - m) with m the row max. On CPU (f32/f64) this is a custom
/// op whose backward is dx = y * (g - sum(g * y)) from the saved output y: it keeps only x and y
/// alive and runs several times faster than the composition of candle ops. Elsewhere it is that
/// composition, with m detached: the result does not depend on m, so its gradient through m is
/// exactly zero. Half-precision inputs are computed in f32 and cast back.
pub fn softmax_train(x: &Tensor) -> Result<Tensor> {
    if x.device().is_cpu() && matches!(x.dtype(), DType::F32 | DType::F64) {
        return x.contiguous()?.apply_op1(SoftmaxLastDimTrain);
    }
    softmax_composed(x)
}

/// The device-independent softmax: candle ops only, max detached.
fn softmax_composed(x: &Tensor) -> Result<Tensor> {
    let x_dtype = x.dtype();
    let xf = x.to_dtype(internal_dtype(x_dtype))?;
    let max = xf.max_keepdim(D::Minus1)?.detach();
    let num = xf.broadcast_sub(&max)?.exp()?;
    let den = num.sum_keepdim(D::Minus1)?;
    num.broadcast_div(&den)?.to_dtype(x_dtype)
}

/// Float types of the CPU softmax kernels.
trait KernelFloat: WithDType {
    fn exp_k(self) -> Self;
}

impl KernelFloat for f32 {
    fn exp_k(self) -> Self {
        self.exp()
    }
}

impl KernelFloat for f64 {
    fn exp_k(self) -> Self {
        self.exp()
    }
}

/// Row-wise softmax of contiguous rows of length `dim`.
fn softmax_rows<T: KernelFloat>(x: &[T], dim: usize) -> Vec<T> {
    let mut out = vec![T::from_f64(0.0); x.len()];
    for (row, o) in x
        .chunks_exact(dim.max(1))
        .zip(out.chunks_exact_mut(dim.max(1)))
    {
        let max = row.iter().fold(row[0], |m, &v| if v > m { v } else { m });
        let mut sum = T::from_f64(0.0);
        for (o, &v) in o.iter_mut().zip(row) {
            *o = (v - max).exp_k();
            sum += *o;
        }
        o.iter_mut().for_each(|o| *o /= sum);
    }
    out
}

/// Row-wise softmax backward: dx = y * (g - sum(g * y)).
fn softmax_bwd_rows<T: KernelFloat>(g: &[T], y: &[T], dim: usize) -> Vec<T> {
    let mut out = vec![T::from_f64(0.0); g.len()];
    let rows = g.chunks_exact(dim.max(1)).zip(y.chunks_exact(dim.max(1)));
    for ((g, y), o) in rows.zip(out.chunks_exact_mut(dim.max(1))) {
        let mut dot = T::from_f64(0.0);
        g.iter().zip(y).for_each(|(&g, &y)| dot += g * y);
        for ((o, &g), &y) in o.iter_mut().zip(g).zip(y) {
            *o = y * (g - dot);
        }
    }
    out
}

/// The contiguous slice a layout describes, for the CPU kernels.
fn contiguous_slice<'a, T: WithDType>(s: &'a CpuStorage, l: &Layout) -> Result<&'a [T]> {
    match l.contiguous_offsets() {
        Some((start, end)) => Ok(&s.as_slice::<T>()?[start..end]),
        None => candle_core::bail!("softmax_train: the CPU kernel needs a contiguous input"),
    }
}

/// CPU softmax over the last dim with a real backward.
struct SoftmaxLastDimTrain;

impl CustomOp1 for SoftmaxLastDimTrain {
    fn name(&self) -> &'static str {
        "softmax-last-dim-train"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let dim = l.dims().last().copied().unwrap_or(1);
        let out = match s {
            CpuStorage::F32(_) => CpuStorage::F32(softmax_rows(contiguous_slice(s, l)?, dim)),
            CpuStorage::F64(_) => CpuStorage::F64(softmax_rows(contiguous_slice(s, l)?, dim)),
            _ => candle_core::bail!("softmax_train: the CPU kernel handles f32 and f64 only"),
        };
        Ok((out, l.shape().clone()))
    }

    fn bwd(&self, _x: &Tensor, y: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
        Ok(Some(
            grad.contiguous()?.apply_op2_no_bwd(y, &SoftmaxLastDimBwd)?,
        ))
    }
}

/// CPU kernel of the softmax backward: (grad, y) -> y * (grad - sum(grad * y)).
struct SoftmaxLastDimBwd;

impl CustomOp2 for SoftmaxLastDimBwd {
    fn name(&self) -> &'static str {
        "softmax-last-dim-bwd"
    }

    fn cpu_fwd(
        &self,
        g: &CpuStorage,
        lg: &Layout,
        y: &CpuStorage,
        ly: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let dim = lg.dims().last().copied().unwrap_or(1);
        let out = match (g, y) {
            (CpuStorage::F32(_), CpuStorage::F32(_)) => CpuStorage::F32(softmax_bwd_rows(
                contiguous_slice(g, lg)?,
                contiguous_slice(y, ly)?,
                dim,
            )),
            (CpuStorage::F64(_), CpuStorage::F64(_)) => CpuStorage::F64(softmax_bwd_rows(
                contiguous_slice(g, lg)?,
                contiguous_slice(y, ly)?,
                dim,
            )),
            _ => candle_core::bail!("softmax_train backward: f32 or f64 of one dtype expected"),
        };
        Ok((out, lg.shape().clone()))
    }
}

/// Custom op computing `x @ w^T` for x [m, k] and w [n, k] with the backend's matmul; its backward
/// returns the gradient for x only.
struct FrozenMatmul;

/// What a backend matmul needs: (batch, m, n, k), the layout of w^T and the output shape.
type MatmulPlan = ((usize, usize, usize, usize), Layout, Shape);

impl FrozenMatmul {
    /// (batch, m, n, k) and the layout of w^T, checked against the two input layouts.
    fn plan(l1: &Layout, l2: &Layout) -> Result<MatmulPlan> {
        let (m, k) = l1.shape().dims2()?;
        let (n, k2) = l2.shape().dims2()?;
        if k != k2 {
            candle_core::bail!("frozen_matmul: x [{m}, {k}] and w [{n}, {k2}] disagree on in-dim")
        }
        Ok(((1, m, n, k), l2.transpose(0, 1)?, Shape::from((m, n))))
    }
}

impl CustomOp2 for FrozenMatmul {
    fn name(&self) -> &'static str {
        "frozen-matmul"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (bmnk, l2t, shape) = Self::plan(l1, l2)?;
        Ok((s1.matmul(s2, bmnk, l1, &l2t)?, shape))
    }

    fn cuda_fwd(
        &self,
        s1: &CudaStorage,
        l1: &Layout,
        s2: &CudaStorage,
        l2: &Layout,
    ) -> Result<(CudaStorage, Shape)> {
        let (bmnk, l2t, shape) = Self::plan(l1, l2)?;
        Ok((s1.matmul(s2, bmnk, l1, &l2t)?, shape))
    }

    fn bwd(
        &self,
        _x: &Tensor,
        w: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        // d(x W^T)/dx applied to grad: grad [m, n] @ W [n, k]. No gradient for W.
        Ok((Some(grad.contiguous()?.matmul(w)?), None))
    }
}

/// x @ w^T where w is frozen: backward returns the gradient for x only and never computes or
/// stores a gradient for w. x: [..., in], w: [out, in] -> [..., out].
pub fn frozen_matmul(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    let (out_dim, in_dim) = w.dims2()?;
    let dims = x.dims();
    if dims.is_empty() || dims[dims.len() - 1] != in_dim {
        candle_core::bail!(
            "frozen_matmul: x {:?} does not end in the in-dim {in_dim} of w {:?}",
            x.shape(),
            w.shape()
        )
    }
    let mut out_dims = dims.to_vec();
    let last = out_dims.len() - 1;
    out_dims[last] = out_dim;
    let m = x.elem_count() / in_dim;
    let x2 = x.contiguous()?.reshape((m, in_dim))?;
    // Detached so that autograd never walks into w (even when it happens to be a Var).
    let w = w.contiguous()?.detach();
    x2.apply_op2(&w, FrozenMatmul)?.reshape(out_dims)
}

/// Embedding lookup whose backward produces no gradient for the (frozen) table.
///
/// ids: any shape of u32/i64 token ids; table: [vocab, hidden] -> [ids..., hidden]. The table is
/// detached, so the lookup is a leaf of the graph: nothing flows into the table.
pub fn frozen_embedding(ids: &Tensor, table: &Tensor) -> Result<Tensor> {
    let (_vocab, hidden) = table.dims2()?;
    let mut out_dims = ids.dims().to_vec();
    out_dims.push(hidden);
    let flat = ids.flatten_all()?.contiguous()?;
    table.detach().index_select(&flat, 0)?.reshape(out_dims)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Var};
    use rand::{Rng, SeedableRng};

    /// Deterministic test data in [-1, 1) (candle's own RNG is not seedable on CPU).
    fn seeded(dims: &[usize], seed: u64) -> Result<Tensor> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let n: usize = dims.iter().product();
        let v: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        Tensor::from_vec(v, dims, &Device::Cpu)
    }

    fn max_abs_diff(a: &Tensor, b: &Tensor) -> Result<f32> {
        (a - b)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()
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
    fn rope_hand_computed_both_layouts() -> Result<()> {
        // d = 4: pair 0 turns by 90 degrees (cos 0, sin 1), pair 1 by 0 (cos 1, sin 0).
        // Interleaved pairs (x0, x1), (x2, x3) of x = [1, 0, 0, 1]:
        //   (1, 0) -> (1*0 - 0*1, 1*1 + 0*0) = (0, 1); (0, 1) -> (0, 1)  => [0, 1, 0, 1].
        // Half-split pairs (x0, x2), (x1, x3): (1, 0) -> (0, 1); (0, 1) -> (0, 1) => [0, 0, 1, 1].
        let dev = Device::Cpu;
        let x = Tensor::new(&[1f32, 0., 0., 1.], &dev)?.reshape((1, 1, 1, 4))?;
        let cos = Tensor::new(&[[0f32, 1.]], &dev)?;
        let sin = Tensor::new(&[[1f32, 0.]], &dev)?;
        let inter = rope_train(&x, &cos, &sin, true)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        let halves = rope_train(&x, &cos, &sin, false)?
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
        assert!(max_abs_diff(&fused_i, &rope_train(&x, &cos, &sin, true)?)? < 1e-6);
        assert!(max_abs_diff(&fused_h, &rope_train(&x, &cos, &sin, false)?)? < 1e-6);
        // The two layouts really differ, so the flag matters.
        assert!(max_abs_diff(&fused_i, &fused_h)? > 1e-2);
        Ok(())
    }

    #[test]
    fn rope_rejects_unnarrowed_table() -> Result<()> {
        let x = seeded(&[1, 1, 3, 8], 5)?;
        let table = seeded(&[10, 4], 6)?;
        assert!(rope_train(&x, &table, &table, true).is_err());
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
            frozen_matmul(&x, &w)?.to_vec2::<f32>()?,
            vec![vec![1., 2., 3.]]
        );
        let x = seeded(&[2, 5, 16], 8)?;
        let w = seeded(&[12, 16], 9)?;
        let plain = x.broadcast_matmul(&w.t()?)?;
        let frozen = frozen_matmul(&x, &w)?;
        assert_eq!(frozen.dims(), &[2, 5, 12]);
        assert!(max_abs_diff(&plain, &frozen)? < 1e-5);
        Ok(())
    }

    #[test]
    fn frozen_matmul_gives_no_weight_gradient() -> Result<()> {
        let x = Var::from_tensor(&seeded(&[3, 4], 10)?)?;
        let w = Var::from_tensor(&seeded(&[5, 4], 11)?)?;
        let grads = frozen_matmul(&x, &w)?.sum_all()?.backward()?;
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
}
