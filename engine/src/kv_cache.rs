//! Key/value cache for batched decoding. Rows are left-padded so that every live sequence writes
//! its next key at the same column: one in-place `slice_set` per layer and step, whatever the
//! prompt lengths. Row i's valid keys start at column `start[i]`; the mask hides the padding and
//! rotary positions count from there. Finished rows leave with `retain_rows`.

use candle_core::{DType, Device, Tensor};
use rayon::prelude::*;

use crate::error::{Error, Result};

/// Per-layer keys and values, [batch, kv_heads, capacity, head_dim] each.
#[derive(Debug)]
pub struct KvCache {
    layers: Vec<(Tensor, Tensor)>,
    len: usize,
    cap: usize,
    start: Vec<usize>,
}

impl KvCache {
    /// An empty cache for `batch` rows with room for `cap` columns (it grows when needed).
    pub fn new(
        num_layers: usize,
        batch: usize,
        kv_heads: usize,
        head_dim: usize,
        cap: usize,
        dtype: DType,
        device: &Device,
    ) -> Result<Self> {
        let cap = cap.max(1);
        let mut layers = Vec::with_capacity(num_layers);
        for _ in 0..num_layers {
            let k = Tensor::zeros((batch, kv_heads, cap, head_dim), dtype, device)?;
            let v = Tensor::zeros((batch, kv_heads, cap, head_dim), dtype, device)?;
            layers.push((k, v));
        }
        Ok(KvCache {
            layers,
            len: 0,
            cap,
            start: vec![0; batch],
        })
    }

    /// Live rows.
    pub fn batch(&self) -> usize {
        self.start.len()
    }

    /// Columns written so far (including left padding).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True before the first append.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// First valid column of each row.
    pub fn starts(&self) -> &[usize] {
        &self.start
    }

