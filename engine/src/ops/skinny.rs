//! x @ w^T for the few rows of a decode step against a frozen weight, as one CPU op that streams
//! the weight once: decoding's projections and vocabulary head, and a turn's prefill (`max_rows`).
//!
//! A decode step multiplies b rows (the batch) by every weight of the model, 537 MB in
//! f32 for SmolLM2-135M. candle's matmul hands these products to gemm, which tiles the rows six
//! at a time (8 rows run as a 6-row and a 2-row tile, each reading the weights): at 8 rows its
//! kernels took most of a decode step, far more than reading the weights once takes
//! (results/perf/step.md, "Decoding's projections as one op"). Here each rayon task takes a band
//! of the weight and keeps a register tile of outputs (`kernels/skinny_simd/`, AVX-512 or AVX2) over
//! the whole shared dimension, so the weight is read once with x in L1:
//! - a column-major w (how `LoraLinear` stores projections on the CPU: w^T [k, n] contiguous):
//!   tiles of up to 8 rows by 48 columns (96 for one or two rows; AVX2: 4 rows by 24, 32 at one
//!   or two), one fused multiply-add per shared index, in order;
//! - a row-major w (the vocabulary head, the tied embedding): blocks of 4 rows by 4 weight rows
//!   (AVX2: 2 by 2), dot products in 16 lanes then reduced in one tree.
//!
//! Each output is one fixed sequence of operations whatever the thread count and whatever the
//! other rows of x, so a row decodes the same bits alone or in a batch. Values equal gemm's up to
//! summation order (tests pin 1e-5 relative).

use candle_core::{CpuStorage, CustomOp2, DType, Layout, Result, Shape, Tensor};

use crate::kernels::cpu::contiguous_slice;
use crate::kernels::skinny_simd::{Kernels, Weight};
use rayon::prelude::*;

/// The op's name in errors.
const OP: &str = "skinny_matmul";

/// Rows of x this op is chosen for, by w's layout. Column-major (the projections): up to 96, a
/// decode batch or a dialogue's prefill of a turn; the op outran gemm at 32-96 rows and was
/// level at 128 (results/perf/step.md, "Prefills of up to 96 rows as one op"). Row-major (the
/// vocabulary head, LoRA's factors): up to 32, a decode batch.
pub(super) fn max_rows(layout: Weight) -> usize {
    match layout {
        Weight::Columns => 96,
        Weight::Rows => 32,
    }
}

/// x [m, k] @ w^T for w [n, k] row- or column-major, in f32 on a CPU with AVX-512 or AVX2
/// (`applies`); output [m, n].
pub(super) struct SkinnyMatmul;

/// Whether this CPU runs the op's kernels: AVX-512, or AVX2 with FMA.
pub(super) fn available() -> bool {
    Kernels::here().is_some()
}

/// Whether the op computes x @ w^T: x of 1 to `max_rows` rows, x and w in f32 on the CPU, w row-
/// or column-major, and a CPU with AVX-512 or AVX2.
pub(super) fn applies(x: &Tensor, w: &Tensor) -> Result<bool> {
    let rows = x.dims2().map(|(m, _)| m).unwrap_or(0);
    let Some(layout) = Weight::of(w.layout())? else {
        return Ok(false);
    };
    Ok(x.device().is_cpu()
        && x.dtype() == DType::F32
        && w.dtype() == DType::F32
        && (1..=max_rows(layout)).contains(&rows)
        && available())
}

impl CustomOp2 for SkinnyMatmul {
    fn name(&self) -> &'static str {
        OP
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (m, k) = l1.shape().dims2()?;
        let (n, k2) = l2.shape().dims2()?;
        if k != k2 {
            candle_core::bail!("{OP}: x [{m}, {k}] and w [{n}, {k2}] disagree on the shared dim")
        }
        let Some(kernels) = Kernels::here() else {
            candle_core::bail!("{OP}: this CPU lacks AVX-512 and AVX2 (callers check `available`)")
        };
        let x = contiguous_slice::<f32>(s1, l1)?;
        let Some(layout) = Weight::of(l2)? else {
            candle_core::bail!("{OP}: w is neither row- nor column-major")
        };
        let w = match layout {
            Weight::Rows => contiguous_slice::<f32>(s2, l2)?,
            Weight::Columns => contiguous_slice(s2, &l2.transpose(0, 1)?)?,
        };
        Ok((
            CpuStorage::F32(bands(kernels, x, w, layout, (m, n, k))),
            Shape::from((m, n)),
        ))
    }
}

impl Weight {
    /// How a 2-D layout of w [n, k] lies in its storage; `None`: neither way contiguous.
    fn of(l: &Layout) -> Result<Option<Self>> {
        Ok(match l.is_contiguous() {
            true => Some(Weight::Rows),
            false if l.transpose(0, 1)?.is_contiguous() => Some(Weight::Columns),
            false => None,
        })
    }
}

/// x [m, k] @ w^T in bands of w's n outputs, about 4 per thread, each a rayon task that writes
/// [m, band] and is then copied into the [m, n] result.
pub(super) fn bands(
    kernels: Kernels,
    x: &[f32],
    w: &[f32],
    layout: Weight,
    (m, n, k): (usize, usize, usize),
) -> Vec<f32> {
    let mut y = vec![0f32; m * n];
    if m == 0 || n == 0 || k == 0 {
        return y;
    }
    let tile = kernels.tile(layout, m);
    let band = n
        .div_ceil(4 * rayon::current_num_threads())
        .next_multiple_of(tile);
    let parts: Vec<Vec<f32>> = (0..n.div_ceil(band))
        .into_par_iter()
        .map(|c| {
            let (j0, width) = (c * band, band.min(n - c * band));
            let mut out = vec![0f32; m * width];
            match layout {
                Weight::Rows => kernels.band_rows(x, &w[j0 * k..][..width * k], m, k, &mut out),
                Weight::Columns => kernels.band_columns(x, &w[j0..], (m, n, k), &mut out),
            }
            out
        })
        .collect();
    for (c, part) in parts.iter().enumerate() {
        let (j0, width) = (c * band, part.len() / m);
        for (row, part) in y.chunks_exact_mut(n).zip(part.chunks_exact(width)) {
            row[j0..j0 + width].copy_from_slice(part);
        }
    }
    y
}
