//! CUDA against CPU (built only with `--features cuda`, needs a GPU): the device opens
//! with the project's allocator settings (`model::gpu`); every training op
//! with a hand-written backward (the CPU kernels against the lean ops CUDA runs), the LoRA layer
//! and the whole tiny model's log-probabilities and LoRA gradients agree with the CPU result, in
//! f32 and with bf16 base weights; greedy generation through LoRA adapters (merged on the GPU)
//! picks the same tokens; a GGUF loads straight onto the GPU; the simulator's sentence embedder
//! (the real all-MiniLM-L6-v2: `scripts/gpu/run.sh quickstart` runs that test once the models are
//! staged) matches the CPU and gives a text the same bits in any batch; AdamW's flat update on
//! the GPU matches its update one parameter at a time on the CPU.
//!
//! Tolerances: f32 on the GPU differs from the CPU only in summation order (TF32 is off in
//! candle by default), so 1e-4 relative to the largest magnitude. bf16 keeps 8 bits of mantissa
//! (relative step 2^-8 = 0.0039); after a handful of ops 3e-2 relative is the stated bound.

use anyhow::{Context, Result};
use candle_core::{DType, Device, Tensor, Var};
use empathy_engine::lora::{AdapterMode, LoraConfig, LoraLinear, Pass};
use empathy_engine::ops::{
    attention_train, frozen_embedding, frozen_matmul, lora_linear_train, rms_norm_train,
    rope_train, softmax_train, swiglu_train, target_logprobs,
};
use empathy_gym::model::{load_model, ChatMessage, LoadOptions, Role, SamplingParams};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::model_fixtures::{write_gguf, write_hf, TinySpec};

const F32_TOL: f64 = 1e-4;
const BF16_TOL: f64 = 3e-2;

fn gpu() -> Result<Device> {
    empathy_gym::model::open_cuda(0)
        .context("built with --features cuda but no CUDA device 0 is usable")
}

fn seeded(dims: &[usize], seed: u64) -> Result<Tensor> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n: usize = dims.iter().product();
    let v: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    Ok(Tensor::from_vec(v, dims, &Device::Cpu)?)
}

fn max_abs(t: &Tensor) -> Result<f64> {
    Ok(t.to_dtype(DType::F64)?
        .abs()?
        .flatten_all()?
        .max(0)?
        .to_scalar::<f64>()?)
}

/// max |a - b| / max(max |a|, 1e-6), both moved to the CPU in f64.
fn rel_diff(a: &Tensor, b: &Tensor) -> Result<f64> {
    let a = a.to_device(&Device::Cpu)?.to_dtype(DType::F64)?;
    let b = b.to_device(&Device::Cpu)?.to_dtype(DType::F64)?;
    Ok(max_abs(&(&a - &b)?)? / max_abs(&a)?.max(1e-6))
}

fn tol(dtype: DType) -> f64 {
    if dtype == DType::F32 {
        F32_TOL
    } else {
        BF16_TOL
    }
}

/// Runs `f` on (x, extra tensors) on the CPU in f32 and on the GPU in `dtype`; compares the
/// output and the gradient of sum(y * r) with respect to x (r fixed random).
fn compare_op(
    name: &str,
    x: &Tensor,
    extra: &[Tensor],
    dtype: DType,
    f: &dyn Fn(&Tensor, &[Tensor]) -> candle_core::Result<Tensor>,
) -> Result<()> {
    let dev = gpu()?;
    let run = |device: &Device, dt: DType| -> Result<(Tensor, Tensor)> {
        let xv = Var::from_tensor(&x.to_device(device)?.to_dtype(dt)?)?;
        let ex: Vec<Tensor> = extra
            .iter()
            .map(|t| t.to_device(device)?.to_dtype(dt))
            .collect::<candle_core::Result<_>>()?;
        let y = f(xv.as_tensor(), &ex)?;
        let r = seeded(y.dims(), 77)?.to_device(device)?.to_dtype(dt)?;
        let grads = (y.to_dtype(DType::F32)? * r.to_dtype(DType::F32)?)?
            .sum_all()?
            .backward()?;
        let g = grads
            .get(xv.as_tensor())
            .with_context(|| format!("{name}: no gradient for x on {device:?}"))?
            .clone();
        Ok((y, g))
    };
    let (y_cpu, g_cpu) = run(&Device::Cpu, DType::F32)?;
    let (y_gpu, g_gpu) = run(&dev, dtype)?;
    let (dy, dg) = (rel_diff(&y_cpu, &y_gpu)?, rel_diff(&g_cpu, &g_gpu)?);
    assert!(
        dy < tol(dtype) && dg < tol(dtype),
        "{name} {dtype:?}: output differs by {dy:.2e}, gradient by {dg:.2e} (tolerance {:.0e})",
        tol(dtype)
    );
    Ok(())
}

