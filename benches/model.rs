//! Throughput of SmolLM2-135M: batched decoding (batch 1, 16, 32; and batch 16 through rank-16
//! LoRA adapters, as rollouts decode) and one LoRA training step (forward + backward + AdamW over
//! rank-16 adapters, 1 x 512 and 4 x 512 tokens), with the peak resident memory of each case
//! (VmHWM, reset between cases) and the most memory its tensors held at once (on a GPU the memory
//! pool's high-water mark, which `bench_torch.py` prints as PyTorch's peak allocated; on the CPU
//! the caching allocator's).
//!
//! Run: `cargo bench --bench model` (needs the models from scripts/fetch-models.sh;
//! fails, listing the places tried, when they are missing). On a GPU build
//! (`--features cuda`) the environment picks the device and sizes:
//! `BENCH_DEVICE=cuda BENCH_DTYPE=bf16 BENCH_BATCHES=1,16,64 cargo bench --features cuda --bench model`.
//! `BENCH_CPU_MATMUL=bf16` runs the frozen weights' products in bf16 (`model.cpu_matmul`: AMX,
//! AVX-512 or AVX2).
//! The device is synchronized inside every timed iteration, and each case prints
//! `case NAME start_ms end_ms` (unix time) to stderr so that an outside sampler of GPU memory
//! (nvidia-smi) can attribute its peak to the case. On a GPU (or with `BENCH_PHASES=1`) each
//! training case then prints where its time goes (`phases NAME: forward ...`).

use std::time::{Duration, Instant};

use empathy_test_support as common;

// As the binary: large blocks kept for reuse (engine/src/alloc.rs).
#[global_allocator]
static ALLOC: empathy_engine::alloc::CachingAlloc = empathy_engine::alloc::CachingAlloc;

use candle_core::Device;
use criterion::{Criterion, SamplingMode, Throughput};
use empathy_gym::model::{
    load_model, AdapterMode, ChatMessage, ChatModel, LoadOptions, Pass, Role, SamplingParams,
    DEFAULT_POLICY,
};

/// New tokens per sequence in the decode cases.
const DECODE_TOKENS: usize = 32;

/// Resets VmHWM to the current RSS (Linux: "5" in clear_refs) and the tensor peak of `dev`.
fn reset_peak(dev: &Device) -> anyhow::Result<()> {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    empathy_engine::alloc::reset_high_water();
    empathy_engine::gpu::reset_pool_used_high(dev)?;
    Ok(())
}

/// The most MiB of tensors in use at once since `reset_peak`: on a GPU the memory pool's
/// high-water mark (as `torch.cuda.max_memory_allocated`), on the CPU the caching allocator's
/// large blocks (`alloc::high_water_bytes`).
fn tensor_peak_mib(dev: &Device) -> anyhow::Result<f64> {
    let bytes = match empathy_engine::gpu::pool_used_high_bytes(dev)? {
        Some(b) => b as f64,
        None if dev.is_cpu() => empathy_engine::alloc::high_water_bytes() as f64,
        None => f64::NAN,
    };
    Ok(bytes / 1048576.0)
}

struct Row {
    case: String,
    tokens: usize,
    times: Vec<Duration>,
    peak_mib: f64,
    tensor_peak_mib: f64,
}

impl Row {
    /// Whether the case ran: a criterion filter (`cargo bench --bench model -- train`) leaves
    /// the others without an iteration.
    fn ran(&self) -> bool {
        !self.times.is_empty()
    }

    fn median_s(&self) -> f64 {
        let mut t: Vec<f64> = self.times.iter().map(Duration::as_secs_f64).collect();
        t.sort_by(f64::total_cmp);
        t.get(t.len() / 2).copied().unwrap_or(f64::NAN)
    }
}

