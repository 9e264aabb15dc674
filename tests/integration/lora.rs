//! Gradient checks for the training ops (finite differences in f64) and behaviour of LoRA layers:
//! a fresh adapter equals the base, `Off` equals the base, the merged weight reproduces the
//! adapted output (and a merged copy serves inference until dropped; with bf16 products it is the
//! rounded sum, packed), frozen weights receive no
//! gradient, dropout is reproducible from its seed.

use anyhow::Result;
use candle_core::{DType, Device, Tensor, Var};
use empathy_engine::lora::{AdapterMode, LoraConfig, LoraLinear, LoraTarget, Pass};
use empathy_engine::ops::{frozen_matmul, rms_norm_train, rope_train, softmax_train, Bf16Weight};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Deterministic data in [-1, 1) of the given dtype.
fn seeded(dims: &[usize], seed: u64, dtype: DType) -> Result<Tensor> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n: usize = dims.iter().product();
    let v: Vec<f64> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    Ok(Tensor::from_vec(v, dims, &Device::Cpu)?.to_dtype(dtype)?)
}

fn max_abs(t: &Tensor) -> Result<f64> {
    Ok(t.to_dtype(DType::F64)?
        .abs()?
        .flatten_all()?
        .max(0)?
        .to_scalar::<f64>()?)
}

fn max_abs_diff(a: &Tensor, b: &Tensor) -> Result<f64> {
    max_abs(&(a.to_dtype(DType::F64)? - b.to_dtype(DType::F64)?)?)
}

/// Checks d loss / d var against central differences, loss = sum(f() * r) for fixed random r
/// (a plain sum would hide errors: softmax rows always sum to 1).
fn check_grad(
    var: &Var,
    f: &dyn Fn() -> candle_core::Result<Tensor>,
    eps: f64,
    tol: f64,
) -> Result<()> {
    let r = seeded(f()?.dims(), 99, f()?.dtype())?;
    let loss =
        || -> Result<f64> { Ok(f()?.mul(&r)?.sum_all()?.to_dtype(DType::F64)?.to_scalar()?) };
    let grads = f()?.mul(&r)?.sum_all()?.backward()?;
    let analytic = grads
        .get(var)
        .expect("gradient for the checked tensor")
        .clone();
    let base = var
        .as_tensor()
        .flatten_all()?
        .to_dtype(DType::F64)?
        .to_vec1::<f64>()?;
    let (dims, dtype) = (var.dims().to_vec(), var.dtype());
    let mut numeric = Vec::with_capacity(base.len());
    for i in 0..base.len() {
        let mut probe = base.clone();
        probe[i] = base[i] + eps;
        var.set(&Tensor::from_vec(probe.clone(), dims.as_slice(), &Device::Cpu)?.to_dtype(dtype)?)?;
        let up = loss()?;
        probe[i] = base[i] - eps;
        var.set(&Tensor::from_vec(probe, dims.as_slice(), &Device::Cpu)?.to_dtype(dtype)?)?;
        let down = loss()?;
        numeric.push((up - down) / (2.0 * eps));
    }
    var.set(&Tensor::from_vec(base, dims.as_slice(), &Device::Cpu)?.to_dtype(dtype)?)?;
    let numeric = Tensor::from_vec(numeric, dims.as_slice(), &Device::Cpu)?;
    let err = max_abs_diff(&analytic, &numeric)?;
    let scale = max_abs(&numeric)?.max(1e-3);
    assert!(
        err / scale < tol,
        "gradient mismatch: max error {err}, scale {scale}"
    );
    assert!(max_abs(&analytic)? > 0.0, "gradient is all zero");
    Ok(())
}

#[test]
fn rms_norm_train_gradient_matches_finite_differences() -> Result<()> {
    let x = Var::from_tensor(&seeded(&[2, 3, 8], 1, DType::F64)?)?;
    let w = Var::from_tensor(&seeded(&[8], 2, DType::F64)?)?;
    let f = || rms_norm_train(&x, &w, 1e-5);
    check_grad(&x, &f, 1e-6, 1e-6)?;
    check_grad(&w, &f, 1e-6, 1e-6)
}

