//! Progress bars of a training run on stderr: one for steps (with the last step's reward and final
//! emotion), one per step for the dialogues of its rollout. Hidden when progress is off.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::metrics::StepMetrics;

/// The step and rollout progress bars (hidden when progress is off).
pub(crate) struct Bars {
    multi: MultiProgress,
    steps: ProgressBar,
}

impl Bars {
    pub(crate) fn new(show: bool, total: u64, done: u64) -> Self {
        let multi = MultiProgress::with_draw_target(if show {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        });
        let steps = multi.add(ProgressBar::new(total));
        if let Ok(s) = ProgressStyle::with_template(
            "step  [{bar:30}] {pos}/{len} {elapsed_precise} eta {eta} {msg}",
        ) {
            steps.set_style(s.progress_chars("=> "));
        }
        steps.set_position(done);
        Bars { multi, steps }
    }

    pub(crate) fn rollout(&self, n: usize) -> ProgressBar {
        self.steps.set_message("rolling out");
        let bar = self.multi.add(ProgressBar::new(n as u64));
        if let Ok(s) = ProgressStyle::with_template(
            "  rollout [{bar:26}] {pos}/{len} dialogues {elapsed_precise}",
        ) {
            bar.set_style(s.progress_chars("=> "));
        }
        bar
    }

    pub(crate) fn training(&self) {
        self.steps.set_message("updating");
    }

    pub(crate) fn step_done(&self, m: &StepMetrics) {
        self.steps.inc(1);
        self.steps.set_message(format!(
            "reward {:.3}  final emotion {:.1}",
            m.reward_mean, m.final_emotion_mean
        ));
    }

    pub(crate) fn finish(&self) {
        self.steps.finish();
    }
}