/// Device, load options and decode batch sizes from BENCH_DEVICE (cpu | cuda), BENCH_DTYPE
/// (f32 | bf16), BENCH_CPU_MATMUL (f32 | bf16) and BENCH_BATCHES (comma-separated); defaults
/// cpu, f32, f32, 1,16,32. BENCH_CUDA_ALLOCATOR=candle opens the GPU with candle's allocator
/// settings instead of the project's (`model::open_cuda`), to measure what they change;
/// BENCH_OPTIMIZER=candle_nn trains with candle_nn's AdamW instead of the trainer's (common).
fn setup() -> anyhow::Result<(Device, LoadOptions, Vec<usize>)> {
    let var = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_string());
    let dev = match var("BENCH_DEVICE", "cpu").as_str() {
        "cpu" => Device::Cpu,
        "cuda" if var("BENCH_CUDA_ALLOCATOR", "project") == "candle" => Device::new_cuda(0)?,
        "cuda" => empathy_gym::model::open_cuda(0)?,
        other => anyhow::bail!("BENCH_DEVICE={other}: expected cpu or cuda"),
    };
    let dtype = common::dtype_from_env("BENCH_DTYPE")?;
    let bf16_products = match var("BENCH_CPU_MATMUL", "f32").as_str() {
        "f32" => false,
        "bf16" => true,
        other => anyhow::bail!("BENCH_CPU_MATMUL={other}: expected f32 or bf16"),
    };
    let batches = var("BENCH_BATCHES", "1,16,32")
        .split(',')
        .map(|b| b.trim().parse::<usize>())
        .collect::<Result<Vec<_>, _>>()?;
    let opts = LoadOptions {
        dtype,
        bf16_products,
        ..LoadOptions::default()
    };
    Ok((dev, opts, batches))
}

fn unix_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

fn run_case(
    c: &mut Criterion,
    dev: &Device,
    name: &str,
    tokens: usize,
    mut f: impl FnMut(),
) -> anyhow::Result<Row> {
    reset_peak(dev)?;
    let start_ms = unix_ms();
    let mut times = Vec::new();
    let mut group = c.benchmark_group(format!("smollm2-135m-{}", device_name(dev)));
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Elements(tokens as u64));
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                f();
                dev.synchronize().expect("device synchronize");
            }
            let el = start.elapsed();
            times.push(el / iters as u32);
            el
        })
    });
    group.finish();
    eprintln!("case {name} {start_ms} {}", unix_ms());
    Ok(Row {
        case: name.to_string(),
        tokens,
        times,
        peak_mib: common::peak_rss_mib(),
        tensor_peak_mib: tensor_peak_mib(dev)?,
    })
}

/// Sampled decoding of `batch` copies of one chat prompt, DECODE_TOKENS new tokens each.
fn decode_case(
    c: &mut Criterion,
    dev: &Device,
    m: &mut ChatModel,
    batch: usize,
    how: &str,
) -> anyhow::Result<Row> {
    m.stop_tokens.clear(); // every sequence decodes exactly DECODE_TOKENS tokens
    let prompt = m.encode_chat(
        &[ChatMessage::new(
            Role::User,
            "I lost my job today and I feel awful. What should I do?",
        )],
        true,
    )?;
    let params = SamplingParams {
        temperature: 1.0,
        top_p: 0.9,
        max_new_tokens: DECODE_TOKENS,
        greedy: false,
    };
    let prompts = vec![prompt.clone(); batch];
    let seeds: Vec<u64> = (0..batch as u64).collect();
    let name = format!(
        "decode batch {batch}{how} ({}-token prompt, {DECODE_TOKENS} new)",
        prompt.len()
    );
    run_case(c, dev, &name, batch * DECODE_TOKENS, || {
        // As a trainer's rollout decodes: with the adapters merged into copies of the weights
        // (`Trainer::play`), the merge inside each timed call. Without adapters, no copies.
        let _merged = m.model.merge_adapters().expect("merge");
        m.generate(&prompts, &seeds, &params).expect("generate");
    })
}

