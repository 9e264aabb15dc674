//! bf16 products on Intel AMX: dst [m, n] = a [m, k] b [k, n], with a and b rounded to
//! bf16 (round to nearest even) and every sum in f32, by `tdpbf16ps` (Intel SDM vol. 2,
//! "TDPBF16PS": each of the 16 x 16 f32 results adds 32 products of bf16 pairs per instruction).
//!
//! b is packed once (a frozen weight: `PackedB`), a is rounded per call (`BfRows`). The tiles:
//! tmm0-3 hold a 32 x 32 block of dst, tmm4-5 two 16-row slices of a (32 values of k each) and
//! tmm6-7 two 16-column panels of b in AMX's pair-interleaved layout (row kp holds, for each of
//! the 16 columns, b[2 kp][j] and b[2 kp + 1][j]). The instructions are written in `asm!`: Rust's
//! AMX intrinsics and target features are unstable (rust-lang/rust#126622), and nothing the
//! compiler emits touches the tile registers, so they keep their values from one asm block to the
//! next on a thread.

use std::arch::asm;
use std::mem::MaybeUninit;
use std::sync::OnceLock;

use rayon::prelude::*;

use super::rows::dispatch;
use super::view::{par_runs, Shared, View};

/// Values of k per tile row (64 bytes of bf16).
const KB: usize = 32;
/// Rows of every tile, and columns of an f32 tile.
const T: usize = 16;
/// The values of k one pass over a block of rows takes, so that the pass's rows of a stay in the
/// core's L2 cache (1,024 rows x 1,024 values of bf16 are 2 MB) while the b panels stream by.
const KC: usize = 1024;
/// The rows of a one pass takes (see `KC`).
const MC: usize = 512;

/// Whether this CPU and kernel run AMX's bf16 products: CPUID leaf 7's AMX-TILE and AMX-BF16 bits,
/// and Linux's permission for the tile data (arch_prctl ARCH_REQ_XCOMP_PERM, the kernel's
/// Documentation/arch/x86/xstate.rst), which a process must ask for before its first tile load.
/// Asked once per process.
pub(crate) fn available() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        use std::arch::x86_64::{__cpuid_count, __get_cpuid_max};
        let edx = match __get_cpuid_max(0).0 >= 7 {
            true => __cpuid_count(7, 0).edx,
            false => 0,
        };
        let (amx_bf16, amx_tile) = (edx >> 22 & 1 == 1, edx >> 24 & 1 == 1);
        const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
        const XFEATURE_XTILEDATA: libc::c_long = 18;
        // SAFETY: arch_prctl with these arguments only changes this process's xsave permissions.
        amx_bf16
            && amx_tile
            && unsafe {
                libc::syscall(
                    libc::SYS_arch_prctl,
                    ARCH_REQ_XCOMP_PERM,
                    XFEATURE_XTILEDATA,
                ) == 0
            }
    })
}

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

/// 64 bytes of bf16 values on a cache line of their own: a tile row that straddles two lines
/// loads at half the speed or less (2.2-2.7x slower in a 32 x 32 block on this project's Xeon,
/// results/perf/step.md, "bf16 products on AMX").
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u16; KB]);