#[test]
fn the_gpu_opens_with_the_allocators_settings_and_keeps_freed_memory_in_its_pool() -> Result<()> {
    let dev = gpu()?;
    assert!(
        empathy_engine::gpu::allocator_settings_applied(&dev)?,
        "event tracking off and the pool's release threshold at u64::MAX (engine/src/gpu.rs)"
    );
    // Memory freed and synchronized stays in the pool (at candle's threshold 0 the driver would
    // take it back at the synchronization).
    let bytes = 256u64 << 20;
    let x = Tensor::ones(bytes as usize / 4, DType::F32, &dev)?;
    assert_eq!(
        x.sum_all()?.to_dtype(DType::F64)?.to_scalar::<f64>()?,
        (bytes / 4) as f64
    );
    drop(x);
    dev.synchronize()?;
    // cudarc allocates from the pool (cuMemAllocAsync) wherever the driver has memory pools,
    // as the data-center GPUs the project runs on do.
    let reserved = empathy_engine::gpu::pool_reserved_bytes(&dev)?
        .context("cudarc allocates from the device's memory pool")?;
    assert!(
        reserved >= bytes,
        "{reserved} bytes reserved after freeing {bytes}"
    );
    // The pool's high-water mark of memory in use (the model benchmark's tensor peak): at least
    // the 256 MiB tensor before a reset, less after it, at least a new 64 MiB tensor then.
    let high = |what: &str| -> Result<u64> {
        empathy_engine::gpu::pool_used_high_bytes(&dev)?
            .with_context(|| format!("the pool's high-water mark {what}"))
    };
    assert!(high("before the reset")? >= bytes);
    empathy_engine::gpu::reset_pool_used_high(&dev)?;
    let small = Tensor::ones(16 << 20, DType::F32, &dev)?;
    dev.synchronize()?;
    let after = high("after the reset")?;
    assert!(
        ((64 << 20)..bytes).contains(&after),
        "{after} bytes in use at most since the reset, with one 64 MiB tensor"
    );
    drop(small);
    assert!(!empathy_engine::gpu::allocator_settings_applied(
        &Device::Cpu
    )?);
    Ok(())
}

