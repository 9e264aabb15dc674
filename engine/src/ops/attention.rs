//! Attention of the training forward as one CPU op: y = softmax(q k^T + mask) v, with backward,
//! skipping the keys the mask hides.
//!
//! Composed from candle ops (matmul, mask add, softmax, matmul), autograd keeps the probabilities
//! ([b, heads, t, keys] per layer: 1.1 GB at 4 x 512 tokens over SmolLM2-135M's 30 layers) alive
//! until the backward, and all four products run over every key, the half a causal mask hides
//! included. This op works in blocks of query rows: a block multiplies only the keys up to the last
//! one any of its rows sees (its mask's last entry above -inf), so a causal mask halves the
//! products. It keeps no probabilities: the backward recomputes them block by block, as
//! FlashAttention does (Dao et al. 2022, sec. 3.1), which costs one q k^T over the visible keys.
//!
//! The products sum over fewer keys than the composition's, and the softmax is the vectorized
//! one of `rows.rs`, so values and gradients equal the composition's up to rounding (tests pin
//! 1e-5 relative). Each output element is made by one task in a fixed order, so the result does
//! not depend on the thread count.
//!
//! Inputs are read in place from any layout whose rows of d values are contiguous (v is the heads
//! view of its projection's output), and the output is written with each position's heads side
//! by side, the layout the o projection reads: no transposed copies on either side.

use candle_core::op::BackpropOp;
use candle_core::{CpuStorage, CustomOp3, Layout, Result, Shape, Storage, Tensor};
use rayon::prelude::*;

use crate::kernels::rows::{softmax_grad_row, softmax_row, LaneFloat};
use crate::kernels::view::{gemm_into, qkv, visible_range, Rows, View};

/// Query rows per block, and keys per block of the key gradients: 64 x 64 tiles keep gemm's
/// micro-kernels full and leave 8 blocks per head at 512 tokens for the threads.
const BLOCK: usize = 64;

/// The op's name in errors.
const OP: &str = "attention_train";

/// softmax(q k^T + mask) v for q [b, g, m, d], k and v [b, g, n, d]; the mask [r, n] is added to
/// row i of every [m, n] block as its row i % r (r divides m: grouped-query heads stack their r
/// query rows, Ainslie et al. 2023). Output [b, r, g * (m / r) * d]: query head h of group j,
/// row p, at [p, (j * m / r + h) * d ..] (`ops::merge_heads` of the [b, g, m, d] result).
pub(super) struct Attention {
    /// The additive mask [r, n], contiguous, in q's dtype.
    pub(super) mask: Tensor,
}

/// The sizes of one call: b * g groups of `heads` * `r` query rows, each over `n` keys of width
/// `d`.
#[derive(Clone, Copy)]
struct Dims {
    b: usize,
    g: usize,
    heads: usize,
    r: usize,
    n: usize,
    d: usize,
}

/// One call's inputs, with the mask's visible keys per row and per block of rows.
struct Inputs<'a, T> {
    q: Rows<'a, T>,
    k: Rows<'a, T>,
    v: Rows<'a, T>,
    mask: &'a [T],
    dims: Dims,
    /// Visible keys of each mask row: one past its last entry above -inf (all n when the whole
    /// row is -inf, so that such a row gives the composition's NaN).
    row_keys: Vec<usize>,
    /// Visible keys of each block of `BLOCK` mask rows (the most of its rows).
    block_keys: Vec<usize>,
}

impl<'a, T: LaneFloat> Inputs<'a, T> {
    fn new(q: Rows<'a, T>, k: Rows<'a, T>, v: Rows<'a, T>, mask: &'a [T], dims: Dims) -> Self {
        let row_keys: Vec<usize> = mask
            .chunks_exact(dims.n)
            .map(|row| visible_range(row).1)
            .collect();
        let block_keys = row_keys
            .chunks(BLOCK)
            .map(|b| b.iter().copied().max().unwrap_or(0))
            .collect();
        Inputs {
            q,
            k,
            v,
            mask,
            dims,
            row_keys,
            block_keys,
        }
    }

    /// Writes the probabilities of rows `p0..` (as many as `out` holds at row stride n) of head
    /// `h` in group `grp` over the block's `keys` visible keys; columns from `keys` on are left
    /// as they were. Returns `keys`.
    fn probs(&self, out: &mut [T], grp: usize, h: usize, p0: usize) -> usize {
        let Dims { r, n, d, .. } = self.dims;
        let rows = out.len() / n;
        let keys = self.block_keys[p0 / BLOCK];
        let (q, kt) = (self.q.at(grp, h * r + p0), self.k.at(grp, 0).t());
        gemm_into(out, n, false, (q, kt), (rows, keys, d));
        for (i, row) in out.chunks_mut(n).enumerate() {
            let p = p0 + i;
            let row = &mut row[..keys];
            let mask = &self.mask[p * n..p * n + keys];
            row.iter_mut().zip(mask).for_each(|(v, &m)| *v += m);
            let seen = self.row_keys[p];
            softmax_row(&mut row[..seen]);
            row[seen..].fill(T::from_f64(0.0));
        }
        keys
    }

