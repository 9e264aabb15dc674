//! The seconds a command spends getting ready before its own progress bars start (the
//! simulator's models and rules, the policy's weights): a spinner
//! on stderr while it runs, then one line saying what was done and how long it took, so that a
//! log (a Slurm job's, a terminal's) shows where a run's start-up went.

use std::time::{Duration, Instant};

use empathy_gym::environment::profile::Profile;
use empathy_gym::environment::sim::Simulator;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Runs `work`, with a spinner saying `what` (unless `quiet`; indicatif draws nothing where
/// stderr is not a terminal), then prints "`what`: N.N s" on stderr.
pub fn loading<T, E>(quiet: bool, what: &str, work: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
    let bar = ProgressBar::with_draw_target(
        None,
        if quiet {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        },
    );
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
        bar.set_style(style);
    }
    bar.set_message(what.to_string());
    bar.enable_steady_tick(Duration::from_millis(120));
    let start = Instant::now();
    let out = work();
    bar.finish_and_clear();
    if out.is_ok() {
        eprintln!("{what}: {:.1} s", start.elapsed().as_secs_f64());
    }
    out
}

/// The simulator readies what it caches for `profiles` (the appraiser embeds everything their
/// users can say), under [`loading`]: how `serve-env --prepare` readies a split. Other commands
/// leave it to the appraisal, which embeds only the sentences a dialogue uses (the embeddings do
/// not depend on the batch, so the dialogues are the same; results/perf/ci.md).
pub fn prepare_simulator(
    quiet: bool,
    sim: &dyn Simulator,
    profiles: &[Profile],
) -> empathy_gym::Result<()> {
    let what = format!("simulator: preparing {} profiles", profiles.len());
    loading(quiet, &what, || sim.prepare(profiles))
}