/// AdamW updates a GPU's parameters as one flat chunk and a CPU's one parameter at a time
/// (optimize::adamw): the same steps, with clipping and parameters of three sizes, agree, and so do
/// their states, the GPU's through a checkpoint's bytes.
#[test]
fn adamw_on_the_gpu_in_one_chunk_matches_the_cpu_one_parameter_at_a_time() -> Result<()> {
    use candle_core::backprop::GradStore;
    use empathy_gym::learning::optimize::adamw::{AdamW, AdamWConfig, AdamWState, StepOutcome};
    let dev = gpu()?;
    let shapes: [(&str, &[usize]); 5] = [
        ("l0.a", &[16, 64]),
        ("l0.b", &[64, 16]),
        ("l0.norm", &[8]),
        ("l1.a", &[16, 64]),
        ("l1.b", &[64, 16]),
    ];
    let mut cpu_vars = Vec::new();
    let mut gpu_vars = Vec::new();
    for (k, (name, dims)) in shapes.iter().enumerate() {
        let t = seeded(dims, 40 + k as u64)?;
        cpu_vars.push((name.to_string(), Var::from_tensor(&t)?));
        gpu_vars.push((name.to_string(), Var::from_tensor(&t.to_device(&dev)?)?));
    }
    let cfg = AdamWConfig {
        lr: 1e-2,
        ..AdamWConfig::default()
    };
    let mut on_cpu = AdamW::new(cpu_vars.clone(), cfg)?;
    let mut on_gpu = AdamW::new(gpu_vars.clone(), cfg)?;
    for step in 0..3u64 {
        let (mut cpu_grads, mut gpu_grads) = (GradStore::default(), GradStore::default());
        for (k, (name, dims)) in shapes.iter().enumerate() {
            let g = (seeded(dims, 100 * step + k as u64)? * 3.0)?; // norm ~40: clipped to 1
            let (_, cv) = &cpu_vars[k];
            let (gname, gv) = &gpu_vars[k];
            assert_eq!(gname, name);
            gpu_grads.insert(gv.as_tensor(), g.to_device(&dev)?);
            cpu_grads.insert(cv.as_tensor(), g);
        }
        let (c, g) = (on_cpu.step(1.0, &cpu_grads)?, on_gpu.step(1.0, &gpu_grads)?);
        let (
            StepOutcome::Applied {
                grad_norm: nc,
                clipped: true,
                ..
            },
            StepOutcome::Applied { grad_norm: ng, .. },
        ) = (&c, &g)
        else {
            panic!("both steps apply and clip: {c:?} / {g:?}");
        };
        assert!(
            (nc - ng).abs() <= 1e-9 * nc,
            "norm {nc} on the CPU, {ng} on the GPU"
        );
        for ((name, cv), (_, gv)) in cpu_vars.iter().zip(&gpu_vars) {
            let d = rel_diff(cv.as_tensor(), gv.as_tensor())?;
            assert!(d < F32_TOL, "step {step}, {name}: weights {d:.2e} apart");
        }
    }
    // The GPU's state as a checkpoint writes and reads it back on the CPU.
    let src = std::path::Path::new("optimizer.safetensors");
    let sg = AdamWState::from_bytes(&on_gpu.state()?.to_bytes()?, &Device::Cpu, src)?;
    let sc = on_cpu.state()?;
    assert_eq!(sg.step, 3);
    for (name, _) in &cpu_vars {
        for (a, b) in [(&sc.m[name], &sg.m[name]), (&sc.v[name], &sg.v[name])] {
            let d = rel_diff(a, b)?;
            assert!(d < F32_TOL, "{name}: moments {d:.2e} apart");
        }
    }
    Ok(())
}

