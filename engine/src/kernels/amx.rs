//! bf16 products on Intel AMX: dst [m, n] = a [m, k] b [k, n], with a and b rounded to
//! bf16 (round to nearest even) and every sum in f32, by `tdpbf16ps` (Intel SDM vol. 2,
//! "TDPBF16PS": each of the 16 x 16 f32 results adds 32 products of bf16 pairs per instruction).
//!
//! b is packed once (a frozen weight: `bf16_pack::PackedB`), a is rounded per call (`BfRows`).
//! The tiles: tmm0-3 hold a 32 x 32 block of dst, tmm4-5 two 16-row slices of a (32 values of k
//! each) and tmm6-7 two 16-column panels of b in AMX's pair-interleaved layout (row kp holds, for
//! each of the 16 columns, b[2 kp][j] and b[2 kp + 1][j]); a block of at most 16 rows (a decoding
//! step's) uses tmm0-1, tmm4 and tmm6-7. The instructions are written in `asm!`: Rust's AMX
//! intrinsics and target features are unstable (rust-lang/rust#126622), and nothing the compiler
//! emits touches the tile registers, so they keep their values from one asm block to the next on
//! a thread.

use std::arch::asm;
use std::sync::OnceLock;

use super::bf16_pack::{BfRows, PackedB, KB, T};
use super::view::{par_runs, Shared, View};

/// The values of k one pass over a block of rows takes, so that the pass's rows of a stay in the
/// core's L2 cache (1,024 rows x 1,024 values of bf16 are 2 MB) while the b panels stream by.
const KC: usize = 1024;
/// The rows of a one pass takes (see `KC`).
const MC: usize = 512;

/// Whether this CPU, kernel and build run AMX's bf16 products: the feature `avx512` (`isa.rs`),
/// CPUID leaf 7's AMX-TILE and AMX-BF16 bits, and Linux's permission for the tile data
/// (arch_prctl ARCH_REQ_XCOMP_PERM, the kernel's Documentation/arch/x86/xstate.rst), which a
/// process must ask for before its first tile load. Asked once per process.
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
        super::isa::avx512()
            && amx_bf16
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
    let a = BfRows::new(a, m, k, T);
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
    let k_pad = a.k_pad();
    for k0 in (0..k_pad.max(KB)).step_by(KC) {
        let kb = (k_pad - k0).min(KC) / KB;
        let add = k0 > 0;
        for m0 in (0..m).step_by(MC) {
            for c in cols.clone() {
                let (p0, p1) = b.panels(c);
                let (b0, b1) = (p0[k0 * T..].as_ptr(), p1[k0 * T..].as_ptr());
                for r in (m0..(m0 + MC).min(m)).step_by(2 * T) {
                    let a0 = a.values()[r * k_pad + k0..].as_ptr();
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
/// The tile configuration is loaded; a0 holds 32 rows (16 where rows <= 16) of `kb` x 32 values
/// at row stride k_pad, b0 and b1 `kb` x 512 values; dst holds rows x width values at row stride
/// ldd.
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
    // c's upper two tiles, then its lower two but for at most 16 rows, whose lower tiles are not
    // computed (see the loop below). Tiles keep their values from one asm block to the next.
    let half = rows <= T;
    match add {
        true => asm!(
            "tileloadd tmm0, [{c0} + {sc}*1]",
            "tileloadd tmm1, [{c1} + {sc}*1]",
            c0 = in(reg) c, c1 = in(reg) c1, sc = in(reg) sc,
            options(nostack, readonly),
        ),
        false => asm!("tilezero tmm0", "tilezero tmm1", options(nostack, nomem)),
    }
    match (add, half) {
        (_, true) => {}
        (true, false) => asm!(
            "tileloadd tmm2, [{c2} + {sc}*1]",
            "tileloadd tmm3, [{c3} + {sc}*1]",
            c2 = in(reg) c2, c3 = in(reg) c3, sc = in(reg) sc,
            options(nostack, readonly),
        ),
        (false, false) => asm!("tilezero tmm2", "tilezero tmm3", options(nostack, nomem)),
    }
    let sa = k_pad * 2;
    match (kb > 0, half) {
        (false, _) => {}
        (true, false) => asm!(
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
        ),
        // At most 16 rows (a decoding step's): one tile of a, whose next 16 rows are not there,
        // and the same two products per 32 values of k as above for these rows, so the same bits.
        // (Alternating two sets of a and b tiles, so that a tile load need not wait for the
        // products reading its tile, decoded no faster at batch 1.)
        (true, true) => asm!(
            "2:",
            "tileloadd tmm4, [{a0} + {sa}*1]",
            "tileloadd tmm6, [{b0} + {sb}*1]",
            "tileloadd tmm7, [{b1} + {sb}*1]",
            "tdpbf16ps tmm0, tmm4, tmm6",
            "tdpbf16ps tmm1, tmm4, tmm7",
            "add {a0}, 64",
            "add {b0}, 1024",
            "add {b1}, 1024",
            "dec {kb}",
            "jnz 2b",
            a0 = inout(reg) a0 => _,
            b0 = inout(reg) b0 => _,
            b1 = inout(reg) b1 => _,
            kb = inout(reg) kb => _,
            sa = in(reg) sa,
            sb = in(reg) 64usize,
            options(nostack, readonly),
        ),
    }
    asm!(
        "tilestored [{c0} + {sc}*1], tmm0",
        "tilestored [{c1} + {sc}*1], tmm1",
        c0 = in(reg) c, c1 = in(reg) c1, sc = in(reg) sc,
        options(nostack),
    );
    if !half {
        asm!(
            "tilestored [{c2} + {sc}*1], tmm2",
            "tilestored [{c3} + {sc}*1], tmm3",
            c2 = in(reg) c2, c3 = in(reg) c3, sc = in(reg) sc,
            options(nostack),
        );
    }
    if !full {
        for i in 0..rows {
            std::ptr::copy_nonoverlapping(scratch[i * 2 * T..].as_ptr(), dst.add(i * ldd), width);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::bf16_pack::tests::{check_with, rows_independent_with};
    use super::*;

    /// a b against f64 sums of the bf16-rounded values, by `amx::product`.
    fn check(m: usize, k: usize, n: usize, transposed_a: bool) {
        if !available() {
            eprintln!("no AMX on this CPU: amx::product not run");
            return;
        }
        check_with(product, (m, k, n), transposed_a);
    }

    #[test]
    fn products_equal_f64_sums_of_the_rounded_values() {
        check(1, 64, 32, false); // a decoding step's row: half blocks
        check(8, 576, 48, false);
        check(64, 64, 64, false);
        check(37, 50, 40, false); // every edge: rows, k and columns past the tiles
        check(70, 2100, 96, false); // three passes over k, the later two added to dst
        check(600, 40, 48, true); // two passes over rows, a read transposed
        check(5, 0, 20, false); // k = 0: zeros
    }

    /// A row's values do not depend on the other rows of its product: full blocks, half blocks
    /// (at most 16 rows) and passes over k and rows give each row the same operations.
    #[test]
    fn a_row_of_a_product_equals_the_row_alone() {
        if !available() {
            return;
        }
        rows_independent_with(
            product,
            (MC + 40, KC + 70, 40),
            &[0, 15, 16, 31, 200, MC, MC + 39],
        );
    }
}
