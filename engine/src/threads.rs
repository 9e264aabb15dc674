//! The CPU thread counts, decided once per process.
//!
//! candle 0.11 asks `utils::get_num_threads()` before every CPU matmul. Unless `RAYON_NUM_THREADS`
//! is set, that falls back to `num_cpus::get_physical()`, which opens and parses /proc/cpuinfo on
//! each call: thousands of reads a second during a training step, each a system call plus the
//! parse (results/perf/step.md, "Thread count"). Writing candle's own answer
//! into `RAYON_NUM_THREADS` once, before any thread starts, makes every later call a variable
//! lookup with the same count, so results are unchanged bit for bit.
//!
//! candle runs its elementwise maps on a second pool (`CANDLE_NUM_THREADS`, default the same
//! count) whose workers spin between ops while gemm's rayon pool does the matmuls on the same
//! cores. On 2 cores, running the maps on the calling thread made the LoRA update faster on AMD
//! and was no slower on Intel, with decoding unchanged
//! (results/perf/step.md, "Elementwise maps on the calling thread"); each element is computed
//! alone, so results are the same bits either way. Larger machines keep candle's default, which
//! has not been measured against.
//!
//! A program that calls candle from its main thread has one thread more than cores: the main
//! thread hands every matmul to rayon's workers and sleeps, then runs the serial work between
//! matmuls while the workers spin, yield and sleep beside it (millions of context switches in a
//! short quickstart). [`on_compute_pool`] runs the whole command on one of rayon's workers
//! instead, so the caller of each matmul is one of the threads that computes it: far fewer
//! context switches, generation and the update faster on 2 cores, the same bits
//! (results/perf/step.md, "The command on rayon's pool").
//!
//! Between a decoding step's hundreds of small parallel ops rayon's idle workers still went to
//! sleep and had to be woken; [`KeepAwake`] keeps them polling for the length of a generation
//! (far fewer context switches, decoding faster, the same bits; step.md, "Decoding keeps the
//! pool awake").

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// While alive, the other workers of rayon's global pool wait for work by polling it instead of
/// going to sleep (results/perf/step.md, "Decoding keeps the pool awake").
///
/// Rayon parks an idle worker after 33 rounds of `sched_yield`, a brief spin, and wakes it with a
/// futex when the next parallel op comes. Decoding is hundreds of small parallel
/// ops a step with serial work between them (sampling, candle's small ops), long enough for the
/// other workers to park every time: the wake-ups were a visible share of a decoding profile.
/// Each other worker here runs a broadcast job that loops on `rayon::yield_now` (which runs
/// whatever job is pending, stolen as usual) until the guard drops. No value changes: the same
/// jobs run, only who waits how differs. The calling worker's own copy returns at once.
/// Generation holds one (`model::generate`); the LoRA update does not: there, with fewer and
/// larger parallel ops, the training benchmark ran slower with it.
///
/// A worker that finds no job for [`IDLE_LIMIT`] stops polling (rayon's own idling takes over):
/// a worker can pick up the broadcast while it waits inside a job of its own, and that job's
/// caller may be what the guard's owner is waiting for.
pub struct KeepAwake {
    state: Arc<Polling>,
}

/// What a guard shares with the workers it keeps polling.
#[derive(Default)]
struct Polling {
    /// Set when the guard drops.
    stop: AtomicBool,
    /// Workers that started polling, and those polling now.
    started: AtomicUsize,
    active: AtomicUsize,
}

/// How long a worker polls without finding a job before it goes back to rayon's idling. Above
/// the longest serial stretch of a generation: copying a prompt's keys and values into every row
/// of the batch's cache, which a much shorter limit let stop the polling (results/perf/step.md,
/// "Decoding keeps the pool awake").
pub const IDLE_LIMIT: Duration = Duration::from_millis(50);

impl KeepAwake {
    /// Keeps the pool's other workers polling until the guard drops.
    pub fn new() -> Self {
        Self::with_idle_limit(IDLE_LIMIT)
    }

    /// A guard for CPU work on `device`; None on a GPU, where the CPU only queues kernels.
    pub fn for_device(device: &candle_core::Device) -> Option<Self> {
        device.is_cpu().then(Self::new)
    }

    fn with_idle_limit(idle_limit: Duration) -> Self {
        let state = Arc::new(Polling::default());
        let caller = rayon::current_thread_index();
        let shared = Arc::clone(&state);
        rayon::spawn_broadcast(move |ctx| {
            if Some(ctx.index()) == caller {
                return;
            }
            shared.started.fetch_add(1, Ordering::AcqRel);
            shared.active.fetch_add(1, Ordering::AcqRel);
            let mut last_job = Instant::now();
            while !shared.stop.load(Ordering::Acquire) {
                if rayon::yield_now() == Some(rayon::Yield::Executed) {
                    last_job = Instant::now();
                } else if last_job.elapsed() > idle_limit {
                    break;
                } else {
                    std::hint::spin_loop();
                }
            }
            shared.active.fetch_sub(1, Ordering::AcqRel);
        });
        KeepAwake { state }
    }
}

impl Default for KeepAwake {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for KeepAwake {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::Release);
    }
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

    /// Waits up to 20 s (other tests share the pool) for `done`.
    fn eventually(what: &str, done: impl Fn() -> bool) {
        let start = Instant::now();
        while !done() {
            assert!(start.elapsed() < Duration::from_secs(20), "{what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn the_other_workers_poll_until_the_guard_drops() {
        on_compute_pool(|| {
            let others = rayon::current_num_threads() - 1;
            let guard = KeepAwake::with_idle_limit(Duration::from_secs(3600));
            let state = Arc::clone(&guard.state);
            eventually("every other worker starts polling", || {
                state.started.load(Ordering::Acquire) == others
            });
            // Work handed to the pool meanwhile runs as usual, stolen by the polling workers.
            use rayon::prelude::*;
            assert_eq!((1..=1000u64).into_par_iter().sum::<u64>(), 500_500);
            assert_eq!(
                state.active.load(Ordering::Acquire),
                others,
                "an hour's limit"
            );
            drop(guard);
            eventually("the workers stop when the guard drops", || {
                state.active.load(Ordering::Acquire) == 0
            });
        });
    }

    #[test]
    fn a_worker_without_jobs_stops_polling_by_itself() {
        on_compute_pool(|| {
            let guard = KeepAwake::with_idle_limit(Duration::from_millis(1));
            let others = rayon::current_num_threads() - 1;
            eventually("every other worker starts polling", || {
                guard.state.started.load(Ordering::Acquire) == others
            });
            eventually("idle workers stop with the guard alive", || {
                guard.state.active.load(Ordering::Acquire) == 0
            });
        });
    }

    #[test]
    fn maps_run_on_the_calling_thread_only_on_two_cores_or_fewer() {
        assert_eq!(elementwise_threads(1), Some(1));
        assert_eq!(elementwise_threads(2), Some(1));
        assert_eq!(elementwise_threads(4), None);
        assert_eq!(elementwise_threads(16), None);
    }
}