#[test]
fn training_ops_match_the_cpu_in_value_and_gradient() -> Result<()> {
    let x = seeded(&[2, 3, 5, 16], 1)?;
    let w = seeded(&[16], 2)?;
    let cos = seeded(&[5, 8], 3)?;
    let sin = seeded(&[5, 8], 4)?;
    let proj = seeded(&[24, 16], 5)?;
    for dtype in [DType::F32, DType::BF16] {
        compare_op(
            "rms_norm_train",
            &x,
            std::slice::from_ref(&w),
            dtype,
            &|x, e| rms_norm_train(x, &e[0], 1e-5),
        )?;
        for (interleaved, scale) in [true, false].into_iter().flat_map(|i| [(i, 1.0), (i, 0.3)]) {
            compare_op(
                "rope_train",
                &x,
                &[cos.clone(), sin.clone()],
                dtype,
                &|x, e| rope_train(x, &e[0], &e[1], interleaved, scale),
            )?;
        }
        compare_op("softmax_train", &x, &[], dtype, &|x, _| softmax_train(x))?;
        compare_op(
            "frozen_matmul",
            &x,
            std::slice::from_ref(&proj),
            dtype,
            &|x, e| frozen_matmul(x, &e[0], None),
        )?;
        // The portable ops (engine/src/ops/portable.rs): grouped-query heads (3 query heads per KV head,
        // t = 5) under a causal mask; SwiGLU; the token log-prob (in f32 whatever the dtype).
        let (q, k) = (seeded(&[2, 2, 15, 8], 6)?, seeded(&[2, 2, 5, 8], 7)?);
        let causal = Tensor::from_vec(
            (0..25)
                .map(|i| {
                    if i % 5 > i / 5 {
                        f32::NEG_INFINITY
                    } else {
                        0.0
                    }
                })
                .collect::<Vec<f32>>(),
            (5, 5),
            &Device::Cpu,
        )?;
        let v = seeded(&[2, 2, 5, 8], 9)?;
        // Each of q, k and v in turn as x: the lean op recomputes the probabilities for all
        // three gradients.
        compare_op(
            "attention_train (q)",
            &q,
            &[k.clone(), v.clone(), causal.clone()],
            dtype,
            &|q, e| attention_train(q, &e[0], &e[1], &e[2]),
        )?;
        compare_op(
            "attention_train (k)",
            &k,
            &[q.clone(), v.clone(), causal.clone()],
            dtype,
            &|k, e| attention_train(&e[0], k, &e[1], &e[2]),
        )?;
        compare_op(
            "attention_train (v)",
            &v,
            &[q, k, causal],
            dtype,
            &|v, e| attention_train(&e[0], &e[1], v, &e[2]),
        )?;
        compare_op(
            "swiglu_train",
            &x,
            &[x.affine(-0.5, 0.3)?],
            dtype,
            &|x, e| swiglu_train(x, &e[0]),
        )?;
        let logits = seeded(&[6, 300], 8)?.affine(8.0, 0.0)?;
        let targets = Tensor::new(&[0u32, 299, 17, 17, 150, 3], &Device::Cpu)?;
        compare_op("target_logprobs", &logits, &[], dtype, &|x, _| {
            target_logprobs(x, &targets.to_device(x.device())?)
        })?;
        // One LoRA projection with a bias (x's gradient here; A's and B's in the layer test).
        let (a, b, bias) = (
            seeded(&[4, 16], 9)?,
            seeded(&[24, 4], 10)?,
            seeded(&[24], 11)?,
        );
        compare_op(
            "lora_linear_train",
            &x.reshape((30, 16))?,
            &[proj.clone(), bias],
            dtype,
            &|x, e| {
                let (a, b) = (a.to_device(x.device())?, b.to_device(x.device())?);
                lora_linear_train(x, (&e[0], None), Some(&e[1]), &a, &b, 2.0)
            },
        )?;
    }
    Ok(())
}

#[test]
fn frozen_embedding_gathers_the_same_rows_and_gives_the_table_no_gradient() -> Result<()> {
    let dev = gpu()?;
    let table = seeded(&[50, 8], 6)?;
    let ids = Tensor::new(&[[3u32, 7, 49], [0, 3, 12]], &Device::Cpu)?;
    let on_cpu = frozen_embedding(&ids, &table)?;
    let table_var = Var::from_tensor(&table.to_device(&dev)?)?;
    let on_gpu = frozen_embedding(&ids.to_device(&dev)?, table_var.as_tensor())?;
    assert_eq!(rel_diff(&on_cpu, &on_gpu)?, 0.0);
    let grads = on_gpu.sum_all()?.backward()?;
    assert!(grads.get(table_var.as_tensor()).is_none());
    Ok(())
}

/// A [24, 16] layer with bias and a rank-4 adapter whose B is non-zero, on `device`.
fn lora_layer(device: &Device, dtype: DType) -> Result<LoraLinear> {
    let mut layer = LoraLinear::new(
        seeded(&[24, 16], 10)?.to_device(device)?.to_dtype(dtype)?,
        Some(seeded(&[24], 11)?.to_device(device)?.to_dtype(dtype)?),
    )?;
    let cfg = LoraConfig {
        rank: 4,
        alpha: 8.0,
        ..LoraConfig::default()
    };
    layer.attach_adapter(&cfg, &mut ChaCha8Rng::seed_from_u64(12))?;
    layer.trainable()[1]
        .1
        .set(&seeded(&[24, 4], 13)?.to_device(device)?)?;
    Ok(layer)
}

