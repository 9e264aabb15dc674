//! The CPU thread count, decided once per process.
//!
//! candle 0.11 asks `utils::get_num_threads()` before every CPU matmul. Unless `RAYON_NUM_THREADS`
//! is set, that falls back to `num_cpus::get_physical()`, which opens and parses /proc/cpuinfo on
//! each call: 2,500+ reads a second during a training step on a 2-core machine (strace, 2026-11-23),
//! ~30 µs each plus the parse (results/perf/step.md, "Thread count"). Writing candle's own answer
//! into `RAYON_NUM_THREADS` once, before any thread starts, makes every later call a variable
//! lookup with the same count, so results are unchanged bit for bit.

/// Sets `RAYON_NUM_THREADS` to candle's default thread count (physical cores) unless the user set
/// it. Call first thing in `main`, before any thread is spawned. Rayon's own pool then uses the
/// same count (physical rather than logical cores where they differ).
pub fn fix_thread_count() {
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        let n = candle_core::utils::get_num_threads();
        std::env::set_var("RAYON_NUM_THREADS", n.to_string());
    }
}