/// Zeroed bf16 values, at least `len`, starting on a cache line.
fn lines(len: usize) -> Vec<Line> {
    vec![Line([0; KB]); len.div_ceil(KB)]
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
        let panels = n.div_ceil(2 * T) * 2;
        let panel = k_pad * T; // k_pad / 2 rows of 16 pairs
        let mut data = lines(panels * panel);
        values_mut(&mut data)[..panels * panel]
            .par_chunks_mut(panel.max(1))
            .enumerate()
            .for_each(|(p, dst)| {
                let cols = T.min(n.saturating_sub(p * T));
                let mut put = |i: usize, j: usize| {
                    let v = b.data[b.off + i * b.rs + (p * T + j) * b.cs];
                    dst[(i / 2) * 2 * T + 2 * j + i % 2] = bf16_bits(v);
                };
                // Along b's memory order: a row-major b a row of the panel at a time.
                match b.cs == 1 {
                    true => (0..k).for_each(|i| (0..cols).for_each(|j| put(i, j))),
                    false => (0..cols).for_each(|j| (0..k).for_each(|i| put(i, j))),
                }
            });
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

/// a [m, k] rounded to bf16, row-major, k padded with zeros to a multiple of 32 and m to one of
/// 32.
struct BfRows {
    k_pad: usize,
    data: Vec<Line>,
}

impl BfRows {
    /// Every value written once: the rows rounded, their padding and the padding rows zeroed
    /// (no zero fill first: it was a pass over the buffer per product).
    fn new(a: View<f32>, m: usize, k: usize) -> Self {
        let k_pad = k.next_multiple_of(KB);
        let len = m.next_multiple_of(2 * T) * k_pad; // a multiple of KB
        let mut data = Vec::<Line>::with_capacity(len / KB);
        let spare = data.spare_capacity_mut();
        // SAFETY: a Line is KB u16 with no padding, so the spare capacity holds len u16 slots.
        let values: &mut [MaybeUninit<u16>] =
            unsafe { std::slice::from_raw_parts_mut(spare.as_mut_ptr().cast(), len) };
        values
            .par_chunks_mut(k_pad.max(1))
            .enumerate()
            .for_each(|(i, row)| {
                let (vals, pad) = row.split_at_mut(if i < m { k } else { 0 });
                if i < m {
                    let start = a.off + i * a.rs;
                    match a.cs {
                        1 => to_bf16(&a.data[start..start + k], vals),
                        cs => vals.iter_mut().enumerate().for_each(|(j, d)| {
                            d.write(bf16_bits(a.data[start + j * cs]));
                        }),
                    }
                }
                pad.iter_mut().for_each(|d| {
                    d.write(0);
                });
            });
        // SAFETY: the loop above wrote all len values.
        unsafe { data.set_len(len / KB) };
        BfRows { k_pad, data }
    }
}

/// a b as a new row-major [m, n] matrix, with a [m, k] (any strides) rounded to bf16 here and b
/// packed; on candle's CPU thread count, the 32-column blocks of the result split between the
/// threads. The caller checks `available()`.
pub(crate) fn product(a: View<f32>, m: usize, b: &PackedB) -> Vec<f32> {
    let (k, n) = b.dims();
    assert!(available(), "amx::product on a CPU without AMX");
    let mut dst = Vec::with_capacity(m * n);
    if m == 0 || n == 0 {
        return dst;
    }
    if k > 0 {
        let last = a.off + (m - 1) * a.rs + (k - 1) * a.cs;
        assert!(
            last < a.data.len(),
            "amx::product: a matrix outside its tensor"
        );
    }
    let a = BfRows::new(a, m, k);
    // The tasks write disjoint column blocks of dst, which outlives the parallel loop.
    let out = Shared(dst.as_mut_ptr());
    par_runs(n.div_ceil(2 * T), |cols| {
        let out = &out;
        // SAFETY: `available()` holds; every tile reads inside a's and b's padded buffers and
        // every store lands in columns `cols` of dst's m x n values.
        unsafe { block_range(out.0, n, (&a, m), b, cols) };
    });
    // SAFETY: the tasks wrote every element: each block of every pass over k (the first pass
    // does not read dst).
    unsafe { dst.set_len(m * n) };
    dst
}

/// The 32-column blocks `cols` of dst, on this thread: passes of `KC` values of k over `MC` rows.
///
/// # Safety
/// AMX is available; dst holds m x n values at row stride n.
unsafe fn block_range(
    dst: *mut f32,
    n: usize,
    (a, m): (&BfRows, usize),
    b: &PackedB,
    cols: std::ops::Range<usize>,
) {
    let cfg = TileConfig::new();
    let mut scratch = [0f32; 4 * T * T];
    asm!("ldtilecfg [{}]", in(reg) cfg.0.as_ptr(), options(nostack, readonly));
    let k_pad = a.k_pad;
    for k0 in (0..k_pad.max(KB)).step_by(KC) {
        let kb = (k_pad - k0).min(KC) / KB;
        let add = k0 > 0;
        for m0 in (0..m).step_by(MC) {
            for c in cols.clone() {
                let (p0, p1) = b.panels(c);
                let (b0, b1) = (p0[k0 * T..].as_ptr(), p1[k0 * T..].as_ptr());
                for r in (m0..(m0 + MC).min(m)).step_by(2 * T) {
                    let a0 = values(&a.data)[r * k_pad + k0..].as_ptr();
                    let rows = (m - r).min(2 * T);
                    let width = (n - c * 2 * T).min(2 * T);
                    block(
                        dst.add(r * n + c * 2 * T),
                        n,
                        (rows, width),
                        add,
                        (a0, k_pad, kb),
                        (b0, b1),
                        &mut scratch,
                    );
                }
            }
        }
    }
    asm!("tilerelease", options(nostack, nomem));
}

/// The 64-byte tile configuration: palette 1, eight tiles of 16 rows of 64 bytes.
#[repr(C, align(64))]
struct TileConfig([u8; 64]);

impl TileConfig {
    fn new() -> Self {
        let mut c = [0u8; 64];
        c[0] = 1;
        for t in 0..8 {
            c[16 + 2 * t] = 64; // colsb, little-endian u16
            c[48 + t] = T as u8; // rows
        }
        TileConfig(c)
    }
}

/// One block of up to 32 x 32 values of dst (row stride `ldd`): rows x width of them are real.
/// A full block is loaded and stored in place, an edge block through `scratch`, the caller's
/// 32 x 32 block (zeroed once per task, not per block: a result's element depends only on its own
/// earlier value, so what an earlier edge block left outside rows x width never reaches dst).
///
/// # Safety
/// The tile configuration is loaded; a0 holds 32 rows of `kb` x 32 values at row stride k_pad,
/// b0 and b1 `kb` x 512 values; dst holds rows x width values at row stride ldd.
unsafe fn block(
    dst: *mut f32,
    ldd: usize,
    (rows, width): (usize, usize),
    add: bool,
    (a0, k_pad, kb): (*const u16, usize, usize),
    (b0, b1): (*const u16, *const u16),
    scratch: &mut [f32; 4 * T * T],
) {
    let full = rows == 2 * T && width == 2 * T;
    let (c, ldc) = match full {
        true => (dst, ldd),
        false => {
            if add {
                for i in 0..rows {
                    std::ptr::copy_nonoverlapping(
                        dst.add(i * ldd),
                        scratch[i * 2 * T..].as_mut_ptr(),
                        width,
                    );
                }
            }
            (scratch.as_mut_ptr(), 2 * T)
        }
    };
    let sc = ldc * 4;
    let (c1, c2) = (c.add(T), c.add(T * ldc));
    let c3 = c2.add(T);
    match add {
        true => asm!(
            "tileloadd tmm0, [{c0} + {sc}*1]",
            "tileloadd tmm1, [{c1} + {sc}*1]",
            "tileloadd tmm2, [{c2} + {sc}*1]",
            "tileloadd tmm3, [{c3} + {sc}*1]",
            c0 = in(reg) c, c1 = in(reg) c1, c2 = in(reg) c2, c3 = in(reg) c3, sc = in(reg) sc,
            options(nostack, readonly),
        ),
        false => asm!(
            "tilezero tmm0",
            "tilezero tmm1",
            "tilezero tmm2",
            "tilezero tmm3",
            options(nostack, nomem),
        ),
    }
    let sa = k_pad * 2;
    if kb > 0 {
        asm!(
            "2:",
            "tileloadd tmm4, [{a0} + {sa}*1]",
            "tileloadd tmm5, [{a1} + {sa}*1]",
            "tileloadd tmm6, [{b0} + {sb}*1]",
            "tileloadd tmm7, [{b1} + {sb}*1]",
            "tdpbf16ps tmm0, tmm4, tmm6",
            "tdpbf16ps tmm1, tmm4, tmm7",
            "tdpbf16ps tmm2, tmm5, tmm6",
            "tdpbf16ps tmm3, tmm5, tmm7",
            "add {a0}, 64",
            "add {a1}, 64",
            "add {b0}, 1024",
            "add {b1}, 1024",
            "dec {kb}",
            "jnz 2b",
            a0 = inout(reg) a0 => _,
            a1 = inout(reg) a0.add(T * k_pad) => _,
            b0 = inout(reg) b0 => _,
            b1 = inout(reg) b1 => _,
            kb = inout(reg) kb => _,
            sa = in(reg) sa,
            sb = in(reg) 64usize,
            options(nostack, readonly),
        );
    }
    asm!(
        "tilestored [{c0} + {sc}*1], tmm0",
        "tilestored [{c1} + {sc}*1], tmm1",
        "tilestored [{c2} + {sc}*1], tmm2",
        "tilestored [{c3} + {sc}*1], tmm3",
        c0 = in(reg) c, c1 = in(reg) c1, c2 = in(reg) c2, c3 = in(reg) c3, sc = in(reg) sc,
        options(nostack),
    );
    if !full {
        for i in 0..rows {
            std::ptr::copy_nonoverlapping(scratch[i * 2 * T..].as_ptr(), dst.add(i * ldd), width);
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// bf16 bits back to f32.
    fn f(b: u16) -> f64 {
        f32::from_bits((b as u32) << 16) as f64
    }

    /// A product of a [m, k] and a packed b (`product` here, `bf16_few_rows::product`).
    pub(in super::super) type Product = fn(View<f32>, usize, &PackedB) -> Vec<f32>;

    /// a b against f64 sums of the bf16-rounded values, by `amx::product`.
    fn check(m: usize, k: usize, n: usize, transposed_a: bool) {
        if !available() {
            eprintln!("no AMX on this CPU: amx::product not run");
            return;
        }
        check_with(product, (m, k, n), transposed_a);
    }

    /// a b by `product` against f64 sums of the bf16-rounded values (the caller checks that the
    /// CPU runs it).
    pub(in super::super) fn check_with(
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

    #[test]
    fn products_equal_f64_sums_of_the_rounded_values() {
        check(64, 64, 64, false);
        check(37, 50, 40, false); // every edge: rows, k and columns past the tiles
        check(70, 2100, 96, false); // three passes over k, the later two added to dst
        check(600, 40, 48, true); // two passes over rows, a read transposed
        check(5, 0, 20, false); // k = 0: zeros
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