    /// Rotary positions of `t` new tokens, row-major [batch * t]: column minus the row's start.
    pub fn positions(&self, t: usize) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.batch() * t);
        for &s in &self.start {
            out.extend((0..t).map(|j| (self.len + j - s) as u32));
        }
        out
    }

    /// Writes this step's keys/values [batch, kv_heads, t, head_dim] for `layer` at column `len`
    /// and returns views of all valid columns [batch, kv_heads, len + t, head_dim]. Call `advance`
    /// once all layers are done.
    pub fn append(&mut self, layer: usize, k: &Tensor, v: &Tensor) -> Result<(Tensor, Tensor)> {
        let t = k.dim(2)?;
        if self.len + t > self.cap {
            self.grow(self.len + t)?;
        }
        let (kc, vc) = self
            .layers
            .get(layer)
            .ok_or_else(|| Error::Other(format!("kv cache has no layer {layer}")))?;
        kc.slice_set(&k.contiguous()?, 2, self.len)?;
        vc.slice_set(&v.contiguous()?, 2, self.len)?;
        Ok((
            kc.narrow(2, 0, self.len + t)?,
            vc.narrow(2, 0, self.len + t)?,
        ))
    }

    /// Marks `t` columns as written (after every layer appended them).
    pub fn advance(&mut self, t: usize) {
        self.len += t;
    }

    fn grow(&mut self, need: usize) -> Result<()> {
        let new_cap = need.max(self.cap * 2);
        for (k, v) in self.layers.iter_mut() {
            let (b, h, _, d) = k.dims4()?;
            let pad = Tensor::zeros((b, h, new_cap - self.cap, d), k.dtype(), k.device())?;
            *k = Tensor::cat(&[&*k, &pad], 2)?;
            *v = Tensor::cat(&[&*v, &pad], 2)?;
        }
        self.cap = new_cap;
        Ok(())
    }

    /// Additive attention mask [batch, 1, 1, t, len + t] for `t` new queries: 0 where row i's
    /// query j may see column c (start[i] <= c <= len + j, and with a sliding `window` also
    /// c > len + j - window), -inf elsewhere.
    pub fn mask(&self, t: usize, window: Option<usize>, device: &Device) -> Result<Tensor> {
        let kv = self.len + t;
        let mut m = Vec::with_capacity(self.batch() * t * kv);
        for &s in &self.start {
            for j in 0..t {
                let last = self.len + j;
                let first = window.map_or(s, |w| s.max((last + 1).saturating_sub(w)));
                m.extend((0..kv).map(|c| {
                    if c >= first && c <= last {
                        0f32
                    } else {
                        f32::NEG_INFINITY
                    }
                }));
            }
        }
        Ok(Tensor::from_vec(m, (self.batch(), 1, 1, t, kv), device)?)
    }

    /// Keeps only `rows` (indices into the current batch, in the new order).
    pub fn retain_rows(&mut self, rows: &[usize]) -> Result<()> {
        if rows.len() == self.batch() && rows.iter().enumerate().all(|(i, &r)| i == r) {
            return Ok(());
        }
        let Some((k0, _)) = self.layers.first() else {
            return Ok(());
        };
        if rows.is_empty() {
            // An empty index_select is a zero-sized kernel launch, which CUDA rejects.
            for (k, v) in self.layers.iter_mut() {
                *k = k.narrow(0, 0, 0)?;
                *v = v.narrow(0, 0, 0)?;
            }
            self.start.clear();
            return Ok(());
        }
        let idx = Tensor::new(
            rows.iter().map(|&r| r as u32).collect::<Vec<_>>(),
            k0.device(),
        )?;
        for (k, v) in self.layers.iter_mut() {
            *k = k.index_select(&idx, 0)?;
            *v = v.index_select(&idx, 0)?;
        }
        self.start = rows.iter().map(|&r| self.start[r]).collect();
        Ok(())
    }

    /// A left-padded batch cache: row i copies single-row cache `prefixes[src[i]]`, right-aligned
    /// at column max_len, with `extra` free columns after it. Identical prompts thus share one
    /// prefill.
    pub fn from_prefixes(prefixes: &[KvCache], src: &[usize], extra: usize) -> Result<Self> {
        let first = prefixes
            .first()
            .ok_or_else(|| Error::Other("no prefix caches".into()))?;
        let max_len = src.iter().map(|&u| prefixes[u].len).max().unwrap_or(0);
        let cap = max_len + extra.max(1);
        let idx = Tensor::new(
            src.iter().map(|&u| u as u32).collect::<Vec<_>>(),
            &first.device()?,
        )?;
        let layer = |l: usize| -> Result<(Tensor, Tensor)> {
            let mut ks = Vec::with_capacity(prefixes.len());
            let mut vs = Vec::with_capacity(prefixes.len());
            for p in prefixes {
                let (k, v) = &p.layers[l];
                ks.push(pad_row(k, p.len, max_len, cap)?);
                vs.push(pad_row(v, p.len, max_len, cap)?);
            }
            let k = Tensor::cat(&ks, 0)?.index_select(&idx, 0)?;
            let v = Tensor::cat(&vs, 0)?.index_select(&idx, 0)?;
            Ok((k, v))
        };
        // Copies only. On the CPU a layer per task (serially, a generation's longest serial
        // stretch at large batches: results/perf/step.md, "Decoding keeps the pool awake"); a
        // GPU keeps one thread, whose stream orders the copies after the prefills.
        let n = first.layers.len();
        let layers = if first.device()?.is_cpu() {
            (0..n)
                .into_par_iter()
                .map(layer)
                .collect::<Result<Vec<_>>>()?
        } else {
            (0..n).map(layer).collect::<Result<Vec<_>>>()?
        };
        let start = src.iter().map(|&u| max_len - prefixes[u].len).collect();
        Ok(KvCache {
            layers,
            len: max_len,
            cap,
            start,
        })
    }

    /// Row `r`'s valid columns as a single-row cache in storage of its own, full (capacity =
    /// length): extending it reallocates, so it never writes into storage another cache shares.
    pub fn row(&self, r: usize) -> Result<KvCache> {
        let s = *self
            .start
            .get(r)
            .ok_or_else(|| Error::Other(format!("kv cache has no row {r}")))?;
        self.row_prefix(r, self.len - s)
    }

    /// As [`KvCache::row`], keeping only the row's first `n` valid columns.
    pub fn row_prefix(&self, r: usize, n: usize) -> Result<KvCache> {
        let s = *self
            .start
            .get(r)
            .ok_or_else(|| Error::Other(format!("kv cache has no row {r}")))?;
        if n == 0 || s + n > self.len {
            return Err(Error::Other(format!(
                "kv cache row {r} has {} columns, not {n}",
                self.len - s
            )));
        }
        let copy = |x: &Tensor| -> Result<Tensor> {
            let (_, h, _, d) = x.dims4()?;
            let out = Tensor::zeros((1, h, n, d), x.dtype(), x.device())?;
            out.slice_set(&x.narrow(0, r, 1)?.narrow(2, s, n)?.contiguous()?, 2, 0)?;
            Ok(out)
        };
        let layers = self
            .layers
            .iter()
            .map(|(k, v)| Ok((copy(k)?, copy(v)?)))
            .collect::<Result<Vec<_>>>()?;
        Ok(KvCache {
            layers,
            len: n,
            cap: n,
            start: vec![0],
        })
    }

    fn device(&self) -> Result<Device> {
        match self.layers.first() {
            Some((k, _)) => Ok(k.device().clone()),
            None => Err(Error::Other("kv cache without layers".into())),
        }
    }
}

