//! The SwiGLU product silu(gate) * up (Shazeer 2020, eq. 6) as one CPU op with a one-pass backward.
//!
//! Composed from candle ops, autograd keeps silu(gate) alive besides gate and up, and candle's silu
//! backward is a chain of seven elementwise ops (neg, exp, +1, recip, 1 - y, *, +) plus the
//! product's two, each a fresh [tokens, intermediate] tensor. Here the forward is one pass that
//! keeps only gate and up, and the backward one pass: with s = sigmoid(g) and y = silu(g) = g s,
//! d silu / dg = s (1 - y) + y, so dgate = (grad * up) (s (1 - y) + y) and dup = grad * y. Both
//! passes do candle's CPU operations in candle's order (y = g / (1 + exp(-g)), the same sigmoid and
//! derivative) but for exp, which is `rows::exp_f32` (within 2 ulp of libm's) so that the loops
//! vectorize: values and gradients equal the composition's within 1e-6 relative (tested).

use std::mem::MaybeUninit;

use candle_core::op::BackpropOp;
use candle_core::{CpuStorage, CustomOp2, Layout, Result, Shape, Storage, Tensor};
use rayon::prelude::*;

use crate::kernels::cpu::{contiguous_slice, par_rows, MIN_ROWS};
use crate::kernels::rows::{dispatch, LaneFloat};

/// Elements per chunk; a parallel task takes at least `MIN_ROWS` chunks (8,192 elements).
const CHUNK: usize = 512;

/// silu(gate) * up for gate and up of one shape (f32 or f64, CPU).
pub(super) struct SwiGlu;

/// Two vectors of `n` values made in parallel chunks: `fill(start, a, b)` writes every element of
/// the chunks `a` and `b`, which hold elements `start..start + a.len()` of each.
fn par_fill2<T: Copy + Send + Sync>(
    n: usize,
    fill: impl Fn(usize, &mut [MaybeUninit<T>], &mut [MaybeUninit<T>]) + Send + Sync,
) -> (Vec<T>, Vec<T>) {
    let (mut a, mut b) = (Vec::with_capacity(n), Vec::with_capacity(n));
    a.spare_capacity_mut()[..n]
        .par_chunks_mut(CHUNK)
        .zip(b.spare_capacity_mut()[..n].par_chunks_mut(CHUNK))
        .with_min_len(MIN_ROWS)
        .enumerate()
        .for_each(|(c, (a, b))| fill(c * CHUNK, a, b));
    // SAFETY: `fill` wrote every element of both, chunk by chunk; T is a plain float.
    unsafe {
        a.set_len(n);
        b.set_len(n);
    }
    (a, b)
}

#[inline(always)]
fn forward_body<T: LaneFloat>(g: &[T], u: &[T], out: &mut [MaybeUninit<T>]) {
    let one = T::from_f64_k(1.0);
    for ((o, &g), &u) in out.iter_mut().zip(g).zip(u) {
        o.write(g / (one + (-g).exp_lane()) * u);
    }
}

dispatch!(
    /// silu(g) u of one chunk into `out` (g, u and out of one length).
    forward_chunk<T: LaneFloat> = forward_body(g: &[T], u: &[T], out: &mut [MaybeUninit<T>])
);

fn forward<T: LaneFloat>(g: &[T], u: &[T]) -> Vec<T> {
    par_rows(g.len(), CHUNK, |c, out| {
        let r = c * CHUNK..c * CHUNK + out.len();
        forward_chunk(&g[r.clone()], &u[r], out)
    })
}

#[inline(always)]
fn backward_body<T: LaneFloat>(
    g: &[T],
    u: &[T],
    grad: &[T],
    dg: &mut [MaybeUninit<T>],
    du: &mut [MaybeUninit<T>],
) {
    let one = T::from_f64_k(1.0);
    let ins = g.iter().zip(u).zip(grad);
    for ((dg, du), ((&g, &u), &gr)) in dg.iter_mut().zip(du.iter_mut()).zip(ins) {
        // candle's silu backward after the product's, in its order.
        let e = (-g).exp_lane();
        let silu = g / (one + e);
        let s = one / (e + one);
        dg.write((gr * u) * (s * (one - silu) + silu));
        du.write(gr * silu);
    }
}

