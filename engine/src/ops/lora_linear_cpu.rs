//! A LoRA projection's two large products on the CPU in f32, each with the adapter's rank-r term
//! accumulated into it: the forward's x W^T (+ b) + hs B^T and the backward's g W + dh A.
//!
//! Through candle, each is a product, a second product of inner dimension r, and their sum: three
//! [rows, out] (or [rows, in]) buffers, each first filled with zeros, and two passes more over
//! them, where the arithmetic of the r-wide product is small (r = 16 against 576-1536). Here gemm
//! writes the first product into a fresh buffer and adds the second into it in place. gemm adds
//! with one fused multiply-add by 1, which rounds as the separate add does, so the results equal
//! the composition's bit for bit (`lora_linear_tests.rs`).

use candle_core::{CpuStorage, Device, Layout, Result, Tensor};

use super::bf16_weight::Bf16Weight;
use crate::kernels::view::{gemm_into_par, gemm_new, View};

const OP: &str = "lora_linear_train";

/// The forward on f32 storages (x [rows, in], A [r, in], B [out, r] contiguous; W [out, in] in
/// either order, b [out] contiguous): x W^T (+ b) + hs B^T with hs = scale (x A^T), computed as
/// the composition computes hs. With `bf16`, x W^T is its bf16 product.
pub(super) fn forward(
    (x, xl): (&[f32], &Layout),
    (w, wl, bf16): (&[f32], &Layout, Option<&Bf16Weight>),
    bias: Option<&[f32]>,
    hs: &[f32],
    b: &[f32],
    (m, k, r, n): (usize, usize, usize, usize),
) -> Result<CpuStorage> {
    let x = View::of(x, xl, OP)?;
    let w = View::of(w, wl, OP)?;
    let mut y = match bf16 {
        Some(p) => p.x_wt(x, m),
        None => gemm_new((x, w.t()), (m, n, k)),
    };
    if let Some(bias) = bias {
        for row in y.chunks_mut(n) {
            row.iter_mut().zip(bias).for_each(|(v, b)| *v += b);
        }
    }
    let bt = View::rows(b, 0, r).t();
    gemm_into_par(&mut y, n, true, (View::rows(hs, 0, r), bt), (m, n, r));
    Ok(CpuStorage::F32(y))
}

/// dx = g W + dh A for g [rows, out], W [out, in] (either order), dh [rows, r], A [r, in], all f32
/// on the CPU: the base's and the adapter's input gradients, summed. With `bf16`, g W is its bf16
/// product.
pub(super) fn input_grad(
    g: &Tensor,
    (w, bf16): (&Tensor, Option<&Bf16Weight>),
    dh: &Tensor,
    a: &Tensor,
) -> Result<Tensor> {
    let (m, n) = g.dims2()?;
    let (r, k) = a.dims2()?;
    if w.dims2()? != (n, k) || dh.dims2()? != (m, r) {
        candle_core::bail!(
            "{OP}: g {:?}, W {:?}, dh {:?} and A {:?} do not fit together",
            g.dims(),
            w.dims(),
            dh.dims(),
            a.dims()
        )
    }
    let (g, dh, a) = (g.contiguous()?, dh.contiguous()?, a.contiguous()?);
    let (gs, gl) = g.storage_and_layout();
    let (ws, wl) = w.storage_and_layout();
    let (hs, hl) = dh.storage_and_layout();
    let (as_, al) = a.storage_and_layout();
    let (g, w) = (View::of_cpu(&gs, gl, OP)?, View::of_cpu(&ws, wl, OP)?);
    let (dh, a) = (View::of_cpu(&hs, hl, OP)?, View::of_cpu(&as_, al, OP)?);
    let mut dx = match bf16 {
        Some(p) => p.g_w(g, m)?,
        None => gemm_new((g, w), (m, k, n)),
    };
    gemm_into_par(&mut dx, k, true, (dh, a), (m, k, r));
    Tensor::from_vec(dx, (m, k), &Device::Cpu)
}
