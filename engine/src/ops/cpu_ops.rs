//! CPU kernels with real backward for the training ops: RMSNorm, rotary embedding and softmax.
//!
//! Each is a candle custom op whose forward and backward are plain loops over contiguous rows, so a
//! training forward keeps only the op's input and output alive (the compositions of candle ops keep
//! every intermediate) and does one pass per direction. `super` uses them on CPU for f32/f64 and
//! falls back to the compositions elsewhere (CUDA, half precision).

use std::sync::Arc;

use candle_core::{CpuStorage, CustomOp1, CustomOp2, CustomOp3, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

use crate::kernels::cpu::{
    contiguous_slice, par_rows, softmax_in_place, HeadRows, KernelFloat, MIN_ROWS,
};
use crate::kernels::rms_rows;
use crate::kernels::rows::LaneFloat;

/// CPU RMSNorm kernel over rows of length d. With r = (mean(x^2) + eps)^(-1/2) and
/// dot = sum_j w_j g_j x_j per row, the backward is dx_k = r (w_k g_k - x_k r^2 dot / d) and
/// dw_j = sum over rows of g_j x_j r.
#[derive(Clone, Copy)]
pub(super) struct RmsNormCpu {
    pub(super) eps: f64,
}

/// Which RMSNorm kernel a `RmsNormCpu` storage call runs.
#[derive(Clone, Copy)]
enum RmsPart {
    /// (x, w) -> y.
    Forward,
    /// (g, x, w) -> dx.
    InputGrad,
    /// (g, x) -> dw [d].
    WeightGrad,
}

impl RmsNormCpu {
    /// Runs one kernel; `g` is empty for the forward, `w` for the weight gradient. The forward
    /// and the input gradient run rows in parallel (`kernels/rms_rows.rs`).
    fn run<T: LaneFloat>(&self, part: RmsPart, g: &[T], x: &[T], w: &[T], d: usize) -> Vec<T> {
        let d = d.max(1);
        match part {
            RmsPart::Forward => par_rows(x.len(), d, |r, out| {
                rms_rows::forward_row(&x[r * d..][..d], w, out, self.eps)
            }),
            RmsPart::InputGrad => par_rows(x.len(), d, |r, out| {
                let (g, x) = (&g[r * d..][..d], &x[r * d..][..d]);
                rms_rows::input_grad_row(g, x, w, out, self.eps)
            }),
            RmsPart::WeightGrad => {
                let mut dw = vec![0f64; d];
                for (row, g) in x.chunks_exact(d).zip(g.chunks_exact(d)) {
                    let inv = rms_rows::inv_rms(row, self.eps);
                    for j in 0..d {
                        dw[j] += g[j].to_f64_k() * row[j].to_f64_k() * inv;
                    }
                }
                dw.into_iter().map(T::from_f64_k).collect()
            }
        }
    }

    /// Dispatches on dtype; `g` and `w` may be absent for the parts that do not use them.
    fn storage(
        &self,
        part: RmsPart,
        g: Option<(&CpuStorage, &Layout)>,
        x: (&CpuStorage, &Layout),
        w: Option<(&CpuStorage, &Layout)>,
    ) -> Result<CpuStorage> {
        let d = x.1.dims().last().copied().unwrap_or(1);
        macro_rules! go {
            ($t:ty, $variant:ident) => {{
                let empty: &[$t] = &[];
                let g = match g {
                    Some((s, l)) => contiguous_slice::<$t>(s, l)?,
                    None => empty,
                };
                let w = match w {
                    Some((s, l)) => contiguous_slice::<$t>(s, l)?,
                    None => empty,
                };
                CpuStorage::$variant(self.run(part, g, contiguous_slice::<$t>(x.0, x.1)?, w, d))
            }};
        }
        Ok(match x.0 {
            CpuStorage::F32(_) => go!(f32, F32),
            CpuStorage::F64(_) => go!(f64, F64),
            _ => candle_core::bail!("rms_norm_train: the CPU kernel handles f32 and f64 only"),
        })
    }
}

impl CustomOp2 for RmsNormCpu {
    fn name(&self) -> &'static str {
        "rms-norm-train"
    }

    fn cpu_fwd(
        &self,
        xs: &CpuStorage,
        xl: &Layout,
        ws: &CpuStorage,
        wl: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let out = self.storage(RmsPart::Forward, None, (xs, xl), Some((ws, wl)))?;
        Ok((out, xl.shape().clone()))
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        _y: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let grad = grad.contiguous()?;
        let dx = grad.apply_op3_no_bwd(
            x,
            w,
            &RmsNormBwd {
                op: *self,
                part: RmsPart::InputGrad,
            },
        )?;
        // A frozen norm weight gets no gradient (candle would store whatever is returned).
        let dw = if w.track_op() {
            Some(grad.apply_op2_no_bwd(
                x,
                &RmsNormBwd {
                    op: *self,
                    part: RmsPart::WeightGrad,
                },
            )?)
        } else {
            None
        };
        Ok((Some(dx), dw))
    }
}

/// The backward kernels of `RmsNormCpu` as storage-level ops.
struct RmsNormBwd {
    op: RmsNormCpu,
    part: RmsPart,
}

impl CustomOp2 for RmsNormBwd {
    fn name(&self) -> &'static str {
        "rms-norm-train-dw"
    }

    fn cpu_fwd(
        &self,
        gs: &CpuStorage,
        gl: &Layout,
        xs: &CpuStorage,
        xl: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let d = xl.dims().last().copied().unwrap_or(1);
        Ok((
            self.op.storage(self.part, Some((gs, gl)), (xs, xl), None)?,
            Shape::from(d),
        ))
    }
}