    /// The forward: y [b, r, g * heads * d]. A task per block of positions writes their rows,
    /// every head's d columns.
    fn forward(&self) -> Vec<T> {
        let Dims {
            b,
            g,
            heads,
            r,
            n,
            d,
        } = self.dims;
        let width = g * heads * d;
        let mut y = vec![T::from_f64(0.0); b * r * width];
        y.par_chunks_mut(r * width).enumerate().for_each(|(bi, y)| {
            y.par_chunks_mut(BLOCK * width)
                .enumerate()
                .for_each(|(blk, y)| {
                    let rows = y.len() / width;
                    let mut p = vec![T::from_f64(0.0); rows * n];
                    for (j, h) in (0..g).flat_map(|j| (0..heads).map(move |h| (j, h))) {
                        let keys = self.probs(&mut p, bi * g + j, h, blk * BLOCK);
                        let (p, v) = (View::rows(&p, 0, n), self.v.at(bi * g + j, 0));
                        let y = &mut y[(j * heads + h) * d..];
                        gemm_into(y, width, false, (p, v), (rows, d, keys));
                    }
                });
        });
        y
    }

    /// The backward from dy: (dq, dk, dv). Per group, first by blocks of query rows: the
    /// probabilities P again, dP = dy v^T, dS = P (dP - rowsum(P dP)) (the softmax's backward; the
    /// mask add passes it through) and dq = dS k; then by blocks of keys: dv = P^T dy and
    /// dk = dS^T q, summed over the heads and the query rows that see those keys.
    /// dy is read as [b, g * heads, r, d] (the heads view of the output's layout); dq, dk and dv
    /// come contiguous in the shapes of q, k and v.
    fn backward(&self, dy: Rows<T>) -> (Vec<T>, Vec<T>, Vec<T>) {
        let Dims {
            b,
            g,
            heads,
            r,
            n,
            d,
        } = self.dims;
        let (mut dq, mut dk, mut dv) = (
            vec![T::from_f64(0.0); b * g * heads * r * d],
            vec![T::from_f64(0.0); b * g * n * d],
            vec![T::from_f64(0.0); b * g * n * d],
        );
        // P and dS of one group, reused; only the columns below each block's visible keys are
        // written, and only those are read.
        let mut p = vec![T::from_f64(0.0); heads * r * n];
        let mut ds = vec![T::from_f64(0.0); heads * r * n];
        let chunks = dq
            .chunks_mut(heads * r * d)
            .zip(dk.chunks_mut(n * d))
            .zip(dv.chunks_mut(n * d));
        for (grp, ((dq, dk), dv)) in chunks.enumerate() {
            p.par_chunks_mut(r * n)
                .zip(ds.par_chunks_mut(r * n))
                .zip(dq.par_chunks_mut(r * d))
                .enumerate()
                .for_each(|(h, ((p, ds), dq))| {
                    p.par_chunks_mut(BLOCK * n)
                        .zip(ds.par_chunks_mut(BLOCK * n))
                        .zip(dq.par_chunks_mut(BLOCK * d))
                        .enumerate()
                        .for_each(|(blk, ((p, ds), dq))| {
                            self.query_block(grp, h, blk * BLOCK, p, ds, dq, dy);
                        });
                });
            let (p, ds) = (&p[..], &ds[..]);
            dk.par_chunks_mut(BLOCK * d)
                .zip(dv.par_chunks_mut(BLOCK * d))
                .enumerate()
                .for_each(|(kb, (dk, dv))| {
                    self.key_block(grp, kb * BLOCK, (p, ds), dy, dk, dv);
                });
        }
        (dq, dk, dv)
    }

    /// The first backward pass for rows `p0..` of head `h` in group `grp`: P into `p`, dS into
    /// `ds` (both at row stride n, columns below the block's visible keys), dq of those rows.
    #[allow(clippy::too_many_arguments)]
    fn query_block(
        &self,
        grp: usize,
        h: usize,
        p0: usize,
        p: &mut [T],
        ds: &mut [T],
        dq: &mut [T],
        dy: Rows<T>,
    ) {
        let Dims { heads, n, d, .. } = self.dims;
        let rows = dq.len() / d;
        let keys = self.probs(p, grp, h, p0);
        let (dy, vt) = (dy.at(grp * heads + h, p0), self.v.at(grp, 0).t());
        gemm_into(ds, n, false, (dy, vt), (rows, keys, d));
        for (i, (p, ds)) in p.chunks(n).zip(ds.chunks_mut(n)).enumerate() {
            let seen = self.row_keys[p0 + i];
            softmax_grad_row(&p[..seen], &mut ds[..seen]);
            ds[seen..keys].fill(T::from_f64(0.0));
        }
        let k = self.k.at(grp, 0);
        gemm_into(dq, d, false, (View::rows(&*ds, 0, n), k), (rows, d, keys));
    }