/// On a GPU or with BENCH_PHASES=1, outside the timed iterations: five more training steps, the
/// device synchronized after the forward, the backward and the optimizer, and each phase's
/// median printed to stderr as `phases NAME: forward X ms, backward Y ms, optimizer Z ms`.
fn print_phases(
    dev: &Device,
    name: &str,
    forward: impl Fn() -> anyhow::Result<candle_core::Tensor>,
    opt: &mut common::BenchOptimizer,
) -> anyhow::Result<()> {
    let mut ms: [Vec<f64>; 3] = Default::default();
    for _ in 0..5 {
        let t0 = Instant::now();
        let loss = forward()?;
        dev.synchronize()?;
        let t1 = Instant::now();
        let grads = loss.backward()?;
        dev.synchronize()?;
        let t2 = Instant::now();
        opt.step(&loss, &grads)?;
        dev.synchronize()?;
        let t3 = Instant::now();
        for (v, (a, b)) in ms.iter_mut().zip([(t0, t1), (t1, t2), (t2, t3)]) {
            v.push((b - a).as_secs_f64() * 1e3);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let [f, b, o] = &mut ms;
    eprintln!(
        "phases {name}: forward {:.1} ms, backward {:.1} ms, optimizer {:.1} ms",
        median(f),
        median(b),
        median(o)
    );
    Ok(())
}

fn device_name(dev: &Device) -> &'static str {
    if dev.is_cuda() {
        "cuda"
    } else {
        "cpu"
    }
}

fn main() -> anyhow::Result<()> {
    // As the binary does: candle's thread count decided once, not per matmul, and the work on one
    // of rayon's workers (model::threads).
    empathy_gym::model::fix_thread_count();
    empathy_gym::model::on_compute_pool(run)
}

fn run() -> anyhow::Result<()> {
    // A missing model is an error (non-zero exit, every place tried), never a silent skip.
    let path = common::bench_model(DEFAULT_POLICY)?;
    let mut c = Criterion::default().configure_from_args();
    let (dev, base, batches) = setup()?;
    let mut rows = Vec::new();
    {
        let mut m = load_model(&path, &dev, &base)?;
        for &batch in &batches {
            rows.push(decode_case(&mut c, &dev, &mut m, batch, "")?);
        }
    }
    {
        let (mut m, ids, mut opt) = common::lora_training(&path, &dev, &base)?;
        // As the trainer's rollouts decode: through the adapters, merged into the weights.
        rows.push(decode_case(&mut c, &dev, &mut m, 16, " through LoRA r16")?);
        for rows_per_step in [1usize, 4] {
            let batch = vec![ids.clone(); rows_per_step];
            let name = format!(
                "train LoRA r16 fwd+bwd+AdamW, {rows_per_step}x{}",
                common::TRAIN_LEN
            );
            // The loss of one training step: the mean token log-prob, negated.
            let loss = || -> anyhow::Result<candle_core::Tensor> {
                let lp = m.token_logprobs(&batch, AdapterMode::On, Pass::Train)?;
                Ok(lp.mean_all()?.neg()?)
            };
            rows.push(run_case(
                &mut c,
                &dev,
                &name,
                rows_per_step * common::TRAIN_LEN,
                || {
                    let loss = loss().expect("forward");
                    opt.backward_step(&loss).expect("step");
                },
            )?);
            let ran = rows.last().is_some_and(Row::ran);
            if ran && (dev.is_cuda() || std::env::var("BENCH_PHASES").is_ok_and(|v| v == "1")) {
                print_phases(&dev, &name, loss, &mut opt)?;
            }
        }
    }
    c.final_summary();
    println!("\n| case | tokens/iter | median s/iter | tokens/s | peak RSS (MiB) | tensors at most (MiB) |\n|---|---|---|---|---|---|");
    for r in rows.iter().filter(|r| r.ran()) {
        let s = r.median_s();
        println!(
            "| {} | {} | {:.3} | {:.1} | {:.0} | {:.0} |",
            r.case,
            r.tokens,
            s,
            r.tokens as f64 / s,
            r.peak_mib,
            r.tensor_peak_mib
        );
    }
    Ok(())
}