#[test]
fn lora_layer_matches_the_cpu_in_value_and_adapter_gradients() -> Result<()> {
    let dev = gpu()?;
    let x = seeded(&[3, 7, 16], 14)?;
    let run = |device: &Device, dtype: DType| -> Result<Vec<Tensor>> {
        let layer = lora_layer(device, dtype)?;
        let y = layer.forward(
            &x.to_device(device)?.to_dtype(dtype)?,
            AdapterMode::On,
            Pass::Train,
        )?;
        let grads = y.to_dtype(DType::F32)?.sqr()?.sum_all()?.backward()?;
        let mut out = vec![y];
        for (name, var) in layer.trainable() {
            out.push(
                grads
                    .get(var.as_tensor())
                    .with_context(|| format!("{name} has no gradient on {device:?}"))?
                    .clone(),
            );
        }
        Ok(out)
    };
    let cpu = run(&Device::Cpu, DType::F32)?;
    for dtype in [DType::F32, DType::BF16] {
        let gpu = run(&dev, dtype)?;
        for (i, (a, b)) in cpu.iter().zip(&gpu).enumerate() {
            let d = rel_diff(a, b)?;
            assert!(
                d < tol(dtype),
                "lora {dtype:?} tensor {i} (0 = output, then lora_a, lora_b) differs by {d:.2e}"
            );
        }
    }
    Ok(())
}

/// Sets every lora_b of `m` to the same seeded values on whatever device it lives on.
fn randomize_lora_b(m: &empathy_gym::model::ChatModel, seed: u64) -> Result<()> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for (name, var) in m.trainable() {
        if name.ends_with("lora_b") {
            let v: Vec<f32> = (0..var.elem_count())
                .map(|_| rng.random_range(-0.2f32..0.2))
                .collect();
            var.set(&Tensor::from_vec(v, var.shape(), var.device())?)?;
        }
    }
    Ok(())
}

#[test]
fn tiny_model_logprobs_and_lora_gradients_match_the_cpu() -> Result<()> {
    let dev = gpu()?;
    for spec in [TinySpec::llama(), TinySpec::qwen2()] {
        let dir = tempfile::tempdir()?;
        write_hf(dir.path(), &spec)?;
        let run = |device: &Device, dtype: DType| -> Result<(Tensor, Vec<(String, Tensor)>)> {
            let opts = LoadOptions {
                lora: Some(LoraConfig {
                    rank: 4,
                    ..LoraConfig::default()
                }),
                seed: 3,
                dtype,
                ..LoadOptions::default()
            };
            let m = load_model(dir.path(), device, &opts)?;
            randomize_lora_b(&m, 5)?;
            let user = |t: &str| vec![ChatMessage::new(Role::User, t)];
            let batch = vec![
                m.encode_chat(&user("hello there, hello"), true)?,
                m.encode_chat(&user("12"), false)?,
            ];
            let lp = m.token_logprobs(&batch, AdapterMode::On, Pass::Train)?;
            let grads = lp.sum_all()?.backward()?;
            let mut g = Vec::new();
            for (name, var) in m.trainable() {
                let t = grads
                    .get(var.as_tensor())
                    .with_context(|| format!("{name} has no gradient on {device:?}"))?;
                g.push((name, t.clone()));
            }
            Ok((lp, g))
        };
        let (lp_cpu, g_cpu) = run(&Device::Cpu, DType::F32)?;
        // bf16 weights round every activation. The CPU running the same model in bf16 (the lean
        // ops CUDA runs) is itself up to 1.3e-1 away from f32 in some LoRA gradients of these
        // models, so in bf16 the GPU may be as far from f32 as twice the CPU's own
        // bf16 distance, and never less than 1e-1; in f32 it must agree to 1e-3.
        let (lp_cpu16, g_cpu16) = run(&Device::Cpu, DType::BF16)?;
        for dtype in [DType::F32, DType::BF16] {
            let (lp_gpu, g_gpu) = run(&dev, dtype)?;
            let bound = |f32_cpu: &Tensor, bf16_cpu: &Tensor| -> Result<f64> {
                Ok(match dtype {
                    DType::F32 => 1e-3,
                    _ => (2.0 * rel_diff(f32_cpu, bf16_cpu)?).max(1e-1),
                })
            };
            let (d, b) = (rel_diff(&lp_cpu, &lp_gpu)?, bound(&lp_cpu, &lp_cpu16)?);
            assert!(
                d < b,
                "{spec:?} {dtype:?}: log-probs differ by {d:.2e} (bound {b:.2e})"
            );
            for (((name, a), (_, g)), (_, c16)) in g_cpu.iter().zip(&g_gpu).zip(&g_cpu16) {
                let (d, b) = (rel_diff(a, g)?, bound(a, c16)?);
                assert!(
                    d < b,
                    "{spec:?} {dtype:?}: gradient of {name} differs by {d:.2e} (bound {b:.2e})"
                );
            }
        }
    }
    Ok(())
}

