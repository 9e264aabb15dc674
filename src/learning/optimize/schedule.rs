//! The learning-rate schedule: linear warmup, then constant or cosine decay (docs/CONFIG.md,
//! "`optim`").
//!
//! Steps are counted from 1 (the first update is step 1), so the first update already moves the
//! weights with lr / warmup_steps; Hugging Face's `get_*_schedule_with_warmup` starts at lr 0
//! because its scheduler is stepped after the optimizer.

use serde::{Deserialize, Serialize};

/// How the learning rate moves over optimizer steps.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LrSchedule {
    /// lr * t / warmup_steps for t <= warmup_steps, then lr.
    Constant {
        /// Updates of linear warmup (0: none).
        #[serde(default)]
        warmup_steps: u64,
    },
    /// Linear warmup, then half a cosine from lr down to 0 at `total_steps` (0 after it;
    /// Loshchilov & Hutter 2017, SGDR, without restarts).
    Cosine {
        /// Updates of linear warmup (0: none).
        #[serde(default)]
        warmup_steps: u64,
        /// The update at which the rate reaches 0.
        total_steps: u64,
    },
}

impl Default for LrSchedule {
    fn default() -> Self {
        LrSchedule::Constant { warmup_steps: 0 }
    }
}

impl LrSchedule {
    /// The learning rate of update `step` (1-based) for a peak rate `base_lr`.
    pub fn lr_at(&self, base_lr: f64, step: u64) -> f64 {
        let warmup = match *self {
            LrSchedule::Constant { warmup_steps } | LrSchedule::Cosine { warmup_steps, .. } => {
                warmup_steps
            }
        };
        if step <= warmup {
            return base_lr * step as f64 / warmup as f64;
        }
        match *self {
            LrSchedule::Constant { .. } => base_lr,
            LrSchedule::Cosine { total_steps, .. } => {
                let span = total_steps.saturating_sub(warmup).max(1) as f64;
                let progress = ((step - warmup) as f64 / span).min(1.0);
                base_lr * 0.5 * (1.0 + (std::f64::consts::PI * progress).cos())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }

    #[test]
    fn warmup_then_constant() {
        let s = LrSchedule::Constant { warmup_steps: 4 };
        // Steps 1..=5 with base 2: 2 * 1/4, 2 * 2/4, 2 * 3/4, 2, 2.
        let got: Vec<f64> = (1..=5).map(|t| s.lr_at(2.0, t)).collect();
        assert_eq!(got, vec![0.5, 1.0, 1.5, 2.0, 2.0]);
        // No warmup: the base rate from the first step.
        close(LrSchedule::default().lr_at(1e-5, 1), 1e-5);
    }

    #[test]
    fn warmup_then_cosine() {
        let s = LrSchedule::Cosine {
            warmup_steps: 2,
            total_steps: 6,
        };
        // t=1: 1/2; t=2: 1; t=3: progress 1/4, 0.5 (1 + cos(pi/4)) = 0.853553;
        // t=4: progress 1/2, 0.5; t=6: progress 1, 0; t=9: clamped, 0.
        close(s.lr_at(1.0, 1), 0.5);
        close(s.lr_at(1.0, 2), 1.0);
        close(
            s.lr_at(1.0, 3),
            0.5 * (1.0 + std::f64::consts::FRAC_1_SQRT_2),
        );
        close(s.lr_at(1.0, 4), 0.5);
        close(s.lr_at(1.0, 6), 0.0);
        close(s.lr_at(1.0, 9), 0.0);
    }

    #[test]
    fn parses_from_yaml() {
        let s: LrSchedule =
            serde_yaml::from_str("kind: cosine\nwarmup_steps: 3\ntotal_steps: 10").unwrap();
        assert_eq!(
            s,
            LrSchedule::Cosine {
                warmup_steps: 3,
                total_steps: 10
            }
        );
        assert!(serde_yaml::from_str::<LrSchedule>("kind: linear").is_err());
    }
}