impl CustomOp3 for RmsNormBwd {
    fn name(&self) -> &'static str {
        "rms-norm-train-dx"
    }

    fn cpu_fwd(
        &self,
        gs: &CpuStorage,
        gl: &Layout,
        xs: &CpuStorage,
        xl: &Layout,
        ws: &CpuStorage,
        wl: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let out = self
            .op
            .storage(self.part, Some((gs, gl)), (xs, xl), Some((ws, wl)))?;
        Ok((out, xl.shape().clone()))
    }
}

/// CPU rope kernel times a constant: y = s R x. Its backward is the same kernel rotating the
/// other way: dx = R^T (s dy), with R^T = R(-angle).
#[derive(Clone)]
pub(super) struct RopeCpu {
    /// [seq, head_dim/2] tables, row-major.
    pub(super) cos: Arc<[f64]>,
    pub(super) sin: Arc<[f64]>,
    /// Pairs (2i, 2i+1) when true, (i, i + d/2) when false.
    pub(super) interleaved: bool,
    /// The factor s: multiplies each rotated element (forward), or each input element before
    /// the rotation (backward), the order in which rope followed by `x * s` rounds.
    pub(super) scale: f64,
    /// Rotate by -angle (the backward pass).
    pub(super) inverse: bool,
}

impl RopeCpu {
    /// Rotates every pair of every [head_dim] row of a [b, h, t, d] input (rows in parallel) whose
    /// row r (in [b, h, t] order) starts at `x[offset(r)]`; the output is contiguous.
    fn rotate<T: KernelFloat>(
        &self,
        x: &[T],
        offset: impl Fn(usize) -> usize + Sync,
        len: usize,
        t: usize,
        d: usize,
    ) -> Vec<T> {
        let half = d / 2;
        let sign = if self.inverse { -1.0 } else { 1.0 };
        let scale = T::from_f64_k(self.scale);
        // A factor of 1 is exact either side, so plain rope keeps its bits.
        let (before, after) = if self.inverse {
            (scale, T::from_f64_k(1.0))
        } else {
            (T::from_f64_k(1.0), scale)
        };
        par_rows(len, d, |r, o| {
            let row = &x[offset(r)..offset(r) + d];
            let pos = r % t.max(1);
            for i in 0..half {
                let c = T::from_f64_k(self.cos[pos * half + i]);
                let s = T::from_f64_k(sign * self.sin[pos * half + i]);
                let (i0, i1) = if self.interleaved {
                    (2 * i, 2 * i + 1)
                } else {
                    (i, i + half)
                };
                let (x0, x1) = (row[i0] * before, row[i1] * before);
                o[i0].write((x0 * c - x1 * s) * after);
                o[i1].write((x0 * s + x1 * c) * after);
            }
        })
    }
}

impl CustomOp1 for RopeCpu {
    fn name(&self) -> &'static str {
        "rope-train"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let (_b, _h, t, d) = l.shape().dims4()?;
        if self.cos.len() != t * (d / 2) || self.sin.len() != self.cos.len() {
            candle_core::bail!("rope_train: cos/sin tables do not match [{t}, {}]", d / 2)
        }
        // Any layout whose rows are contiguous: the heads view of a projection's [b, t, h, d]
        // output is read in place rather than copied first.
        let rows = HeadRows::of(l, "rope_train")?;
        let offset = |r: usize| rows.offset(r / t.max(1), r % t.max(1));
        let len = l.shape().elem_count();
        let out = match s {
            CpuStorage::F32(x) => CpuStorage::F32(self.rotate(x, offset, len, t, d)),
            CpuStorage::F64(x) => CpuStorage::F64(self.rotate(x, offset, len, t, d)),
            _ => candle_core::bail!("rope_train: the CPU kernel handles f32 and f64 only"),
        };
        Ok((out, l.shape().clone()))
    }

    fn bwd(&self, _x: &Tensor, _y: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
        let inverse = RopeCpu {
            inverse: !self.inverse,
            ..self.clone()
        };
        Ok(Some(grad.contiguous()?.apply_op1_no_bwd(&inverse)?))
    }
}

/// Row-wise softmax of contiguous rows of length `dim` (rows in parallel).
fn softmax_rows<T: KernelFloat>(x: &[T], dim: usize) -> Vec<T> {
    let mut out = x.to_vec();
    out.par_chunks_exact_mut(dim.max(1))
        .with_min_len(MIN_ROWS)
        .for_each(|row| softmax_in_place(row));
    out
}

/// Row-wise softmax backward: dx = y * (g - sum(g * y)) (rows in parallel).
fn softmax_bwd_rows<T: KernelFloat>(g: &[T], y: &[T], dim: usize) -> Vec<T> {
    let dim = dim.max(1);
    par_rows(g.len(), dim, |r, o| {
        let (g, y) = (&g[r * dim..(r + 1) * dim], &y[r * dim..(r + 1) * dim]);
        let mut dot = T::from_f64(0.0);
        g.iter().zip(y).for_each(|(&g, &y)| dot += g * y);
        for ((o, &g), &y) in o.iter_mut().zip(g).zip(y) {
            o.write(y * (g - dot));
        }
    })
}

/// CPU softmax over the last dim with a real backward.
pub(super) struct SoftmaxLastDimTrain;

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
pub(super) struct SoftmaxLastDimBwd;

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
