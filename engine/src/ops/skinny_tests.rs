//! Unit tests of the few-rows matmul (`skinny.rs`): pinned by hand, against candle's matmul, for
//! a weight stored row-major (the vocabulary head) and column-major (`LoraLinear` on the CPU).

use super::skinny::{self, SkinnyMatmul};
use super::tests::{assert_close, same_on_one_thread, seeded, TOL_F32};
use super::*;
use crate::kernels::skinny_simd::Kernels;
use crate::kernels::skinny_simd::Weight;
use candle_core::Device;

/// w [n, k] as stored row-major and as `LoraLinear` stores it on the CPU (column-major).
fn both_layouts(w: &Tensor) -> Result<[Tensor; 2]> {
    Ok([w.clone(), w.t()?.contiguous()?.t()?])
}

/// The op where this CPU runs it; `None` (and a line on stderr) where it lacks AVX-512 and AVX2.
fn kernel() -> Option<SkinnyMatmul> {
    if !skinny::available() {
        eprintln!("skipped: this CPU lacks AVX-512 and AVX2, so `linear_infer` is candle's matmul");
        return None;
    }
    Some(SkinnyMatmul)
}

#[test]
fn pinned_by_hand() -> Result<()> {
    let Some(op) = kernel() else { return Ok(()) };
    // 9 rows by 50 columns: 4 + 4 + 1 rows by blocks of 4 and 2 weight rows (row-major), 8 + 1
    // rows by tiles of 48 columns and a tail (column-major); 1 and 2 rows by 96-column tiles.
    for (m, n) in [(9, 50), (2, 200), (1, 200)] {
        pinned(&op, m, 40, n)?;
    }
    Ok(())
}

/// x[i, t] = i + 1 and w[j, t] = j + t over k: y[i, j] = (i + 1) (k j + k (k - 1) / 2), exact in
/// f32 at these sizes, for both layouts of w.
fn pinned(op: &SkinnyMatmul, m: usize, k: usize, n: usize) -> Result<()> {
    let x = Tensor::from_vec(
        (0..m * k).map(|e| (e / k + 1) as f32).collect(),
        (m, k),
        &Device::Cpu,
    )?;
    let w = Tensor::from_vec(
        (0..n * k).map(|e| (e / k + e % k) as f32).collect(),
        (n, k),
        &Device::Cpu,
    )?;
    let want: Vec<f32> = (0..m * n)
        .map(|e| ((e / n + 1) * (k * (e % n) + k * (k - 1) / 2)) as f32)
        .collect();
    for w in both_layouts(&w)? {
        let y = x.apply_op2_no_bwd(&w, op)?;
        assert_eq!(y.dims(), [m, n]);
        assert_eq!(y.flatten_all()?.to_vec1::<f32>()?, want);
    }
    Ok(())
}

#[test]
fn equals_candles_matmul_up_to_summation_order() -> Result<()> {
    for (m, k, n) in [
        (1, 576, 192),
        (3, 37, 100),
        (8, 96, 150),
        (13, 33, 21),
        (32, 64, 70),
        (96, 70, 100),
    ] {
        let x = seeded(&[m, k], 51)?;
        for w in both_layouts(&seeded(&[n, k], 52)?)? {
            let want = x.matmul(&w.t()?)?;
            assert_close("linear_infer", &linear_infer(&x, &w, None)?, &want, TOL_F32)?;
            assert_close("head_matmul", &head_matmul(&x, &w, None)?, &want, TOL_F32)?;
        }
    }
    Ok(())
}

#[test]
fn column_major_sums_in_order() -> Result<()> {
    let Some(op) = kernel() else { return Ok(()) };
    // Each output of the column-major kernel is one chain of fused multiply-adds over k, in
    // order: the same bits as the scalar chain.
    let (m, k, n) = (5, 70, 53);
    let (x, w) = (seeded(&[m, k], 53)?, seeded(&[n, k], 54)?);
    let (xv, wv) = (x.to_vec2::<f32>()?, w.to_vec2::<f32>()?);
    let want: Vec<f32> = (0..m * n)
        .map(|e| {
            let (xi, wj) = (&xv[e / n], &wv[e % n]);
            xi.iter().zip(wj).fold(0f32, |s, (&a, &b)| a.mul_add(b, s))
        })
        .collect();
    let y = x.apply_op2_no_bwd(&both_layouts(&w)?[1], &op)?;
    assert_eq!(y.flatten_all()?.to_vec1::<f32>()?, want);
    Ok(())
}

