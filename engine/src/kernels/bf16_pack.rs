//! bf16 operands for the products of `model.cpu_matmul: bf16`: a frozen weight b [k, n] rounded
//! to bf16 (round to nearest even) and packed once (`PackedB`), and the other operand's rows
//! rounded per product (`BfRows`, or `RoundedRows` for f32 FMAs). Every kernel reads them: Intel
//! AMX's tiles (`amx.rs`) and AVX-512's loops (`bf16_dot.rs`). A packed panel is AMX's
//! pair-interleaved layout: 16 columns, row kp holding for each column the pair (b[2 kp][j],
//! b[2 kp + 1][j]), one 64-byte line per row.

use std::mem::MaybeUninit;

use rayon::prelude::*;

use super::rows::dispatch;
use super::view::{gemm_into, View};

/// Values of k per line (64 bytes of bf16): k is padded to a multiple of it.
pub(crate) const KB: usize = 32;
/// Columns of a panel (16 f32 lanes of a 512-bit register, or of an AMX tile).
pub(crate) const T: usize = 16;

/// f32 to bf16, rounded to nearest even; a NaN becomes the quiet NaN 0x7fc0. Branch-free, so
/// that the loops over it vectorize (finite values round up into infinity as they should; only a
/// NaN's bits can wrap).
#[inline(always)]
pub(crate) fn bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let rounded = (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16;
    match (b & 0x7fff_ffff) > 0x7f80_0000 {
        true => 0x7fc0,
        false => rounded,
    }
}

fn to_bf16_body(src: &[f32], dst: &mut [MaybeUninit<u16>]) {
    dst.iter_mut().zip(src).for_each(|(d, &v)| {
        d.write(bf16_bits(v));
    });
}

dispatch!(
    /// `bf16_bits` of each value of src into dst (the shorter of the two).
    to_bf16 = to_bf16_body(src: &[f32], dst: &mut [MaybeUninit<u16>])
);

/// x rounded to bf16 and widened back: the f32 value of `bf16_bits(x)`.
#[inline(always)]
fn rounded(x: f32) -> f32 {
    f32::from_bits((bf16_bits(x) as u32) << 16)
}

fn to_rounded_body(src: &[f32], dst: &mut [MaybeUninit<f32>]) {
    dst.iter_mut().zip(src).for_each(|(d, &v)| {
        d.write(rounded(v));
    });
}

dispatch!(
    /// `rounded` of each value of src into dst (the shorter of the two).
    to_rounded = to_rounded_body(src: &[f32], dst: &mut [MaybeUninit<f32>])
);

fn add_rounded_body(dst: &mut [MaybeUninit<u16>], old: &[u16], uv: &[f32], scale: f32) {
    let widen = |b: u16| f32::from_bits((b as u32) << 16);
    // Pair row q holds rows 2 q and 2 q + 1 of the panel, interleaved column by column.
    let pairs = dst.chunks_exact_mut(2 * T).zip(old.chunks_exact(2 * T));
    for ((d, o), rows) in pairs.zip(uv.chunks_exact(2 * T)) {
        let (r0, r1) = rows.split_at(T);
        for j in 0..T {
            d[2 * j].write(bf16_bits(widen(o[2 * j]) + scale * r0[j]));
            d[2 * j + 1].write(bf16_bits(widen(o[2 * j + 1]) + scale * r1[j]));
        }
    }
}

dispatch!(
    /// A panel of bf16(old + scale uv) into dst: old in the pack's layout, uv [k_pad, 16]
    /// row-major.
    add_rounded = add_rounded_body(dst: &mut [MaybeUninit<u16>], old: &[u16], uv: &[f32], scale: f32)
);

/// 64 bytes of bf16 values on a cache line of their own: a tile row that straddles two lines
/// loads much slower (results/perf/step.md, "bf16 products on AMX").
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u16; KB]);

/// Where b[i][j] of a panel's column j lies in the panel: pair i / 2 of that row, half i % 2.
fn at(i: usize, j: usize) -> usize {
    (i / 2) * 2 * T + 2 * j + i % 2
}