#[test]
fn rope_train_gradient_matches_finite_differences_both_layouts() -> Result<()> {
    let x = Var::from_tensor(&seeded(&[1, 2, 3, 8], 3, DType::F64)?)?;
    let angles = seeded(&[3, 4], 4, DType::F64)?.affine(3.0, 0.0)?;
    let (cos, sin) = (angles.cos()?, angles.sin()?);
    // Plain rope, and rope times attention's 1/sqrt(d) (the scale of q).
    for interleaved in [true, false] {
        for scale in [1.0, 8f64.sqrt().recip()] {
            let f = || rope_train(&x, &cos, &sin, interleaved, scale);
            check_grad(&x, &f, 1e-6, 1e-6)?;
        }
    }
    Ok(())
}

#[test]
fn softmax_train_gradient_matches_finite_differences() -> Result<()> {
    let x = Var::from_tensor(&seeded(&[2, 3, 5], 5, DType::F64)?.affine(4.0, 0.0)?)?;
    check_grad(&x, &|| softmax_train(&x), 1e-6, 1e-6)
}

#[test]
fn frozen_matmul_input_gradient_matches_finite_differences() -> Result<()> {
    let x = Var::from_tensor(&seeded(&[2, 3, 6], 6, DType::F64)?)?;
    let w = seeded(&[4, 6], 7, DType::F64)?;
    check_grad(&x, &|| frozen_matmul(&x, &w, None), 1e-6, 1e-6)
}

/// A layer [out 6, in 5] with bias and a rank-2 adapter whose B is set non-zero.
fn adapted_layer(nonzero_b: bool) -> Result<LoraLinear> {
    let mut layer = LoraLinear::new(
        seeded(&[6, 5], 10, DType::F32)?,
        Some(seeded(&[6], 11, DType::F32)?),
    )?;
    let cfg = LoraConfig {
        rank: 2,
        alpha: 4.0,
        ..LoraConfig::default()
    };
    layer.attach_adapter(&cfg, &mut ChaCha8Rng::seed_from_u64(12))?;
    if nonzero_b {
        let b = &layer.trainable()[1].1;
        b.set(&seeded(&[6, 2], 13, DType::F32)?)?;
    }
    Ok(layer)
}

/// `layer` with an adapter whose factors are A `a` [rank, in] and B `b` [out, rank], scale
/// `alpha` / rank.
fn with_adapter(mut layer: LoraLinear, a: &Tensor, b: &Tensor, alpha: f64) -> Result<LoraLinear> {
    let cfg = LoraConfig {
        rank: a.dim(0)?,
        alpha,
        ..LoraConfig::default()
    };
    layer.attach_adapter(&cfg, &mut ChaCha8Rng::seed_from_u64(0))?;
    let t = layer.trainable();
    t[0].1.set(a)?;
    t[1].1.set(b)?;
    Ok(layer)
}

#[test]
fn cpu_layer_stores_the_weight_column_major_with_the_same_values_and_outputs() -> Result<()> {
    let w = seeded(&[6, 5], 10, DType::F32)?;
    let layer = LoraLinear::new(w.clone(), None)?;
    // Still [out, in] to every reader, but the buffer is W^T's, so x W^T reads it in place.
    assert_eq!(layer.weight().dims(), &[6, 5]);
    assert!(layer.weight().t()?.is_contiguous());
    assert_eq!(layer.weight().to_vec2::<f32>()?, w.to_vec2::<f32>()?);
    let x = seeded(&[3, 5], 14, DType::F32)?;
    let want = x.matmul(&w.t()?)?;
    for pass in [Pass::Infer, Pass::Train] {
        let got = layer.forward(&x, AdapterMode::Off, pass)?;
        assert!(max_abs_diff(&got, &want)? < 1e-6, "{pass:?}");
    }
    let merged = layer.merged_weight()?;
    assert!(merged.is_contiguous());
    assert_eq!(merged.to_vec2::<f32>()?, w.to_vec2::<f32>()?);
    // Two rows and more: the same bits as the row-major product (a one-row product may differ in
    // the last bits, docs/DESIGN.md "Determinism").
    let (w, x) = (
        seeded(&[96, 64], 15, DType::F32)?,
        seeded(&[16, 64], 16, DType::F32)?,
    );
    let got = LoraLinear::new(w.clone(), None)?.forward(&x, AdapterMode::Off, Pass::Infer)?;
    assert_eq!(got.to_vec2::<f32>()?, x.matmul(&w.t()?)?.to_vec2::<f32>()?);
    Ok(())
}

fn base_output(layer: &LoraLinear, x: &Tensor) -> Result<Tensor> {
    let y = x.broadcast_matmul(&layer.weight().t()?)?;
    Ok(y.broadcast_add(layer.bias().expect("bias"))?)
}

