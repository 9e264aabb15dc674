//! Unit tests of the decode attention op (`decode_attention.rs`): pinned by hand, and against the
//! composition on KV-cache views with a mask per row.

use super::decode_attention::DecodeAttention;
#[cfg(feature = "cpu-kernels")]
use super::tests::{assert_close, TOL_F32};
use super::tests::{same_on_one_thread, seeded};
use super::*;
use candle_core::Device;

/// q [2, 2, 3 r, 8] (two rows, two KV heads of three query heads, r new positions), and k, v
/// [2, 2, n, 8] narrowed from a longer cache [2, 2, n + 9, 8], so that they are strided views as
/// the KV cache hands them over.
fn inputs(r: usize, n: usize) -> Result<[Tensor; 3]> {
    let (b, g, rep, d) = (2, 2, 3, 8);
    let cache = |seed| -> Result<Tensor> { seeded(&[b, g, n + 9, d], seed)?.narrow(2, 0, n) };
    Ok([
        seeded(&[b, g, rep * r, d], 41)?.affine(3.0, 0.0)?,
        cache(42)?,
        cache(43)?,
    ])
}

/// A mask per row [2, 1, 1, r, n]: row 0 sees every key up to its position; row 1 is
/// left-padded by 7 keys and hides every fifth key inside its range; the visible entries add
/// 0, 0.25 or 0.5.
fn per_row_mask(r: usize, n: usize) -> Result<Tensor> {
    let m: Vec<f32> = (0..2 * r * n)
        .map(|i| {
            let (row, p, c) = (i / (r * n), i / n % r, i % n);
            let last = n - r + p;
            let open = match row {
                0 => c <= last,
                _ => (7..=last).contains(&c) && (c % 5 != 3 || c == last),
            };
            if open {
                0.25 * (c % 3) as f32
            } else {
                f32::NEG_INFINITY
            }
        })
        .collect();
    Tensor::from_vec(m, (2, 1, 1, r, n), &Device::Cpu)
}

/// The op itself, for any r (`attention_infer` takes it for r = 1 only).
fn decode_op(q: &Tensor, k: &Tensor, v: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let (r, n) = (mask.dim(D::Minus2)?, mask.dim(D::Minus1)?);
    let op = DecodeAttention {
        mask: mask
            .reshape(((), r, n))?
            .to_dtype(q.dtype())?
            .contiguous()?,
    };
    q.apply_op3_no_bwd(k, v, &op)
}

#[test]
fn decode_attention_hand_computed() -> Result<()> {
    // One KV head of one query head, d = 1, two rows over keys k = [0, ln 3], q = 2.
    // Row 0 sees both: scores [0, 2 ln 3] -> softmax [1/10, 9/10], y = 0.1 * 10 + 0.9 * 20 = 19.
    // Row 1 is left-padded (key 0 hidden): y = its v of key 1 = 30.
    let dev = Device::Cpu;
    let q = Tensor::new(&[2f32, 2.], &dev)?.reshape((2, 1, 1, 1))?;
    let k = Tensor::new(&[0f32, 3f32.ln(), 0., 3f32.ln()], &dev)?.reshape((2, 1, 2, 1))?;
    let v = Tensor::new(&[10f32, 20., 100., 30.], &dev)?.reshape((2, 1, 2, 1))?;
    let mask = Tensor::new(&[0f32, 0., f32::NEG_INFINITY, 0.], &dev)?.reshape((2, 1, 1, 1, 2))?;
    let y = attention_infer(&q, &k, &v, &mask)?
        .flatten_all()?
        .to_vec1::<f32>()?;
    assert!(
        (y[0] - 19.0).abs() < 1e-5 && (y[1] - 30.0).abs() < 1e-5,
        "{y:?}"
    );
    Ok(())
}

/// On the KV cache's strided views, with a mask per row (left padding, keys hidden inside the
/// range) and with one mask shared by the rows: the composition's values, for one new position
/// (through `attention_infer`) and for two (the op directly: query rows p and r + p of a group
/// belong to different heads).
#[cfg(feature = "cpu-kernels")]
#[test]
fn decode_attention_agrees_with_the_composition() -> Result<()> {
    if crate::kernels::choice::portable() {
        return Ok(());
    }
    let n = 40;
    for r in [1, 2] {
        let [q, k, v] = inputs(r, n)?;
        assert!(!k.is_contiguous() && !v.is_contiguous());
        let shared = per_row_mask(r, n)?.narrow(0, 0, 1)?;
        for mask in [per_row_mask(r, n)?, shared] {
            let want = attention_infer_composed(&q, &k, &v, &mask)?;
            let got = decode_op(&q, &k, &v, &mask)?;
            assert_eq!(got.dims(), want.dims());
            assert_close(&format!("r = {r}"), &got, &want, TOL_F32)?;
            if r == 1 {
                let routed = attention_infer(&q, &k, &v, &mask)?;
                assert_eq!(routed.to_vec3::<f32>()?, got.to_vec3::<f32>()?);
            }
        }
    }
    Ok(())
}

/// f64 through the same op agrees with the composition to f64 rounding.
#[test]
fn decode_attention_in_f64() -> Result<()> {
    let x = inputs(1, 40)?.map(|x| x.to_dtype(DType::F64).expect("f64"));
    let mask = per_row_mask(1, 40)?.to_dtype(DType::F64)?;
    let diff = (decode_op(&x[0], &x[1], &x[2], &mask)?
        - attention_infer_composed(&x[0], &x[1], &x[2], &mask)?)?
    .abs()?
    .flatten_all()?
    .max(0)?
    .to_scalar::<f64>()?;
    assert!(diff < 1e-12, "{diff}");
    Ok(())
}

/// Each output is made by one task in a fixed order: one thread and the default pool give the
/// same bits.
#[test]
fn decode_attention_does_not_depend_on_the_thread_count() -> Result<()> {
    let [q, k, v] = inputs(1, 40)?;
    let mask = per_row_mask(1, 40)?;
    let run = || -> Result<Vec<f32>> { decode_op(&q, &k, &v, &mask)?.flatten_all()?.to_vec1() };
    same_on_one_thread(run)
}

#[test]
fn decode_attention_rejects_a_mask_for_another_batch() -> Result<()> {
    let [q, k, v] = inputs(1, 40)?;
    let three = Tensor::zeros((3, 1, 40), DType::F32, &Device::Cpu)?;
    let e = decode_op(&q, &k, &v, &three).unwrap_err().to_string();
    assert!(
        e.contains("attention_decode: a mask [1 or 2, r, 40]"),
        "{e}"
    );
    Ok(())
}