/// Zeroed bf16 values, at least `len`, starting on a cache line.
fn lines(len: usize) -> Vec<Line> {
    vec![Line([0; KB]); len.div_ceil(KB)]
}

/// `len` bf16 values (a multiple of KB) on cache lines, written by `fill` with no zero fill first.
///
/// # Safety
/// `fill` must write every one of the `len` values it is given.
unsafe fn written_lines(len: usize, fill: impl FnOnce(&mut [MaybeUninit<u16>])) -> Vec<Line> {
    let mut data = Vec::<Line>::with_capacity(len / KB);
    let spare = data.spare_capacity_mut();
    // SAFETY: a Line is KB u16 with no padding, so the spare capacity holds len u16 slots.
    fill(unsafe { std::slice::from_raw_parts_mut(spare.as_mut_ptr().cast(), len) });
    // SAFETY: the caller's `fill` wrote all len values.
    unsafe { data.set_len(len / KB) };
    data
}

/// The values of `lines`.
fn values(l: &[Line]) -> &[u16] {
    // SAFETY: Line is 32 u16 with no padding (repr(C), 64 bytes, align 64).
    unsafe { std::slice::from_raw_parts(l.as_ptr().cast(), l.len() * KB) }
}

/// The values of `lines`, to write.
fn values_mut(l: &mut [Line]) -> &mut [u16] {
    // SAFETY: as `values`; the borrow is unique.
    unsafe { std::slice::from_raw_parts_mut(l.as_mut_ptr().cast(), l.len() * KB) }
}

/// b [k, n] in bf16, packed for the tiles: panels of 16 columns (their count made even, so that
/// blocks of 32 columns cover them), each k_pad / 2 rows of 16 pairs, zeros past k and n.
pub(crate) struct PackedB {
    k: usize,
    n: usize,
    k_pad: usize,
    data: Vec<Line>,
}

impl PackedB {
    /// Packs b [k, n] (any strides); parallel over the panels.
    pub(crate) fn new(b: View<f32>, k: usize, n: usize) -> Self {
        let k_pad = k.next_multiple_of(KB);
        let mut data = lines(n.div_ceil(2 * T) * 2 * k_pad * T);
        values_mut(&mut data)
            .par_chunks_mut((k_pad * T).max(1))
            .enumerate()
            .for_each(|(p, dst)| {
                let cols = T.min(n.saturating_sub(p * T));
                let mut put = |i: usize, j: usize| {
                    dst[at(i, j)] = bf16_bits(b.data[b.off + i * b.rs + (p * T + j) * b.cs]);
                };
                // Along b's memory order: a row-major b a row of the panel at a time.
                match b.cs == 1 {
                    true => (0..k).for_each(|i| (0..cols).for_each(|j| put(i, j))),
                    false => (0..cols).for_each(|j| (0..k).for_each(|i| put(i, j))),
                }
            });
        PackedB { k, n, k_pad, data }
    }

    /// The pack of bf16(b + scale u v) for this pack's b, u [k, r] and v [r, n] (any strides):
    /// each value widened to f32, the product's value added, the sum rounded again. The merged
    /// weight W + scale B A of generation (`LoraLinear::set_merged`) without the f32 W, which bf16
    /// products drop. A panel's [k, 16] block of u v is made on its task and added at once, so
    /// no [k, n] product is written.
    pub(crate) fn plus_product(
        &self,
        (u, v): (View<f32>, View<f32>),
        r: usize,
        scale: f32,
    ) -> Self {
        let (k, n, k_pad) = (self.k, self.n, self.k_pad);
        let old = values(&self.data);
        let fill = |out: &mut [MaybeUninit<u16>]| {
            out.par_chunks_mut((k_pad * T).max(1))
                .zip(old.par_chunks((k_pad * T).max(1)))
                .enumerate()
                .for_each(|(p, (dst, old))| {
                    // u v's block, zero in the padding's rows and columns (as b's pack is there).
                    let mut uv = vec![0f32; k_pad * T];
                    let v = View {
                        off: v.off + p * T * v.cs,
                        ..v
                    };
                    let cols = T.min(n.saturating_sub(p * T));
                    gemm_into(&mut uv, T, false, (u, v), (k, cols, r));
                    add_rounded(dst, old, &uv, scale);
                })
        };
        // SAFETY: `fill` writes every value: the panels cover the pack, as they cover `old`.
        let data = unsafe { written_lines(old.len(), fill) };
        PackedB { k, n, k_pad, data }
    }

