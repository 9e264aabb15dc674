//! The fuzz loop: every seed once unchanged, then mutants until the budget is spent; each input
//! runs under `catch_unwind` on a thread with a main thread's stack, a panic's input is saved
//! under `out_dir/crashes/`, and the report counts inputs, acceptances, rejections, panics (by
//! distinct message), the slowest input and the largest allocation (when the campaign's
//! allocator is installed).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::corpus::Corpus;
use super::mutate::Mutator;
use super::panics::{describe, take_backtrace, QuietPanics};
use super::report::{count_rejection, record, Report};
use super::target::Broken;
use super::{crashes, watch, Target};

/// When to stop: whichever comes first.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub max_inputs: u64,
    pub max_seconds: f64,
}

/// An input slower than this is saved as `<target>-slow.bin`.
const SLOW: Duration = Duration::from_secs(2);
/// The thread that runs inputs gets the stack a main thread gets.
const STACK: usize = 8 << 20;

/// Runs `target` within `budget` from random seed `seed`; findings go to `out_dir/crashes/`.
pub fn run(target: &mut Target, budget: Budget, seed: u64, out_dir: &Path) -> Report {
    run_reporting(target, budget, seed, out_dir, Duration::MAX, &mut |_| {})
}

/// [`run`], calling `progress` with the report so far every `every`.
pub fn run_reporting(
    target: &mut Target,
    budget: Budget,
    seed: u64,
    out_dir: &Path,
    every: Duration,
    progress: &mut (dyn FnMut(&Report) + Send),
) -> Report {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name(format!("fuzz-{}", target.name))
            .stack_size(STACK)
            .spawn_scoped(s, || {
                fuzz_loop(target, budget, seed, out_dir, every, progress)
            })
            .expect("spawning the fuzz thread")
            .join()
            .unwrap_or_else(|_| panic!("the fuzz loop itself panicked"))
    })
}

fn fuzz_loop(
    target: &mut Target,
    budget: Budget,
    seed: u64,
    out_dir: &Path,
    every: Duration,
    progress: &mut (dyn FnMut(&Report) + Send),
) -> Report {
    let crash_dir = out_dir.join("crashes");
    let _ = watch::arm(target.name, &crash_dir);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mutator = Mutator::new(target.kind, &target.seeds);
    let mut corpus = Corpus::new(target.seeds.clone());
    let mut report = Report::new(target.name);
    let mut slowest: Vec<u8> = Vec::new();
    let quiet = QuietPanics::install();
    watch::reset_largest();
    let start = Instant::now();
    let mut last_progress = start;
    while report.inputs < budget.max_inputs && start.elapsed().as_secs_f64() < budget.max_seconds {
        let i = report.inputs as usize;
        let is_seed = i < corpus.seeds().len();
        let input = if is_seed {
            corpus.seeds()[i].clone()
        } else {
            mutator.mutate(&corpus, &mut rng)
        };
        watch::set_current(&input);
        let t0 = Instant::now();
        let result = catch_unwind(AssertUnwindSafe(|| (target.check)(&input)));
        let took = t0.elapsed().as_secs_f64();
        watch::clear_current();
        report.inputs += 1;
        if took > report.slowest {
            report.slowest = took;
            slowest.clone_from(&input);
        }
        match result {
            Ok(Ok(())) => {
                report.accepted += 1;
                if !is_seed {
                    corpus.add(&input, &mut rng);
                }
            }
            Ok(Err(e)) if e.downcast_ref::<Broken>().is_some() => {
                report.broken += 1;
                let message = format!("{e:#}");
                record(&mut report, &crash_dir, target.name, &input, &message, None);
            }
            Ok(Err(e)) => {
                report.rejected += 1;
                count_rejection(&mut report, &e);
                if is_seed {
                    report.rejected_seeds.push(format!("seed {i}: {e:#}"));
                }
            }
            Err(payload) => {
                report.panics += 1;
                let message = format!("panic: {}", describe(payload.as_ref()));
                let trace = take_backtrace();
                record(
                    &mut report,
                    &crash_dir,
                    target.name,
                    &input,
                    &message,
                    trace.as_deref(),
                );
            }
        }
        if last_progress.elapsed() >= every {
            last_progress = Instant::now();
            report.seconds = start.elapsed().as_secs_f64();
            report.largest_alloc = watch::largest();
            report.corpus_found = corpus.found();
            progress(&report);
        }
    }
    drop(quiet);
    report.seconds = start.elapsed().as_secs_f64();
    report.largest_alloc = watch::largest();
    report.corpus_found = corpus.found();
    if report.slowest >= SLOW.as_secs_f64() {
        let note = format!(
            "target {}\nslowest input: {:.1} s\n",
            target.name, report.slowest
        );
        let stem = crashes::free_stem(&crash_dir, &format!("{}-slow", target.name));
        let path = crash_dir.join(format!("{stem}.bin"));
        if std::fs::write(&path, &slowest).is_ok() {
            let _ = std::fs::write(crash_dir.join(format!("{stem}.txt")), note);
            report.slow_input = Some(path);
        }
    }
    report
}
