//! `lora_linear_train` against the composition `LoraLinear` used before it (frozen_matmul, bias
//! add, the f32 adapter branch), in value and gradient, and on a hand-computed case.

use candle_core::{DType, Device, Result, Tensor, Var};

use super::tests::{max_abs_diff, seeded};
use super::*;

/// y = x W^T (+ b) + s ((x A^T) B^T) from candle ops, as `lora::adapter_train` computes it without
/// dropout.
fn composed(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    a: &Tensor,
    b: &Tensor,
    s: f64,
) -> Result<Tensor> {
    let mut y = frozen_matmul(x, w, None)?;
    if let Some(bias) = bias {
        y = y.broadcast_add(&bias.to_dtype(y.dtype())?)?;
    }
    let d = (x.to_dtype(DType::F32)?.matmul(&a.t()?)? * s)?.matmul(&b.t()?)?;
    y + d.to_dtype(x.dtype())?
}

#[test]
fn lora_linear_hand_computed() -> Result<()> {
    // x = [1, 2], W = I, A = [[1, 1]] (r = 1), B = [[1], [2]], s = 2:
    // x A^T = 3, times s = 6, times B^T = [6, 12]; y = [1 + 6, 2 + 12] = [7, 14].
    // With b = [0.5, -1]: [7.5, 13].
    let dev = Device::Cpu;
    let x = Tensor::new(&[[1f32, 2.]], &dev)?;
    let w = Tensor::new(&[[1f32, 0.], [0., 1.]], &dev)?;
    let a = Tensor::new(&[[1f32, 1.]], &dev)?;
    let b = Tensor::new(&[[1f32], [2.]], &dev)?;
    let bias = Tensor::new(&[0.5f32, -1.], &dev)?;
    let y = lora_linear_train(&x, (&w, None), None, &a, &b, 2.0)?.to_vec2::<f32>()?;
    assert_eq!(y, vec![vec![7., 14.]]);
    let y = lora_linear_train(&x, (&w, None), Some(&bias), &a, &b, 2.0)?.to_vec2::<f32>()?;
    assert_eq!(y, vec![vec![7.5, 13.]]);
    Ok(())
}

/// Values and the gradients of x, A and B equal the composition's bit for bit, with and without
/// a bias, for W row-major and column-major (as `LoraLinear` stores it on the CPU), in f32 (where
/// the CPU adds the adapter into the base product in place, `lora_linear_cpu.rs`) and with a bf16
/// base (the adapter stays f32); small, and large enough for gemm's blocks and threads.
#[test]
fn lora_linear_op_equals_the_composition_bit_for_bit() -> Result<()> {
    for dims in [(37, 24, 40, 4), (130, 600, 200, 16), (2048, 64, 48, 16)] {
        op_equals_the_composition(dims)?;
    }
    Ok(())
}

fn op_equals_the_composition((rows, inp, out, r): (usize, usize, usize, usize)) -> Result<()> {
    let w_rows = seeded(&[out, inp], 41)?;
    let w_cols = w_rows.t()?.contiguous()?.t()?;
    let bias = seeded(&[out], 42)?;
    let a = Var::from_tensor(&seeded(&[r, inp], 43)?)?;
    let b = Var::from_tensor(&seeded(&[out, r], 44)?)?;
    let probe = seeded(&[rows, out], 45)?;
    for dtype in [DType::F32, DType::BF16] {
        for w in [&w_rows, &w_cols] {
            for bias in [None, Some(&bias)] {
                let x = Var::from_tensor(&seeded(&[rows, inp], 46)?.to_dtype(dtype)?)?;
                let w = w.to_dtype(dtype)?;
                let run = |f: &dyn Fn() -> Result<Tensor>| -> Result<(Tensor, Vec<Tensor>)> {
                    let y = f()?;
                    assert_eq!(y.dtype(), dtype);
                    let loss = (y.to_dtype(DType::F32)? * &probe)?.sum_all()?;
                    let g = loss.backward()?;
                    let grads = [x.as_tensor(), a.as_tensor(), b.as_tensor()]
                        .iter()
                        .map(|v| g.get(v).expect("a gradient").to_dtype(DType::F32))
                        .collect::<Result<Vec<_>>>()?;
                    Ok((y.to_dtype(DType::F32)?, grads))
                };
                let s = 2.0;
                let (y_op, g_op) = run(&|| lora_linear_train(&x, (&w, None), bias, &a, &b, s))?;
                let (y_ref, g_ref) = run(&|| composed(&x, &w, bias, &a, &b, s))?;
                assert_eq!(max_abs_diff(&y_op, &y_ref)?, 0.0, "{dtype:?} values");
                for (i, (p, q)) in g_op.iter().zip(&g_ref).enumerate() {
                    assert_eq!(max_abs_diff(p, q)?, 0.0, "{dtype:?} gradient {i}");
                    assert!(p.abs()?.sum_all()?.to_scalar::<f32>()? > 1e-3);
                }
            }
        }
    }
    Ok(())
}

#[test]
fn lora_linear_rejects_shapes_that_do_not_fit() -> Result<()> {
    let x = seeded(&[3, 8], 47)?;
    let w = seeded(&[5, 8], 48)?;
    let a = seeded(&[2, 7], 49)?;
    let b = seeded(&[5, 2], 50)?;
    let e = lora_linear_train(&x, (&w, None), None, &a, &b, 1.0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("do not fit together"), "{e}");
    Ok(())
}