    /// (k, n) of b.
    pub(crate) fn dims(&self) -> (usize, usize) {
        (self.k, self.n)
    }

    /// k rounded up to a multiple of 32 (the packing's rows are k_pad / 2 pairs).
    pub(crate) fn k_pad(&self) -> usize {
        self.k_pad
    }

    /// The two panels of columns 32 c .. 32 c + 32: each k_pad / 2 rows of 16 pairs, one 64-byte
    /// line per row.
    pub(crate) fn panels(&self, c: usize) -> (&[u16], &[u16]) {
        let (len, data) = (self.k_pad * T, values(&self.data));
        let (p0, p1) = data[2 * c * len..(2 * c + 2) * len].split_at(len);
        (p0, p1)
    }
}

/// Writes a [m, k] (any strides) rounded to bf16 by `round` (a contiguous row) or `one` (a
/// value) into `values`, rows of k_pad values each, zero past k and past row m; parallel over rows
/// above 16k values, a decoding step's few rows on the calling thread. Every value is written once
/// (no zero fill first: it was a pass over the buffer per product).
fn round_rows<E: Copy + Send + Sync>(
    values: &mut [MaybeUninit<E>],
    (a, m, k, k_pad): (View<f32>, usize, usize, usize),
    round: fn(&[f32], &mut [MaybeUninit<E>]),
    one: fn(f32) -> E,
    zero: E,
) {
    if m > 0 && k > 0 {
        let last = a.off + (m - 1) * a.rs + (k - 1) * a.cs;
        assert!(
            last < a.data.len(),
            "bf16 products: a matrix outside its tensor"
        );
    }
    let row = |(i, row): (usize, &mut [MaybeUninit<E>])| {
        let (vals, pad) = row.split_at_mut(if i < m { k } else { 0 });
        if i < m {
            let start = a.off + i * a.rs;
            match a.cs {
                1 => round(&a.data[start..start + k], vals),
                cs => vals.iter_mut().enumerate().for_each(|(j, d)| {
                    d.write(one(a.data[start + j * cs]));
                }),
            }
        }
        pad.iter_mut().for_each(|d| {
            d.write(zero);
        });
    };
    let per_task = (1 << 14) / k_pad.max(1) + 1;
    values
        .par_chunks_mut(k_pad.max(1))
        .with_min_len(per_task)
        .enumerate()
        .for_each(row)
}

/// a [m, k] rounded to bf16, row-major on cache lines, k padded with zeros to a multiple of 32
/// (row i's pair kp, as a u32 with the even value of k in its lower half, at i k_pad / 2 + kp),
/// and m with zero rows to a multiple of the kernel's choosing.
pub(crate) struct BfRows {
    k_pad: usize,
    data: Vec<Line>,
}

impl BfRows {
    /// a [m, k] (any strides) rounded, its rows padded to a multiple of `rows_multiple`.
    pub(crate) fn new(a: View<f32>, m: usize, k: usize, rows_multiple: usize) -> Self {
        let k_pad = k.next_multiple_of(KB);
        let len = m.next_multiple_of(rows_multiple) * k_pad; // a multiple of KB
        let fill = |values: &mut [MaybeUninit<u16>]| {
            round_rows(values, (a, m, k, k_pad), to_bf16, bf16_bits, 0)
        };
        // SAFETY: `round_rows` writes every value of every row: the rounded values and padding.
        let data = unsafe { written_lines(len, fill) };
        BfRows { k_pad, data }
    }

    /// k rounded up to a multiple of 32.
    pub(crate) fn k_pad(&self) -> usize {
        self.k_pad
    }