#[test]
fn fresh_adapter_equals_base_and_off_equals_base() -> Result<()> {
    let x = seeded(&[2, 3, 5], 14, DType::F32)?;
    let fresh = adapted_layer(false)?;
    let want = base_output(&fresh, &x)?;
    for pass in [Pass::Infer, Pass::Train] {
        assert!(max_abs_diff(&fresh.forward(&x, AdapterMode::On, pass)?, &want)? < 1e-6);
    }
    let trained = adapted_layer(true)?;
    for pass in [Pass::Infer, Pass::Train] {
        assert!(max_abs_diff(&trained.forward(&x, AdapterMode::Off, pass)?, &want)? < 1e-6);
        assert!(max_abs_diff(&trained.forward(&x, AdapterMode::On, pass)?, &want)? > 1e-3);
    }
    Ok(())
}

#[test]
fn infer_and_train_agree_and_merged_weight_reproduces_adapted_output() -> Result<()> {
    let x = seeded(&[2, 3, 5], 15, DType::F32)?;
    let layer = adapted_layer(true)?;
    let infer = layer.forward(&x, AdapterMode::On, Pass::Infer)?;
    let train = layer.forward(&x, AdapterMode::On, Pass::Train)?;
    assert!(max_abs_diff(&infer, &train)? < 1e-5);
    let merged = LoraLinear::new(layer.merged_weight()?, layer.bias().cloned())?;
    let via_merged = merged.forward(&x, AdapterMode::Off, Pass::Infer)?;
    assert!(max_abs_diff(&infer, &via_merged)? < 1e-5);
    Ok(())
}

#[test]
fn a_merged_layer_infers_with_its_merged_copy_until_it_is_dropped() -> Result<()> {
    let x = seeded(&[2, 3, 5], 16, DType::F32)?;
    let layer = adapted_layer(true)?;
    let adapted = layer.forward(&x, AdapterMode::On, Pass::Infer)?;
    let base = layer.forward(&x, AdapterMode::Off, Pass::Infer)?;
    layer.set_merged(true)?;
    // B changed after merging: inference with the adapter on still reads the merged copy (the
    // old adapter), while Off and the training pass see the base and the new B (= 0).
    layer.trainable()[1]
        .1
        .set(&Tensor::zeros((6, 2), DType::F32, &Device::Cpu)?)?;
    let merged = layer.forward(&x, AdapterMode::On, Pass::Infer)?;
    assert!(max_abs_diff(&merged, &adapted)? < 1e-5);
    assert!(max_abs_diff(&merged, &base)? > 1e-3);
    assert_eq!(
        layer
            .forward(&x, AdapterMode::Off, Pass::Infer)?
            .to_vec3::<f32>()?,
        base.to_vec3::<f32>()?
    );
    assert!(max_abs_diff(&layer.forward(&x, AdapterMode::On, Pass::Train)?, &base)? < 1e-6);
    layer.set_merged(false)?;
    assert!(max_abs_diff(&layer.forward(&x, AdapterMode::On, Pass::Infer)?, &base)? < 1e-6);
    Ok(())
}

#[test]
fn with_bf16_products_a_merged_layer_multiplies_by_the_rounded_sum() -> Result<()> {
    if !Bf16Weight::available() {
        eprintln!("no AVX-512 on this CPU: bf16 products not run");
        return Ok(());
    }
    // Multiples of 1/64 (W) and 1/8 (A, B): W + 2 B A is exact in f32, so the reference below
    // rounds the same sums as the pack does.
    let dyadic = |dims: &[usize], seed: u64, unit: f64| -> Result<Tensor> {
        Ok((seeded(dims, seed, DType::F64)? * (1.0 / unit))?
            .round()?
            .affine(unit, 0.0)?
            .to_dtype(DType::F32)?)
    };
    let (w, bias) = (
        dyadic(&[6, 5], 20, 1.0 / 64.0)?,
        seeded(&[6], 21, DType::F32)?,
    );
    let (a, b) = (
        dyadic(&[2, 5], 22, 1.0 / 8.0)?,
        dyadic(&[6, 2], 23, 1.0 / 8.0)?,
    );
    let mut layer = with_adapter(LoraLinear::new(w.clone(), Some(bias.clone()))?, &a, &b, 4.0)?;
    layer.pack_bf16()?;
    let x = seeded(&[2, 3, 5], 25, DType::F32)?;
    let unmerged = layer.forward(&x, AdapterMode::On, Pass::Infer)?;
    // The merged copy: bf16(bf16(W) + scale B A), the base's bias added after.
    let bf16 = |t: &Tensor| t.to_dtype(DType::BF16)?.to_dtype(DType::F32);
    let sum = bf16(&(bf16(&w)? + (b.matmul(&a)? * 2.0)?)?)?;
    let mut reference = LoraLinear::new(sum, Some(bias))?;
    reference.pack_bf16()?;
    let want = reference.forward(&x, AdapterMode::Off, Pass::Infer)?;
    layer.set_merged(true)?;
    let merged = layer.forward(&x, AdapterMode::On, Pass::Infer)?;
    assert_eq!(merged.to_vec3::<f32>()?, want.to_vec3::<f32>()?);
    // Not the unmerged sum's bits (its adapter term is an f32 product), but close to them.
    let apart = max_abs_diff(&merged, &unmerged)?;
    assert!(apart > 0.0 && apart < 0.05, "{apart}");
    // The training pass never reads the copy; dropping it brings the unmerged products back.
    let train = layer.forward(&x, AdapterMode::On, Pass::Train)?;
    assert!(max_abs_diff(&train, &merged)? > 0.0);
    layer.set_merged(false)?;
    let again = layer.forward(&x, AdapterMode::On, Pass::Infer)?;
    assert_eq!(again.to_vec3::<f32>()?, unmerged.to_vec3::<f32>()?);
    Ok(())
}

