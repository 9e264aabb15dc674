//! One LoRA training step of SmolLM2-135M (forward + backward + AdamW, rank 16, ROWS x 512
//! tokens), ITERS times, each with its wall time, the process's user and system CPU time, its
//! minor page faults, the bytes the allocator keeps for reuse, the most bytes of tensors in use
//! at once during the step (`alloc::high_water_bytes`) and the peak resident memory: what
//! results/perf/step.md's "Large blocks kept for reuse" section reads. The kernel time and page
//! faults of a step are what the caching allocator (engine/src/alloc.rs) removes; `cargo bench --bench
//! model` measures the same step's throughput with criterion.
//!
//! `DTYPE=bf16` loads the weights in bf16, so the step runs the ops a GPU runs (`ops/lean.rs`)
//! on the CPU: its high-water mark is a stand-in for the GPU's tensor memory (results/perf/gpu.md).
//!
//! Run: `ROWS=4 ITERS=4 cargo bench --bench train_step` (defaults 4 and 4, DTYPE f32; needs the
//! models from scripts/fetch-models.sh).

use empathy_test_support as common;

use std::time::Instant;

use candle_core::Device;
use empathy_engine::alloc;
use empathy_gym::model::{AdapterMode, LoadOptions, Pass, DEFAULT_POLICY};

// As the binary: large blocks kept for reuse (engine/src/alloc.rs).
#[global_allocator]
static ALLOC: empathy_engine::alloc::CachingAlloc = empathy_engine::alloc::CachingAlloc;

/// (user s, system s, minor faults) of this process so far.
fn usage() -> (f64, f64, i64) {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let r = unsafe {
        let mut r: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut r);
        r
    };
    let s = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
    (s(r.ru_utime), s(r.ru_stime), r.ru_minflt)
}

fn env_usize(key: &str, default: usize) -> anyhow::Result<usize> {
    match std::env::var(key) {
        Ok(v) => Ok(v
            .parse()
            .map_err(|_| anyhow::anyhow!("{key}={v}: expected a count"))?),
        Err(_) => Ok(default),
    }
}

fn main() -> anyhow::Result<()> {
    // As the binary does: candle's thread count decided once, not per matmul, and the work on one
    // of rayon's workers (model::threads).
    empathy_gym::model::fix_thread_count();
    empathy_gym::model::on_compute_pool(run)
}

fn run() -> anyhow::Result<()> {
    let rows = env_usize("ROWS", 4)?;
    let iters = env_usize("ITERS", 4)?;
    let path = common::bench_model(DEFAULT_POLICY)?;
    let opts = LoadOptions {
        dtype: common::dtype_from_env("DTYPE")?,
        ..LoadOptions::default()
    };
    let (m, ids, mut opt) = common::lora_training(&path, &Device::Cpu, &opts)?;
    let batch = vec![ids; rows];
    let mib = |bytes: usize| bytes as f64 / 1048576.0;
    println!("| step | s | tokens/s | user s | system s | minor faults | kept for reuse (MiB) | tensors at most (MiB) | peak RSS (MiB) |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for i in 0..iters {
        alloc::reset_high_water();
        let (u0, s0, f0) = usage();
        let t = Instant::now();
        let lp = m.token_logprobs(&batch, AdapterMode::On, Pass::Train)?;
        opt.backward_step(&lp.mean_all()?.neg()?)?;
        drop(lp);
        let el = t.elapsed().as_secs_f64();
        let (u1, s1, f1) = usage();
        println!(
            "| {} | {el:.2} | {:.1} | {:.1} | {:.1} | {} | {:.0} | {:.0} | {:.0} |",
            i + 1,
            (rows * common::TRAIN_LEN) as f64 / el,
            u1 - u0,
            s1 - s0,
            f1 - f0,
            mib(alloc::cached_bytes()),
            mib(alloc::high_water_bytes()),
            common::peak_rss_mib()
        );
    }
    Ok(())
}