    /// The rounded values, row after row (k_pad each).
    pub(crate) fn values(&self) -> &[u16] {
        values(&self.data)
    }

    /// The rounded values as pairs, row after row (k_pad / 2 each).
    pub(crate) fn pairs(&self) -> &[u32] {
        // SAFETY: a Line is 64 bytes aligned to 64, so it holds KB / 2 u32 with no padding.
        unsafe { std::slice::from_raw_parts(self.data.as_ptr().cast(), self.data.len() * KB / 2) }
    }
}

/// a [m, k] rounded to bf16 and kept as f32 values (exactly the bf16 values), row-major, k
/// padded with zeros to a multiple of 32: the rows of the f32 FMA kernel (`bf16_dot::Fma`),
/// which reads each value as a broadcast from memory.
pub(crate) struct RoundedRows(Vec<f32>);

impl RoundedRows {
    /// a [m, k] (any strides) rounded.
    pub(crate) fn new(a: View<f32>, m: usize, k: usize) -> Self {
        let k_pad = k.next_multiple_of(KB);
        let mut data = Vec::with_capacity(m * k_pad);
        round_rows(
            &mut data.spare_capacity_mut()[..m * k_pad],
            (a, m, k, k_pad),
            to_rounded,
            rounded,
            0.0,
        );
        // SAFETY: `round_rows` wrote every one of the m * k_pad values.
        unsafe { data.set_len(m * k_pad) };
        RoundedRows(data)
    }