dispatch!(
    /// (dgate, dup) of one chunk into `dg` and `du` (all five of one length).
    backward_chunk<T: LaneFloat> = backward_body(
        g: &[T],
        u: &[T],
        grad: &[T],
        dg: &mut [MaybeUninit<T>],
        du: &mut [MaybeUninit<T>]
    )
);

/// (dgate, dup) from gate, up and the output gradient.
fn backward<T: LaneFloat>(g: &[T], u: &[T], grad: &[T]) -> (Vec<T>, Vec<T>) {
    par_fill2(g.len(), |start, dg, du| {
        let r = start..start + dg.len();
        backward_chunk(&g[r.clone()], &u[r.clone()], &grad[r], dg, du)
    })
}

/// `backward` on storages of one float type (`contiguous_slice` refuses another), wrapped back.
fn grads<T: LaneFloat>(
    g: (&CpuStorage, &Layout),
    u: (&CpuStorage, &Layout),
    r: (&CpuStorage, &Layout),
    wrap: fn(Vec<T>) -> CpuStorage,
) -> Result<(CpuStorage, CpuStorage)> {
    let (dg, du) = backward::<T>(
        contiguous_slice(g.0, g.1)?,
        contiguous_slice(u.0, u.1)?,
        contiguous_slice(r.0, r.1)?,
    );
    Ok((wrap(dg), wrap(du)))
}

impl CustomOp2 for SwiGlu {
    fn name(&self) -> &'static str {
        "swiglu-train"
    }

    fn cpu_fwd(
        &self,
        gs: &CpuStorage,
        gl: &Layout,
        us: &CpuStorage,
        ul: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        if gl.shape() != ul.shape() {
            candle_core::bail!("swiglu: gate {:?} and up {:?} differ", gl.dims(), ul.dims())
        }
        let out = match (gs, us) {
            (CpuStorage::F32(_), CpuStorage::F32(_)) => CpuStorage::F32(forward(
                contiguous_slice(gs, gl)?,
                contiguous_slice(us, ul)?,
            )),
            (CpuStorage::F64(_), CpuStorage::F64(_)) => CpuStorage::F64(forward(
                contiguous_slice(gs, gl)?,
                contiguous_slice(us, ul)?,
            )),
            _ => candle_core::bail!("swiglu: the CPU op handles f32 or f64 of one dtype only"),
        };
        Ok((out, gl.shape().clone()))
    }

    fn bwd(
        &self,
        gate: &Tensor,
        up: &Tensor,
        _out: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let (gate, up, grad) = (gate.contiguous()?, up.contiguous()?, grad.contiguous()?);
        let (gs, gl) = gate.storage_and_layout();
        let (us, ul) = up.storage_and_layout();
        let (rs, rl) = grad.storage_and_layout();
        let (Storage::Cpu(gs), Storage::Cpu(us), Storage::Cpu(rs)) = (&*gs, &*us, &*rs) else {
            candle_core::bail!("swiglu backward: the CPU op got a tensor on another device")
        };
        let (dg, du) = match gs {
            CpuStorage::F32(_) => grads::<f32>((gs, gl), (us, ul), (rs, rl), CpuStorage::F32)?,
            CpuStorage::F64(_) => grads::<f64>((gs, gl), (us, ul), (rs, rl), CpuStorage::F64)?,
            _ => candle_core::bail!("swiglu backward: f32 or f64 expected"),
        };
        let tensor = |s| {
            Tensor::from_storage(
                Storage::Cpu(s),
                gl.shape().clone(),
                BackpropOp::none(),
                false,
            )
        };
        Ok((Some(tensor(dg)), Some(tensor(du))))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{read_written as read, test_rows, uninit};
    use super::*;

    /// The AVX-512, AVX2 and plain builds give the same bits (the plain body called directly),
    /// over a chunk with a remainder past the vector widths.
    #[test]
    fn every_build_gives_the_same_bits() {
        let n = 531;
        let [g, u, r] = test_rows(n);
        let (mut a, mut b) = (uninit(n), uninit(n));
        forward_chunk(&g, &u, &mut a);
        forward_body(&g, &u, &mut b);
        assert_eq!(read(a), read(b));
        let (mut dg1, mut du1, mut dg2, mut du2) = (uninit(n), uninit(n), uninit(n), uninit(n));
        backward_chunk(&g, &u, &r, &mut dg1, &mut du1);
        backward_body(&g, &u, &r, &mut dg2, &mut du2);
        assert_eq!(read(dg1), read(dg2));
        assert_eq!(read(du1), read(du2));
    }
}