#[test]
fn a_row_gets_the_same_bits_alone_or_in_a_batch() -> Result<()> {
    if crate::kernels::choice::portable() {
        return Ok(());
    }
    // A dialogue decodes the same tokens whatever else is in its batch (up to 32 rows; a prefill
    // of up to 96 through the column-major projections): each output is one fixed sequence of
    // operations, whatever the tile or block it falls in.
    let [rows_major, columns_major] = both_layouts(&seeded(&[150, 70], 62)?)?;
    for (w, most) in [(rows_major, 32), (columns_major, 96)] {
        for rows in [2, 3, 8, 13, 32, 33, 96].into_iter().filter(|&r| r <= most) {
            let x = seeded(&[rows, 70], 63)?;
            let batch = linear_infer(&x, &w, None)?;
            for i in [0, rows / 2, rows - 1] {
                let alone = linear_infer(&x.narrow(0, i, 1)?, &w, None)?;
                assert_eq!(
                    batch.get(i)?.to_vec1::<f32>()?,
                    alone.get(0)?.to_vec1::<f32>()?,
                    "row {i} of {rows}"
                );
            }
        }
    }
    Ok(())
}

/// AVX-512's and AVX2's kernels give the same bits for both layouts, at every tile and block
/// shape of each (1-2 rows and more, columns past a tile, k past a multiple of 16).
#[test]
fn every_instruction_set_gives_the_same_bits() -> Result<()> {
    if crate::kernels::choice::portable() {
        return Ok(());
    }
    let all = Kernels::all();
    if all.len() < 2 {
        eprintln!("this CPU runs {} of the op's 2 sets of kernels", all.len());
    }
    let (k, n) = (70, 203);
    let w = seeded(&[n, k], 66)?;
    let wt = w.t()?.contiguous()?.flatten_all()?.to_vec1::<f32>()?;
    let w = w.flatten_all()?.to_vec1::<f32>()?;
    for m in [1, 2, 3, 5, 8, 13, 32, 96] {
        let x = seeded(&[m, k], 67)?.flatten_all()?.to_vec1::<f32>()?;
        for (layout, w, most) in [(Weight::Rows, &w, 32), (Weight::Columns, &wt, 96)] {
            if m > most {
                continue;
            }
            let want = skinny::bands(all[0], &x, w, layout, (m, n, k));
            for &other in &all[1..] {
                let got = skinny::bands(other, &x, w, layout, (m, n, k));
                let same = got
                    .iter()
                    .zip(&want)
                    .filter(|(a, b)| a.to_bits() == b.to_bits());
                assert_eq!(
                    same.count(),
                    m * n,
                    "{} against {}, {m} rows",
                    other.name(),
                    all[0].name()
                );
            }
        }
    }
    Ok(())
}

#[test]
fn same_result_on_one_thread() -> Result<()> {
    let x = seeded(&[8, 96], 55)?;
    for w in both_layouts(&seeded(&[300, 96], 56)?)? {
        same_on_one_thread(|| linear_infer(&x, &w, None)?.flatten_all()?.to_vec1::<f32>())?;
    }
    Ok(())
}

#[test]
fn more_rows_or_other_dtypes_take_candles_matmul() -> Result<()> {
    // Past 32 rows for a row-major w, past 96 for a column-major one (k = 1536: gemm's sums
    // differ from the op's there), or in another dtype.
    let rows_major = seeded(&[40, 24], 58)?;
    let columns_major = both_layouts(&seeded(&[40, 1536], 58)?)?[1].clone();
    for (x, w) in [
        (seeded(&[33, 24], 57)?, &rows_major),
        (seeded(&[97, 1536], 57)?, &columns_major),
        (seeded(&[4, 24], 59)?.to_dtype(DType::F64)?, &rows_major),
    ] {
        let w = w.to_dtype(x.dtype())?;
        let want = x.matmul(&w.t()?)?.flatten_all()?.to_dtype(DType::F64)?;
        let got = linear_infer(&x, &w, None)?
            .flatten_all()?
            .to_dtype(DType::F64)?;
        assert_eq!(got.to_vec1::<f64>()?, want.to_vec1::<f64>()?);
    }
    Ok(())
}

#[test]
fn a_prefill_of_up_to_96_rows_through_a_projection_is_the_op() -> Result<()> {
    let Some(op) = kernel() else { return Ok(()) };
    let w = both_layouts(&seeded(&[150, 1536], 64)?)?[1].clone();
    for rows in [33, 96] {
        let x = seeded(&[rows, 1536], 65)?;
        let want = x
            .apply_op2_no_bwd(&w, &op)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        let got = linear_infer(&x, &w, None)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        assert_eq!(got, want, "{rows} rows");
        let gemm = x.matmul(&w.t()?)?.flatten_all()?.to_vec1::<f32>()?;
        assert_ne!(gemm, want, "{rows} rows: gemm sums as the op does here");
    }
    Ok(())
}

#[test]
fn a_shared_dim_mismatch_is_an_error() -> Result<()> {
    let Some(op) = kernel() else { return Ok(()) };
    let e = seeded(&[2, 8], 60)?
        .apply_op2_no_bwd(&seeded(&[3, 9], 61)?, &op)
        .unwrap_err()
        .to_string();
    assert!(e.contains("disagree on the shared dim"), "{e}");
    Ok(())
}