#[test]
fn merged_weight_hand_computed() -> Result<()> {
    // W = 0 [1, 2], A = [[1, 2]] (rank 1), B = [[3]], alpha 2 -> scale 2:
    // W + 2 * B A = 2 * [[3, 6]] = [[6, 12]].
    let layer = with_adapter(
        LoraLinear::new(Tensor::zeros((1, 2), DType::F32, &Device::Cpu)?, None)?,
        &Tensor::new(&[[1f32, 2.]], &Device::Cpu)?,
        &Tensor::new(&[[3f32]], &Device::Cpu)?,
        2.0,
    )?;
    assert_eq!(
        layer.merged_weight()?.to_vec2::<f32>()?,
        vec![vec![6., 12.]]
    );
    Ok(())
}

#[test]
fn lora_gradients_reach_both_factors_and_match_finite_differences() -> Result<()> {
    let x = seeded(&[2, 3, 5], 16, DType::F32)?;
    let layer = adapted_layer(true)?;
    let names: Vec<String> = layer.trainable().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["lora_a", "lora_b"]);
    let f = || layer.forward(&x, AdapterMode::On, Pass::Train);
    // f32: the loss is linear in each factor, so central differences are exact up to rounding.
    for (_, var) in layer.trainable() {
        check_grad(&var, &f, 1e-2, 1e-3)?;
    }
    Ok(())
}

#[test]
fn lora_input_gradient_includes_adapter_path() -> Result<()> {
    let xv = Var::from_tensor(&seeded(&[3, 5], 17, DType::F32)?)?;
    let layer = adapted_layer(true)?;
    let grads = layer
        .forward(&xv, AdapterMode::On, Pass::Train)?
        .sum_all()?
        .backward()?;
    // d sum(y) / dx = ones @ (W + scale B A) in every row.
    let want = Tensor::ones((3, 6), DType::F32, &Device::Cpu)?.matmul(&layer.merged_weight()?)?;
    assert!(max_abs_diff(grads.get(&xv).expect("x gradient"), &want)? < 1e-4);
    Ok(())
}

#[test]
fn full_finetune_trains_the_base_weight() -> Result<()> {
    let x = seeded(&[4, 5], 18, DType::F32)?;
    let mut layer = LoraLinear::new(seeded(&[6, 5], 19, DType::F32)?, None)?;
    assert!(layer.trainable().is_empty());
    let before = layer.forward(&x, AdapterMode::On, Pass::Infer)?;
    layer.make_base_trainable()?;
    let t = layer.trainable();
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].0, "weight");
    let y = layer.forward(&x, AdapterMode::On, Pass::Train)?;
    assert!(max_abs_diff(&before, &y)? < 1e-6);
    let grads = y.sum_all()?.backward()?;
    // d sum(x W^T) / dW = ones [6, 4] @ x [4, 5].
    let want = Tensor::ones((6, 4), DType::F32, &Device::Cpu)?.matmul(&x)?;
    assert!(max_abs_diff(grads.get(&t[0].1).expect("weight gradient"), &want)? < 1e-5);
    Ok(())
}

