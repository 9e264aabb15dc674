//! A matrix inside a slice, the rows of a heads view as such matrices, gemm on them, and the keys
//! a mask row lets through: how the attention ops multiply blocks of q, k and v in place.

use candle_core::{CpuStorage, Layout, Result, Storage, WithDType};
use gemm::Parallelism;
use rayon::prelude::*;

use super::rows::LaneFloat;
use crate::kernels::cpu::HeadRows;

/// A matrix inside a slice: element (i, j) at `off + i * rs + j * cs`.
#[derive(Clone, Copy)]
pub(crate) struct View<'a, T> {
    pub(crate) data: &'a [T],
    pub(crate) off: usize,
    pub(crate) rs: usize,
    pub(crate) cs: usize,
}

/// The rows of d contiguous values of a [b, g, rows, d] tensor, read in place.
#[derive(Clone, Copy)]
pub(crate) struct Rows<'a, T> {
    data: &'a [T],
    pub(crate) at: HeadRows,
}

impl<'a, T> Rows<'a, T> {
    /// The rows of a [b, g, rows, d] layout whose last stride is 1; `op` names the caller in
    /// errors.
    pub(crate) fn of(data: &'a [T], l: &Layout, op: &str) -> Result<Self> {
        Ok(Rows {
            data,
            at: HeadRows::of(l, op)?,
        })
    }

    /// The rows of group `grp` from row `i`, as a matrix.
    pub(crate) fn at(&self, grp: usize, i: usize) -> View<'a, T> {
        View {
            data: self.data,
            off: self.at.offset(grp, i),
            rs: self.at.rs,
            cs: 1,
        }
    }
}