/// [1, h, cap0, d] with `len` valid columns -> [1, h, cap, d] with them at [max_len - len, max_len).
fn pad_row(x: &Tensor, len: usize, max_len: usize, cap: usize) -> Result<Tensor> {
    let (b, h, _, d) = x.dims4()?;
    let body = x.narrow(2, 0, len)?;
    let mut parts = Vec::with_capacity(3);
    if max_len > len {
        parts.push(Tensor::zeros(
            (b, h, max_len - len, d),
            x.dtype(),
            x.device(),
        )?);
    }
    parts.push(body);
    parts.push(Tensor::zeros(
        (b, h, cap - max_len, d),
        x.dtype(),
        x.device(),
    )?);
    Ok(Tensor::cat(&parts, 2)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn left_padded_batch_masks_and_positions() -> Result<()> {
        let dev = Device::Cpu;
        // Two prompts of lengths 3 and 1; a third row repeats prompt 0.
        let mut a = KvCache::new(1, 1, 1, 2, 4, DType::F32, &dev)?;
        let k = Tensor::ones((1, 1, 3, 2), DType::F32, &dev)?;
        a.append(0, &k, &k)?;
        a.advance(3);
        let mut b = KvCache::new(1, 1, 1, 2, 4, DType::F32, &dev)?;
        let k1 = Tensor::full(2f32, (1, 1, 1, 2), &dev)?;
        b.append(0, &k1, &k1)?;
        b.advance(1);
        let c = KvCache::from_prefixes(&[a, b], &[0, 1, 0], 2)?;
        assert_eq!(c.starts(), &[0, 2, 0]);
        assert_eq!(c.len(), 3);
        // Next token positions: row 0 at 3, row 1 at 1 (its prompt had one token).
        assert_eq!(c.positions(1), vec![3, 1, 3]);
        let m = c.mask(1, None, &dev)?.flatten_all()?.to_vec1::<f32>()?;
        let inf = f32::NEG_INFINITY;
        assert_eq!(m, vec![0., 0., 0., 0., inf, inf, 0., 0., 0., 0., 0., 0.]);
        // Row 1's key sits right-aligned at column 2.
        let (k, _) = &c.layers[0];
        let row1 = k.narrow(0, 1, 1)?.flatten_all()?.to_vec1::<f32>()?;
        assert_eq!(&row1[..6], &[0., 0., 0., 0., 2., 2.]);
        Ok(())
    }

    #[test]
    fn retain_rows_shrinks_batch() -> Result<()> {
        let dev = Device::Cpu;
        let mut c = KvCache::new(2, 3, 1, 2, 2, DType::F32, &dev)?;
        let k = Tensor::arange(0f32, 6., &dev)?.reshape((3, 1, 1, 2))?;
        for l in 0..2 {
            c.append(l, &k, &k)?;
        }
        c.advance(1);
        c.retain_rows(&[2, 0])?;
        assert_eq!(c.batch(), 2);
        let (k, _) = &c.layers[1];
        let got = k.narrow(2, 0, 1)?.flatten_all()?.to_vec1::<f32>()?;
        assert_eq!(got, vec![4., 5., 0., 1.]);
        c.retain_rows(&[])?;
        assert_eq!(c.batch(), 0);
        Ok(())
    }

    #[test]
    fn a_row_is_its_valid_columns_in_storage_of_its_own() -> Result<()> {
        let dev = Device::Cpu;
        let mut a = KvCache::new(1, 1, 1, 1, 3, DType::F32, &dev)?;
        let k = Tensor::new(&[1f32, 2., 3.], &dev)?.reshape((1, 1, 3, 1))?;
        a.append(0, &k, &k)?;
        a.advance(3);
        let mut b = KvCache::new(1, 1, 1, 1, 1, DType::F32, &dev)?;
        let k1 = Tensor::full(9f32, (1, 1, 1, 1), &dev)?;
        b.append(0, &k1, &k1)?;
        b.advance(1);
        let batch = KvCache::from_prefixes(&[a, b], &[0, 1], 2)?;
        let mut row1 = batch.row(1)?;
        assert_eq!((row1.len(), row1.cap, row1.starts()), (1, 1, &[0][..]));
        let row0 = batch.row(0)?;
        let (k, _) = &row0.layers[0];
        assert_eq!(k.flatten_all()?.to_vec1::<f32>()?, vec![1., 2., 3.]);
        // Extending the row leaves the batch cache as it was.
        let x = Tensor::full(5f32, (1, 1, 1, 1), &dev)?;
        let (k, _) = row1.append(0, &x, &x)?;
        assert_eq!(k.flatten_all()?.to_vec1::<f32>()?, vec![9., 5.]);
        let (bk, _) = &batch.layers[0];
        let bk = bk.narrow(0, 1, 1)?.flatten_all()?.to_vec1::<f32>()?;
        assert_eq!(&bk[..4], &[0., 0., 9., 0.]);
        assert!(batch.row(2).is_err());
        let (k, _) = &batch.row_prefix(0, 2)?.layers[0];
        assert_eq!(k.flatten_all()?.to_vec1::<f32>()?, vec![1., 2.]);
        assert!(batch.row_prefix(1, 2).is_err() && batch.row_prefix(0, 0).is_err());
        Ok(())
    }

    #[test]
    fn grows_past_capacity() -> Result<()> {
        let dev = Device::Cpu;
        let mut c = KvCache::new(1, 1, 1, 1, 1, DType::F32, &dev)?;
        for i in 0..3 {
            let x = Tensor::full(i as f32, (1, 1, 1, 1), &dev)?;
            let (k, _) = c.append(0, &x, &x)?;
            c.advance(1);
            assert_eq!(k.dim(2)?, i + 1);
        }
        let (k, _) = &c.layers[0];
        assert_eq!(
            k.narrow(2, 0, 3)?.flatten_all()?.to_vec1::<f32>()?,
            vec![0., 1., 2.]
        );
        Ok(())
    }
}