#[test]
fn adapter_init_is_seeded_and_bounded() -> Result<()> {
    let make = |seed| -> Result<Vec<f32>> {
        let mut layer = LoraLinear::new(Tensor::zeros((8, 16), DType::F32, &Device::Cpu)?, None)?;
        layer.attach_adapter(&LoraConfig::default(), &mut ChaCha8Rng::seed_from_u64(seed))?;
        let t = layer.trainable();
        assert_eq!(t[0].1.dims(), &[16, 16]);
        assert_eq!(t[1].1.dims(), &[8, 16]);
        assert_eq!(max_abs(t[1].1.as_tensor())?, 0.0, "B starts at zero");
        Ok(t[0].1.flatten_all()?.to_vec1::<f32>()?)
    };
    let (a1, a2, a3) = (make(1)?, make(1)?, make(2)?);
    assert_eq!(a1, a2);
    assert_ne!(a1, a3);
    // Kaiming-uniform bound 1 / sqrt(in) = 1 / sqrt(16) = 0.25.
    assert!(a1.iter().all(|v| v.abs() <= 0.25));
    assert!(a1.iter().any(|v| v.abs() > 0.2));
    Ok(())
}

#[test]
fn dropout_masks_are_reproducible_from_the_seed() -> Result<()> {
    let x = seeded(&[4, 3, 5], 20, DType::F32)?;
    let mut layer = adapted_layer(true)?;
    let cfg = LoraConfig {
        rank: 2,
        alpha: 4.0,
        dropout: 0.5,
        targets: vec![LoraTarget::Q],
    };
    layer.attach_adapter(&cfg, &mut ChaCha8Rng::seed_from_u64(21))?;
    layer.trainable()[1]
        .1
        .set(&seeded(&[6, 2], 22, DType::F32)?)?;
    let run = |seed| -> Result<Tensor> {
        layer.set_dropout_seed(seed)?;
        Ok(layer.forward(&x, AdapterMode::On, Pass::Train)?)
    };
    let (y1, y2, y3) = (run(7)?, run(7)?, run(8)?);
    assert_eq!(max_abs_diff(&y1, &y2)?, 0.0);
    assert!(max_abs_diff(&y1, &y3)? > 1e-4);
    let infer = layer.forward(&x, AdapterMode::On, Pass::Infer)?;
    assert!(
        max_abs_diff(&y1, &infer)? > 1e-4,
        "dropout acts while training only"
    );
    Ok(())
}

#[test]
fn lora_config_defaults_and_yaml() -> Result<()> {
    let cfg = LoraConfig::default();
    assert_eq!((cfg.rank, cfg.alpha, cfg.dropout), (16, 32.0, 0.0));
    assert_eq!(cfg.targets, LoraTarget::ALL.to_vec());
    assert_eq!(cfg.scale(), 2.0);
    let parsed: LoraConfig = serde_yaml::from_str("rank: 8\ntargets: [q, v, gate]\n")?;
    assert_eq!(parsed.rank, 8);
    assert_eq!(parsed.alpha, 32.0);
    assert_eq!(
        parsed.targets,
        [LoraTarget::Q, LoraTarget::V, LoraTarget::Gate]
    );
    assert!(serde_yaml::from_str::<LoraConfig>("rnak: 8\n").is_err());
    let bad = LoraConfig {
        dropout: 1.0,
        ..LoraConfig::default()
    };
    assert!(bad.check().is_err());
    let mut layer = LoraLinear::new(Tensor::zeros((2, 2), DType::F32, &Device::Cpu)?, None)?;
    assert!(layer
        .attach_adapter(&bad, &mut ChaCha8Rng::seed_from_u64(0))
        .is_err());
    Ok(())
}

#[test]
fn lora_training_pass_stores_no_gradient_for_the_frozen_base() -> Result<()> {
    let x = Var::from_tensor(&seeded(&[3, 5], 23, DType::F32)?)?;
    let layer = adapted_layer(true)?;
    let grads = layer
        .forward(&x, AdapterMode::On, Pass::Train)?
        .sum_all()?
        .backward()?;
    assert!(grads.get(layer.weight()).is_none());
    assert!(grads.get(&x).is_some());
    // The reason frozen_matmul exists: candle's plain matmul stores a gradient for a weight that
    // is not even a Var (here through the transposed view it multiplies by).
    let wt = layer.weight().t()?;
    let grads = x.as_tensor().matmul(&wt)?.sum_all()?.backward()?;
    assert!(grads.get(&wt).is_some());
    Ok(())
}