#[test]
fn greedy_generation_with_adapters_on_the_gpu_picks_the_cpu_tokens_and_gguf_loads_there(
) -> Result<()> {
    let dev = gpu()?;
    let dir = tempfile::tempdir()?;
    let spec = TinySpec::llama();
    write_hf(dir.path(), &spec)?;
    let gguf = dir.path().join("tiny.gguf");
    write_gguf(&gguf, &spec)?;
    let params = SamplingParams {
        greedy: true,
        max_new_tokens: 12,
        ..SamplingParams::default()
    };
    for path in [dir.path().to_path_buf(), gguf] {
        let generate = |device: &Device| -> Result<Vec<Vec<u32>>> {
            // With adapters: on the GPU, generation decodes with them merged into the weights.
            let opts = LoadOptions {
                lora: Some(LoraConfig {
                    rank: 4,
                    ..LoraConfig::default()
                }),
                seed: 3,
                ..LoadOptions::default()
            };
            let m = load_model(&path, device, &opts)?;
            randomize_lora_b(&m, 8)?;
            let msgs = |t: &str| vec![ChatMessage::new(Role::User, t)];
            let prompts = vec![
                m.encode_chat(&msgs("hello"), true)?,
                m.encode_chat(&msgs("tell 42"), true)?,
            ];
            let out = m.generate(&prompts, &[1, 2], &params)?;
            Ok(out.into_iter().map(|g| g.tokens).collect())
        };
        assert_eq!(
            generate(&Device::Cpu)?,
            generate(&dev)?,
            "{}",
            path.display()
        );
    }
    Ok(())
}

/// Named in `scripts/gpu/run.sh`: the tests phase skips it, the quickstart phase (with the models
/// staged) runs it.
#[test]
fn embedder_on_the_gpu_matches_the_cpu_and_ignores_its_batch() -> Result<()> {
    use empathy_gym::environment::sim::Embedder;
    let dev = gpu()?;
    let dir = crate::common::models().join("all-minilm-l6-v2");
    let text = "That sounds really hard. What has been the hardest part for you?";
    let others = [
        "It makes sense you feel this way, honestly.",
        "What happened then?",
        "You should sleep more and drink water today.",
        "A much longer reply that goes on and on about many different things in a row so that it \
         pads to another length bucket entirely, and then some more words.",
    ];
    let batch = [others[0], text, others[1], others[2], others[3]];
    // 40 texts of one padded length: passes of 16, 16, and 8 filled to 16.
    let many: Vec<String> = (0..40).map(|i| format!("{text} ({i})")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    let cpu = Embedder::load(&dir, &Device::Cpu)?.embed(&batch)?;
    let alone = Embedder::load(&dir, &dev)?.embed(&[text])?;
    let gpu_batch = Embedder::load(&dir, &dev)?.embed(&batch)?;
    let gpu_many = Embedder::load(&dir, &dev)?.embed(&many)?;
    let gpu_many_alone = Embedder::load(&dir, &dev)?.embed(&many[37..38])?;
    assert_eq!(
        *alone[0], *gpu_batch[1],
        "a text's embedding depends on its batch-mates"
    );
    assert_eq!(
        *gpu_many[37], *gpu_many_alone[0],
        "a text's embedding depends on its pass"
    );
    for ((t, c), g) in batch.iter().zip(&cpu).zip(&gpu_batch) {
        let diff = c
            .iter()
            .zip(g.iter())
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(diff < 1e-4, "{t}: GPU embedding {diff} from the CPU's");
    }
    Ok(())
}
