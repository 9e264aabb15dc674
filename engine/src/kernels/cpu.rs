//! What every CPU kernel shares: the float types they run on, rows filled in parallel, a row's
//! softmax, and where the rows of a strided layout lie.

use std::mem::MaybeUninit;

use candle_core::{CpuStorage, Layout, Result, WithDType};
use rayon::prelude::*;

/// Rows per rayon task: enough work per task that scheduling stays negligible.
pub(crate) const MIN_ROWS: usize = 16;

/// A vector of `len` values made row by row in parallel: `fill(r, out)` writes every element of
/// row `r` (length `dim`; a last row may be shorter when `dim` does not divide `len`). Rows are
/// independent, so the result does not depend on the thread count; the output is never zeroed
/// first.
pub(crate) fn par_rows<T: Copy + Send + Sync>(
    len: usize,
    dim: usize,
    fill: impl Fn(usize, &mut [MaybeUninit<T>]) + Send + Sync,
) -> Vec<T> {
    let mut out = Vec::with_capacity(len);
    out.spare_capacity_mut()[..len]
        .par_chunks_mut(dim.max(1))
        .with_min_len(MIN_ROWS)
        .enumerate()
        .for_each(|(r, row)| fill(r, row));
    // SAFETY: `fill` wrote every element of every row, and the rows cover [0, len); T is a plain
    // float.
    unsafe { out.set_len(len) };
    out
}

/// Float types of the CPU kernels, with conversions that inline (candle's `WithDType` ones are
/// calls per element, visible in a training step's profile: results/perf/step.md, "Large blocks
/// kept for reuse, and backward without zeros").
pub(crate) trait KernelFloat: WithDType + std::ops::Neg<Output = Self> {
    fn exp_k(self) -> Self;
    fn to_f64_k(self) -> f64;
    fn from_f64_k(v: f64) -> Self;
}

impl KernelFloat for f32 {
    #[inline(always)]
    fn exp_k(self) -> Self {
        self.exp()
    }
    #[inline(always)]
    fn to_f64_k(self) -> f64 {
        f64::from(self)
    }
    #[inline(always)]
    fn from_f64_k(v: f64) -> Self {
        v as f32
    }
}

impl KernelFloat for f64 {
    #[inline(always)]
    fn exp_k(self) -> Self {
        self.exp()
    }
    #[inline(always)]
    fn to_f64_k(self) -> f64 {
        self
    }
    #[inline(always)]
    fn from_f64_k(v: f64) -> Self {
        v
    }
}

/// Softmax of one row, in place: exp(v - max) / sum.
pub(crate) fn softmax_in_place<T: KernelFloat>(row: &mut [T]) {
    let max = row.iter().fold(row[0], |m, &v| if v > m { v } else { m });
    let mut sum = T::from_f64(0.0);
    for v in row.iter_mut() {
        *v = (*v - max).exp_k();
        sum += *v;
    }
    row.iter_mut().for_each(|v| *v /= sum);
}

/// Where the rows of d contiguous values of a [b, g, rows, d] layout lie in its storage: row i of
/// group `grp` (in b * g order) starts at `start + (grp / g) * sb + (grp % g) * sg + i * rs`. The
/// CPU kernels read such views (the heads of a projection's output) in place.
#[derive(Clone, Copy)]
pub(crate) struct HeadRows {
    start: usize,
    g: usize,
    sb: usize,
    sg: usize,
    /// The stride between rows.
    pub(crate) rs: usize,
}

impl HeadRows {
    /// The rows of a [b, g, rows, d] layout whose last stride is 1; `op` names the caller in the
    /// error.
    pub(crate) fn of(l: &Layout, op: &str) -> Result<Self> {
        let (dims, st) = (l.dims(), l.stride());
        if dims.len() != 4 || st[3] != 1 {
            candle_core::bail!("{op}: rows of head_dim contiguous values expected")
        }
        Ok(HeadRows {
            start: l.start_offset(),
            g: dims[1].max(1),
            sb: st[0],
            sg: st[1],
            rs: st[2],
        })
    }

    /// The offset of row `i` of group `grp`.
    pub(crate) fn offset(&self, grp: usize, i: usize) -> usize {
        self.start + grp / self.g * self.sb + grp % self.g * self.sg + i * self.rs
    }
}

/// The contiguous slice a layout describes, for the CPU kernels.
pub(crate) fn contiguous_slice<'a, T: WithDType>(s: &'a CpuStorage, l: &Layout) -> Result<&'a [T]> {
    match l.contiguous_offsets() {
        Some((start, end)) => Ok(&s.as_slice::<T>()?[start..end]),
        None => candle_core::bail!("ops: the CPU kernels need a contiguous input"),
    }
}