    /// The rounded values as (even, odd) pairs of k, row after row (k_pad / 2 each).
    pub(crate) fn pairs(&self) -> &[[f32; 2]] {
        self.0.as_chunks().0
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// bf16 bits back to f32.
    fn f(b: u16) -> f64 {
        f32::from_bits((b as u32) << 16) as f64
    }

    /// A product of a [m, k] and a packed b (`amx::product`, `bf16_dot::product`).
    pub(crate) type Product = fn(View<f32>, usize, &PackedB) -> Vec<f32>;

    /// a b by `product` against f64 sums of the bf16-rounded values (the caller checks that the
    /// CPU runs it).
    pub(crate) fn check_with(
        product: Product,
        (m, k, n): (usize, usize, usize),
        transposed_a: bool,
    ) {
        let val = |i: usize, s: f32| ((i * 2654435761) % 1000) as f32 / 500.0 - 1.0 + s;
        let a: Vec<f32> = (0..m * k).map(|i| val(i, 0.001)).collect();
        let b: Vec<f32> = (0..k * n).map(|i| val(i + 7, -0.003)).collect();
        let av = match transposed_a {
            false => View::rows(&a, 0, k),
            true => View::rows(&a, 0, m).t(),
        };
        let packed = PackedB::new(View::rows(&b, 0, n), k, n);
        let dst = product(av, m, &packed);
        assert_eq!(dst.len(), m * n);
        for i in 0..m {
            for j in 0..n {
                let mut s = 0.0;
                for l in 0..k {
                    let ai = av.data[av.off + i * av.rs + l * av.cs];
                    s += f(bf16_bits(ai)) * f(bf16_bits(b[l * n + j]));
                }
                let got = dst[i * n + j] as f64;
                assert!(
                    (got - s).abs() <= 1e-5 * (k as f64).sqrt() * (1.0 + s.abs()),
                    "({m}, {k}, {n}) [{i}, {j}]: {got} against {s}"
                );
            }
        }
    }

    /// Each of `rows` of a [m, k] b by `product` equals the row alone and the row among 8 (the
    /// caller checks that the CPU runs it): a row's values do not depend on the other rows of its
    /// product.
    pub(crate) fn rows_independent_with(
        product: Product,
        (m, k, n): (usize, usize, usize),
        rows: &[usize],
    ) {
        let x: Vec<f32> = (0..m * k)
            .map(|i| ((i * 37) % 101) as f32 / 50.0 - 1.0)
            .collect();
        let w: Vec<f32> = (0..k * n)
            .map(|i| ((i * 53) % 97) as f32 / 48.0 - 1.0)
            .collect();
        let b = PackedB::new(View::rows(&w, 0, n), k, n);
        let all = product(View::rows(&x, 0, k), m, &b);
        for &i in rows {
            let alone = product(View::rows(&x, i, k), 1, &b);
            assert_eq!(alone, all[i * n..(i + 1) * n], "row {i}");
            let first = i.min(m - 8);
            let few = product(View::rows(&x, first, k), 8, &b);
            let r = i - first;
            assert_eq!(
                few[r * n..(r + 1) * n],
                all[i * n..(i + 1) * n],
                "row {i} of 8"
            );
        }
    }

    #[test]
    fn a_sum_packs_the_rounded_weight_plus_the_product_rounded_again() {
        let (k, n, r) = (37, 45, 3); // past a line of k and a pair of panels of n
        let b: Vec<f32> = (0..k * n)
            .map(|i| ((i * 53) % 97) as f32 / 48.0 - 1.0)
            .collect();
        // Multiples of 1/64 below 1: every product and sum is exact, in any order.
        let u: Vec<f32> = (0..k * r).map(|i| ((i * 7) % 13) as f32 / 64.0).collect();
        let v: Vec<f32> = (0..r * n)
            .map(|i| ((i * 5) % 11) as f32 / 64.0 - 0.125)
            .collect();
        let packed = PackedB::new(View::rows(&b, 0, n), k, n);
        let scale = 0.5;
        let uv = |i: usize, j: usize| (0..r).map(|l| u[i * r + l] * v[l * n + j]).sum::<f32>();
        let wide: Vec<f32> = (0..k * n)
            .map(|x| f(bf16_bits(b[x])) as f32 + scale * uv(x / n, x % n))
            .collect();
        let want = PackedB::new(View::rows(&wide, 0, n), k, n);
        // u and v in either memory order.
        let u_t: Vec<f32> = (0..r * k).map(|x| u[(x % k) * r + x / k]).collect();
        let v_t: Vec<f32> = (0..n * r).map(|x| v[(x % r) * n + x / r]).collect();
        let us = [View::rows(&u, 0, r), View::rows(&u_t, 0, k).t()];
        let vs = [View::rows(&v, 0, n), View::rows(&v_t, 0, r).t()];
        for (u, v) in us.into_iter().zip(vs) {
            let sum = packed.plus_product((u, v), r, scale);
            assert_eq!(sum.dims(), (k, n));
            assert_eq!(values(&sum.data), values(&want.data));
        }
        // A zero product gives the same pack.
        let zeros = vec![0f32; r * n];
        let same = packed.plus_product((us[0], View::rows(&zeros, 0, n)), r, scale);
        assert_eq!(values(&same.data), values(&packed.data));
        // By hand: 1 plus 3/256 is 0x3f81_8000, a tie between 0x3f81 and 0x3f82: to even.
        let one = PackedB::new(View::rows(&[1.0], 0, 1), 1, 1);
        let sum = one.plus_product(
            (View::rows(&[0.75], 0, 1), View::rows(&[0.125], 0, 1)),
            1,
            0.125,
        );
        assert_eq!(values(&sum.data)[0], 0x3f82);
        assert!(
            values(&sum.data)[1..].iter().all(|&v| v == 0),
            "padding stays zero"
        );
    }

    #[test]
    fn bf16_rounds_to_nearest_even() {
        assert_eq!(bf16_bits(1.0), 0x3f80);
        assert_eq!(bf16_bits(f32::from_bits(0x3f80_8000)), 0x3f80); // tie, to even
        assert_eq!(bf16_bits(f32::from_bits(0x3f81_8000)), 0x3f82); // tie, to even
        assert_eq!(bf16_bits(f32::from_bits(0x3f80_8001)), 0x3f81);
        assert_eq!(bf16_bits(-2.0), 0xc000);
        assert_eq!(bf16_bits(f32::NAN), 0x7fc0);
        assert_eq!(bf16_bits(f32::INFINITY), 0x7f80);
    }
}
