//! Attention at inference for one new position per row (decoding), as one CPU op:
//! y = softmax(q k^T + mask) v, with no backward.
//!
//! A decode step of SmolLM2 asks, for each row of the batch and KV head, 3 query rows (the
//! grouped heads) against a few hundred cached keys. As candle ops that is q k^T, a mask add, a
//! softmax and P v over [b, heads, keys], the products one gemm call per row and head through
//! candle's threaded matmul. Here each (row, KV head) pair is one task: gemm (on the calling
//! thread) multiplies its query rows by the keys its mask row lets through, from the first to the
//! last (so a left-padded row skips its padding), then the softmax of `rows.rs`, then gemm with
//! the same rows of v, reading the KV cache's views in place and writing the heads merged.
//!
//! Values equal the composition's up to summation order (tests pin 1e-5 relative); each output
//! is made by one task in a fixed order, so the result does not depend on the thread count.

use candle_core::{CpuStorage, CustomOp3, Layout, Result, Shape, Tensor};
use rayon::prelude::*;

use crate::kernels::rows::{softmax_row, LaneFloat};
use crate::kernels::view::{gemm_into, qkv, visible_range, Rows, View};

/// The op's name in errors.
const OP: &str = "attention_decode";

/// softmax(q k^T + mask) v for q [b, g, m, d], k and v [b, g, n, d]; the mask [mb, r, n] (mb 1
/// or b) gives row i of each group's m query rows its row i % r (r divides m: grouped-query
/// heads stack their r rows). Output [b, r, g * (m / r) * d], heads side by side, as
/// `ops::merge_heads` lays them out.
pub(super) struct DecodeAttention {
    /// The additive mask [mb, r, n], contiguous, in q's dtype.
    pub(super) mask: Tensor,
}

/// The op's sizes: b rows of g KV heads, each with `heads` query heads of r rows, over n keys of
/// width d; the mask has mb rows.
#[derive(Clone, Copy)]
struct Dims {
    b: usize,
    g: usize,
    heads: usize,
    r: usize,
    n: usize,
    d: usize,
    mb: usize,
}

impl DecodeAttention {
    fn dims(&self, ql: &Layout, kl: &Layout, vl: &Layout) -> Result<Dims> {
        let (b, g, m, d) = ql.shape().dims4()?;
        let (kb, kg, n, kd) = kl.shape().dims4()?;
        let (mb, r, mn) = self.mask.dims3()?;
        if (kb, kg, kd) != (b, g, d) || vl.shape() != kl.shape() || mn != n {
            candle_core::bail!(
                "{OP}: q {:?}, k {:?}, v {:?} and mask {:?} do not fit",
                ql.dims(),
                kl.dims(),
                vl.dims(),
                self.mask.dims()
            )
        }
        if r == 0 || m % r != 0 || !(mb == 1 || mb == b) {
            candle_core::bail!(
                "{OP}: a mask [1 or {b}, r, {n}] with r dividing {m} expected, got {:?}",
                self.mask.dims()
            )
        }
        Ok(Dims {
            b,
            g,
            heads: m / r,
            r,
            n,
            d,
            mb,
        })
    }

    fn forward<T: LaneFloat>(&self, [q, k, v]: [Rows<T>; 3], dims: Dims) -> Result<Vec<T>> {
        let Dims {
            b,
            g,
            heads,
            r,
            n,
            d,
            mb,
        } = dims;
        let mask = self.mask.flatten_all()?.to_vec1::<T>()?;
        let ranges: Vec<(usize, usize)> = mask.chunks(n.max(1)).map(visible_range).collect();
        // Each (row, KV head) pair: its heads x r output rows of d values, row h * r + p.
        let groups: Vec<Vec<T>> = (0..b * g)
            .into_par_iter()
            .map(|grp| {
                let mut out = vec![T::from_f64_k(0.0); heads * r * d];
                let mut s = vec![T::from_f64_k(0.0); heads * n];
                for p in 0..r {
                    let row = (grp / g % mb) * r + p;
                    let (lo, hi) = ranges[row];
                    let keys = hi - lo;
                    // Query rows p, r + p, ...: one per query head.
                    let qp = View {
                        rs: r * q.at.rs,
                        ..q.at(grp, p)
                    };
                    gemm_into(
                        &mut s,
                        keys,
                        false,
                        (qp, k.at(grp, lo).t()),
                        (heads, keys, d),
                    );
                    let m = &mask[row * n + lo..row * n + hi];
                    for s in s[..heads * keys].chunks_mut(keys.max(1)) {
                        s.iter_mut().zip(m).for_each(|(s, &m)| *s += m);
                        softmax_row(s);
                    }
                    let probs = View::rows(&s, 0, keys);
                    let y = &mut out[p * d..];
                    gemm_into(y, r * d, false, (probs, v.at(grp, lo)), (heads, d, keys));
                }
                out
            })
            .collect();
        // [b, r, g * heads * d]: query head h of group j, row p, at column (j * heads + h) * d.
        let width = g * heads * d;
        let mut y = vec![T::from_f64_k(0.0); b * r * width];
        for (grp, out) in groups.iter().enumerate() {
            let (bi, j) = (grp / g, grp % g);
            for (i, row) in out.chunks(d.max(1)).enumerate() {
                let (h, p) = (i / r, i % r);
                let at = (bi * r + p) * width + (j * heads + h) * d;
                y[at..at + d].copy_from_slice(row);
            }
        }
        Ok(y)
    }
}

impl CustomOp3 for DecodeAttention {
    fn name(&self) -> &'static str {
        "attention-decode"
    }

    fn cpu_fwd(
        &self,
        qs: &CpuStorage,
        ql: &Layout,
        ks: &CpuStorage,
        kl: &Layout,
        vs: &CpuStorage,
        vl: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let dims = self.dims(ql, kl, vl)?;
        macro_rules! go {
            ($t:ty, $variant:ident) => {{
                let rows = qkv::<$t>([(qs, ql), (ks, kl), (vs, vl)], OP)?;
                CpuStorage::$variant(self.forward(rows, dims)?)
            }};
        }
        let y = match qs {
            CpuStorage::F32(_) => go!(f32, F32),
            CpuStorage::F64(_) => go!(f64, F64),
            _ => candle_core::bail!("{OP}: the CPU op handles f32 and f64 only"),
        };
        let Dims {
            b, g, heads, r, d, ..
        } = dims;
        Ok((y, Shape::from((b, r, g * heads * d))))
    }
}
