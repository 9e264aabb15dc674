//! The CPU thread counts, decided once per process.
//!
//! candle 0.11 asks `utils::get_num_threads()` before every CPU matmul. Unless `RAYON_NUM_THREADS`
//! is set, that falls back to `num_cpus::get_physical()`, which opens and parses /proc/cpuinfo on
//! each call: 2,500+ reads a second during a training step on a 2-core machine (strace, 2026-11-23),
//! ~30 µs each plus the parse (results/perf/step.md, "Thread count"). Writing candle's own answer
//! into `RAYON_NUM_THREADS` once, before any thread starts, makes every later call a variable
//! lookup with the same count, so results are unchanged bit for bit.
//!
//! candle runs its elementwise maps on a second pool (`CANDLE_NUM_THREADS`, default the same
//! count) whose workers spin between ops while gemm's rayon pool does the matmuls on the same
//! cores. On 2 cores, running the maps on the calling thread made the LoRA update 10-20% faster
//! on an AMD EPYC and was no slower on an Intel Xeon, with decoding unchanged
//! (results/perf/step.md, "Elementwise maps on the calling thread"); each element is computed
//! alone, so results are the same bits either way. Larger machines keep candle's default, which
//! has not been measured against.
//!
//! A program that calls candle from its main thread has one thread more than cores: the main
//! thread hands every matmul to rayon's workers and sleeps, then runs the serial work between
//! matmuls while the workers spin, yield and sleep beside it (1.8 million context switches in a
//! 3-step quickstart). [`on_compute_pool`] runs the whole command on one of rayon's workers
//! instead, so the caller of each matmul is one of the threads that computes it: 10x fewer
//! context switches, generation 19% and the update 8% faster on the 2-core AMD EPYC, the same
//! bits (results/perf/step.md, "The command on rayon's pool").

/// The elementwise pool size to use on `cores` cores when the user set none: one (the calling
/// thread) on 2 cores or fewer, where it was measured to pay; otherwise candle's default.
pub fn elementwise_threads(cores: usize) -> Option<usize> {
    (cores <= 2).then_some(1)
}

/// Sets `RAYON_NUM_THREADS` to candle's default thread count (physical cores) and, on 2 cores or
/// fewer, `CANDLE_NUM_THREADS` to 1, each unless the user set it. Call first thing in `main`,
/// before any thread is spawned. Rayon's own pool then uses the same count (physical rather than
/// logical cores where they differ).
pub fn fix_thread_count() {
    let n = candle_core::utils::get_num_threads();
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        std::env::set_var("RAYON_NUM_THREADS", n.to_string());
    }
    if std::env::var_os("CANDLE_NUM_THREADS").is_none() {
        if let Some(e) = elementwise_threads(n) {
            std::env::set_var("CANDLE_NUM_THREADS", e.to_string());
        }
    }
}

/// Stack of rayon's workers, which run whole commands here: more than a spawned thread's 2 MiB
/// default (candle's backward walks the graph recursively), as much as a main thread gets.
const WORKER_STACK: usize = 8 << 20;

/// Runs `f` on a worker of rayon's global pool and returns its result; the calling thread waits
/// (asleep). Builds the global pool first (its size from `RAYON_NUM_THREADS`, so call
/// [`fix_thread_count`] before); if something built it already, `f` runs on that pool.
pub fn on_compute_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    // An error means the global pool exists already; it serves as well.
    let _ = rayon::ThreadPoolBuilder::new()
        .stack_size(WORKER_STACK)
        .build_global();
    let mut out = None;
    // Called from outside the pool, `scope` runs its body on a worker and blocks until it ends.
    rayon::scope(|_| out = Some(f()));
    out.expect("the scope ran its body")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_on_the_compute_pool_runs_on_a_worker_and_returns_its_value() {
        assert_eq!(
            rayon::current_thread_index(),
            None,
            "the test thread is no worker"
        );
        let (v, worker) = on_compute_pool(|| (41 + 1, rayon::current_thread_index()));
        assert_eq!(v, 42);
        assert!(worker.is_some(), "ran on a worker");
        // Nested parallel work from there runs on the same pool.
        let sum: u64 = on_compute_pool(|| {
            use rayon::prelude::*;
            (1..=100u64).into_par_iter().sum()
        });
        assert_eq!(sum, 5050);
    }

    #[test]
    fn maps_run_on_the_calling_thread_only_on_two_cores_or_fewer() {
        assert_eq!(elementwise_threads(1), Some(1));
        assert_eq!(elementwise_threads(2), Some(1));
        assert_eq!(elementwise_threads(4), None);
        assert_eq!(elementwise_threads(16), None);
    }
}