    /// The second backward pass for keys `j0..` (as many as `dk` holds) of group `grp`:
    /// dv = P^T dy and dk = dS^T q over every head's query rows that see them. Runs of row blocks
    /// with the same visible columns go to gemm as one product.
    fn key_block(
        &self,
        grp: usize,
        j0: usize,
        (p, ds): (&[T], &[T]),
        dy: Rows<T>,
        dk: &mut [T],
        dv: &mut [T],
    ) {
        let Dims { heads, r, n, d, .. } = self.dims;
        let j1 = j0 + dk.len() / d;
        let blocks = &self.block_keys;
        for h in 0..heads {
            let mut u = 0;
            while u < blocks.len() {
                let c1 = blocks[u].min(j1);
                let mut w = u + 1;
                while w < blocks.len() && blocks[w].min(j1) == c1 {
                    w += 1;
                }
                if c1 > j0 {
                    let (row0, rows) = (h * r + u * BLOCK, (w * BLOCK).min(r) - u * BLOCK);
                    let at = |m| View {
                        data: m,
                        off: row0 * n + j0,
                        rs: 1,
                        cs: n,
                    };
                    let size = (c1 - j0, d, rows);
                    let dy = dy.at(grp * heads + h, u * BLOCK);
                    gemm_into(dv, d, true, (at(p), dy), size);
                    gemm_into(dk, d, true, (at(ds), self.q.at(grp, row0)), size);
                }
                u = w;
            }
        }
    }
}

impl Attention {
    /// The sizes of q [b, g, m, d], k and v [b, g, n, d] and the mask [r, n], checked.
    fn dims(&self, ql: &Layout, kl: &Layout, vl: &Layout) -> Result<Dims> {
        let (b, g, m, d) = ql.shape().dims4()?;
        let (r, n) = self.mask.dims2()?;
        if kl.dims() != [b, g, n, d] || vl.dims() != kl.dims() || r == 0 || n == 0 || m % r != 0 {
            candle_core::bail!(
                "attention_train: q {:?}, k {:?}, v {:?} and mask {:?} do not fit together",
                ql.dims(),
                kl.dims(),
                vl.dims(),
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
        })
    }
}

/// The contiguous CPU slice of a tensor.
fn cpu_slice<T: LaneFloat>(t: &Tensor) -> Result<Vec<T>> {
    t.flatten_all()?.to_vec1::<T>()
}

impl CustomOp3 for Attention {
    fn name(&self) -> &'static str {
        "attention-train"
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
                let mask = cpu_slice::<$t>(&self.mask)?;
                let [q, k, v] = qkv::<$t>([(qs, ql), (ks, kl), (vs, vl)], OP)?;
                CpuStorage::$variant(Inputs::new(q, k, v, &mask, dims).forward())
            }};
        }
        let y = match qs {
            CpuStorage::F32(_) => go!(f32, F32),
            CpuStorage::F64(_) => go!(f64, F64),
            _ => candle_core::bail!("attention_train: the CPU op handles f32 and f64 only"),
        };
        let Dims {
            b, g, heads, r, d, ..
        } = dims;
        Ok((y, Shape::from((b, r, g * heads * d))))
    }

    fn bwd(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        _y: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        // The output's gradient [b, r, g * heads * d] as its heads view [b, g * heads, r, d].
        let (b, g, m, d) = q.dims4()?;
        let r = self.mask.dim(0)?;
        let grad = grad
            .contiguous()?
            .reshape((b, r, g * m / r, d))?
            .transpose(1, 2)?;
        let (qs, ql) = q.storage_and_layout();
        let (ks, kl) = k.storage_and_layout();
        let (vs, vl) = v.storage_and_layout();
        let (gs, gl) = grad.storage_and_layout();
        let (Storage::Cpu(qs), Storage::Cpu(ks), Storage::Cpu(vs), Storage::Cpu(gs)) =
            (&*qs, &*ks, &*vs, &*gs)
        else {
            candle_core::bail!(
                "attention_train backward: the CPU op got a tensor on another device"
            )
        };
        let dims = self.dims(ql, kl, vl)?;
        macro_rules! go {
            ($t:ty, $variant:ident) => {{
                let mask = cpu_slice::<$t>(&self.mask)?;
                let [q, k, v] = qkv::<$t>([(qs, ql), (ks, kl), (vs, vl)], OP)?;
                let dy = Rows::of(gs.as_slice::<$t>()?, gl, OP)?;
                let (dq, dk, dv) = Inputs::new(q, k, v, &mask, dims).backward(dy);
                (
                    CpuStorage::$variant(dq),
                    CpuStorage::$variant(dk),
                    CpuStorage::$variant(dv),
                )
            }};
        }
        let (dq, dk, dv) = match qs {
            CpuStorage::F32(_) => go!(f32, F32),
            CpuStorage::F64(_) => go!(f64, F64),
            _ => candle_core::bail!("attention_train backward: f32 or f64 expected"),
        };
        let tensor = |s, l: &Layout| {
            Tensor::from_storage(
                Storage::Cpu(s),
                l.shape().clone(),
                BackpropOp::none(),
                false,
            )
        };
        Ok((
            Some(tensor(dq, ql)),
            Some(tensor(dk, kl)),
            Some(tensor(dv, vl)),
        ))
    }
}