/// A CPU op's q, k and v, each read in place as the rows of a heads view of `T`; `op` names the
/// caller in errors.
pub(crate) fn qkv<'a, T: WithDType>(
    inputs: [(&'a CpuStorage, &Layout); 3],
    op: &str,
) -> Result<[Rows<'a, T>; 3]> {
    let [q, k, v] = inputs.map(|(s, l)| Rows::of(s.as_slice::<T>()?, l, op));
    Ok([q?, k?, v?])
}

impl<'a> View<'a, f32> {
    /// The matrix of an f32 CPU storage's 2-D layout, in place (any strides); `op` names the
    /// caller in errors.
    pub(crate) fn of_cpu(s: &'a Storage, l: &Layout, op: &str) -> Result<Self> {
        match s {
            Storage::Cpu(c) => View::of(c.as_slice::<f32>()?, l, op),
            _ => candle_core::bail!("{op}: runs on the CPU, got a tensor on another device"),
        }
    }
}

impl<'a, T> View<'a, T> {
    /// The matrix of a 2-D layout, in place (any strides); `op` names the caller in errors.
    pub(crate) fn of(data: &'a [T], l: &Layout, op: &str) -> Result<Self> {
        match *l.stride() {
            [rs, cs] => Ok(View {
                data,
                off: l.start_offset(),
                rs,
                cs,
            }),
            _ => candle_core::bail!("{op}: expected a matrix, got shape {:?}", l.dims()),
        }
    }

    /// Row-major rows of width `rs` from row `row`.
    pub(crate) fn rows(data: &'a [T], row: usize, rs: usize) -> Self {
        View {
            data,
            off: row * rs,
            rs,
            cs: 1,
        }
    }

    /// The transpose.
    pub(crate) fn t(self) -> Self {
        View {
            rs: self.cs,
            cs: self.rs,
            ..self
        }
    }

    /// Panics unless every element of a rows x cols matrix lies inside the slice.
    fn check(&self, rows: usize, cols: usize) {
        if rows > 0 && cols > 0 {
            let last = self.off + (rows - 1) * self.rs + (cols - 1) * self.cs;
            assert!(last < self.data.len(), "ops: a matrix outside its tensor");
        }
    }
}

/// dst [rows, cols] (row stride `dst_rs`) = a [rows, k] b [k, cols], added to dst's values when
/// `acc`; on the calling thread (the callers' tasks are the parallel ones).
pub(crate) fn gemm_into<T: LaneFloat>(
    dst: &mut [T],
    dst_rs: usize,
    acc: bool,
    ops: (View<T>, View<T>),
    dims: (usize, usize, usize),
) {
    gemm_into_with(dst, dst_rs, acc, ops, dims, false)
}

/// `gemm_into` on candle's CPU thread count, dst's columns split between the threads
/// (`gemm_by_columns`): for a caller that is not itself one of many parallel tasks.
pub(crate) fn gemm_into_par<T: LaneFloat>(
    dst: &mut [T],
    dst_rs: usize,
    acc: bool,
    ops: (View<T>, View<T>),
    dims: (usize, usize, usize),
) {
    gemm_into_with(dst, dst_rs, acc, ops, dims, true)
}

/// a [rows, k] b [k, cols] as a new row-major matrix, without the zero fill candle's matmul gives
/// its output first (gemm writes every element when it does not read dst, for k = 0 too), on
/// candle's CPU thread count (`gemm_by_columns`). The same bits as candle's matmul.
pub(crate) fn gemm_new<T: LaneFloat>(
    (a, b): (View<T>, View<T>),
    (rows, cols, k): (usize, usize, usize),
) -> Vec<T> {
    let mut dst = Vec::with_capacity(rows * cols);
    if rows > 0 && cols > 0 {
        a.check(rows, k);
        b.check(k, cols);
        // SAFETY: the checks keep gemm's reads inside a and b; dst has room for rows x cols
        // elements, all of which gemm writes (read_dst is false) before the length is set.
        unsafe {
            gemm_by_columns(dst.as_mut_ptr(), cols, false, (a, b), (rows, cols, k));
            dst.set_len(rows * cols);
        }
    }
    dst
}

/// A result's address, shared by parallel tasks that each write only their own part of it (a
/// block of its columns), while the result outlives the tasks.
pub(crate) struct Shared<T>(pub(crate) *mut T);

// SAFETY: the tasks that share the address write disjoint elements (each user's own argument).
unsafe impl<T> Sync for Shared<T> {}

/// `f` on candle's CPU thread count, each call with one contiguous run of `blocks` blocks (of a
/// result's columns): as many runs as threads, none empty. The x86 kernels' loop.
#[cfg(x86_kernels)]
pub(crate) fn par_runs(blocks: usize, f: impl Fn(std::ops::Range<usize>) + Sync + Send) {
    let threads = candle_core::utils::get_num_threads().clamp(1, blocks.max(1));
    let per = blocks.div_ceil(threads).max(1);
    (0..blocks.div_ceil(per))
        .into_par_iter()
        .for_each(|t| f(t * per..((t + 1) * per).min(blocks)));
}

/// Columns below which `gemm_by_columns` leaves the product to one gemm call with gemm's threads.
const MIN_SPLIT_COLS: usize = 128;

/// dst [rows, cols] (row stride `dst_rs`) = a b (+ dst when `acc`) on candle's CPU thread count,
/// each thread one gemm call on its own block of dst's columns (a multiple of 16 wide).
///
/// gemm transposes a problem whose dst is row-major, so dst's columns are the rows of its left
/// operand, b^T (a LoRA projection's weight). With gemm's own threads, each thread takes a run of
/// its tiles across every row panel and packs each panel of that operand again, and the threads
/// meet once per block of the shared dimension; here each thread packs only its own panels and
/// they meet once. Each element is the same sequence of fused multiply-adds either way, so the
/// bits are candle's matmul's (`lora_linear_tests.rs` runs it at 200 and 600 columns). The
/// 1 x 512 LoRA update ran a little faster (results/perf/step.md, "The projections' products
/// split by columns").
///
/// # Safety
/// As `gemm_raw`.
unsafe fn gemm_by_columns<T: LaneFloat>(
    dst: *mut T,
    dst_rs: usize,
    acc: bool,
    (a, b): (View<T>, View<T>),
    (rows, cols, k): (usize, usize, usize),
) {
    let threads = candle_core::utils::get_num_threads();
    if threads <= 1 || cols < MIN_SPLIT_COLS {
        let par = match threads {
            0 | 1 => Parallelism::None,
            n => Parallelism::Rayon(n),
        };
        return gemm_raw(dst, dst_rs, acc, (a, b), (rows, cols, k), par);
    }
    // The tasks write disjoint column blocks of dst, and dst outlives the parallel loop.
    let dst = Shared(dst);
    let block = cols.div_ceil(threads).next_multiple_of(16);
    (0..cols.div_ceil(block)).into_par_iter().for_each(|c| {
        let (c0, width) = (c * block, block.min(cols - c * block));
        let b = View {
            off: b.off + c0 * b.cs,
            ..b
        };
        let dst = &dst;
        // SAFETY: columns c0..c0 + width of dst and of b lie inside what the caller vouched for.
        unsafe {
            gemm_raw(
                dst.0.add(c0),
                dst_rs,
                acc,
                (a, b),
                (rows, width, k),
                Parallelism::None,
            )
        }
    });
}

/// The checks and k = 0 of `gemm_into` (on the calling thread) and `gemm_into_par` (`split`).
fn gemm_into_with<T: LaneFloat>(
    dst: &mut [T],
    dst_rs: usize,
    acc: bool,
    (a, b): (View<T>, View<T>),
    (rows, cols, k): (usize, usize, usize),
    split: bool,
) {
    if rows == 0 || cols == 0 {
        return;
    }
    View::rows(&*dst, 0, dst_rs).check(rows, cols);
    if k == 0 {
        if !acc {
            dst.chunks_mut(dst_rs)
                .take(rows)
                .for_each(|r| r[..cols].fill(T::from_f64(0.0)));
        }
        return;
    }
    a.check(rows, k);
    b.check(k, cols);
    let (dst, dims) = (dst.as_mut_ptr(), (rows, cols, k));
    // SAFETY: the checks above keep every element gemm reads or writes inside its slice, and
    // `dst` is borrowed mutably, so it overlaps neither operand.
    unsafe {
        match split {
            true => gemm_by_columns(dst, dst_rs, acc, (a, b), dims),
            false => gemm_raw(dst, dst_rs, acc, (a, b), dims, Parallelism::None),
        }
    }
}

/// gemm on a row-major dst; alpha = beta = 1, so dst + a b when `acc` (one fused multiply-add by
/// 1 per element, the same bits as adding a separate product) and a b otherwise.
///
/// # Safety
/// dst must hold rows x cols elements at row stride `dst_rs`, a and b their rows x k and k x cols
/// elements, and dst must overlap neither.
unsafe fn gemm_raw<T: LaneFloat>(
    dst: *mut T,
    dst_rs: usize,
    acc: bool,
    (a, b): (View<T>, View<T>),
    (rows, cols, k): (usize, usize, usize),
    par: Parallelism,
) {
    gemm::gemm(
        rows,
        cols,
        k,
        dst,
        1,
        dst_rs as isize,
        acc,
        a.data.as_ptr().add(a.off),
        a.cs as isize,
        a.rs as isize,
        b.data.as_ptr().add(b.off),
        b.cs as isize,
        b.rs as isize,
        T::from_f64(1.0),
        T::from_f64(1.0),
        false,
        false,
        false,
        par,
    )
}

/// The first and one past the last key a mask row lets through; the whole row when it lets none
/// through (so that such a row gives the composition's NaN).
pub(crate) fn visible_range<T: LaneFloat>(row: &[T]) -> (usize, usize) {
    let hidden = T::from_f64_k(f64::NEG_INFINITY);
    match (
        row.iter().position(|&v| v != hidden),
        row.iter().rposition(|&v| v != hidden),
    ) {
        (Some(lo), Some(last)) => (lo, last + 1),
        _ => (0, row.len()),
    }
}
