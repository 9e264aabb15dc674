//! Generalized advantage estimation (Schulman et al. 2016, "High-Dimensional Continuous Control
//! Using Generalized Advantage Estimation", eq. 16) over one dialogue's policy tokens.
//!
//! The policy tokens of a dialogue, all turns in order, are one trajectory: user turns are the
//! environment's transitions between actions, so the state after a reply's last token is the
//! state before the next reply's first token. With per-token rewards r_t (the turn's reward on
//! the turn's last token, zero elsewhere) and values V_t:
//!   delta_t = r_t + gamma V_{t+1} - V_t   (V after the last token is 0: the dialogue is over),
//!   A_t = delta_t + gamma lambda A_{t+1},   returns R_t = A_t + V_t (the critic's target),
//! as verl's `compute_gae_advantage_return`.

/// Advantages and returns of one trajectory. `rewards` and `values` have one entry per policy
/// token; panics in debug builds when the lengths differ.
pub fn gae(rewards: &[f32], values: &[f32], gamma: f64, lambda: f64) -> (Vec<f32>, Vec<f32>) {
    debug_assert_eq!(rewards.len(), values.len());
    let n = rewards.len().min(values.len());
    let mut adv = vec![0.0f32; n];
    let mut ret = vec![0.0f32; n];
    let mut last = 0.0f64;
    for t in (0..n).rev() {
        let next_v = if t + 1 < n { values[t + 1] as f64 } else { 0.0 };
        let delta = rewards[t] as f64 + gamma * next_v - values[t] as f64;
        last = delta + gamma * lambda * last;
        adv[t] = last as f32;
        ret[t] = (last + values[t] as f64) as f32;
    }
    (adv, ret)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f32], b: &[f32]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-5, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn gae_by_hand() {
        // r = [0, 0, 1], V = [0.5, 0.6, 0.7], gamma 0.9, lambda 0.8 (gamma lambda 0.72).
        // delta2 = 1 + 0 - 0.7 = 0.3;            A2 = 0.3
        // delta1 = 0 + 0.9*0.7 - 0.6 = 0.03;     A1 = 0.03 + 0.72*0.3 = 0.246
        // delta0 = 0 + 0.9*0.6 - 0.5 = 0.04;     A0 = 0.04 + 0.72*0.246 = 0.21712
        // R = A + V = 0.71712, 0.846, 1.0.
        let (a, r) = gae(&[0.0, 0.0, 1.0], &[0.5, 0.6, 0.7], 0.9, 0.8);
        close(&a, &[0.21712, 0.246, 0.3]);
        close(&r, &[0.71712, 0.846, 1.0]);
    }

    #[test]
    fn gamma_lambda_one_gives_reward_to_go_minus_value() {
        // verl's defaults (gamma 1, lambda 1): A_t = sum of rewards from t on - V_t; R_t = the
        // reward to go. Dense turn rewards [0.1 on token 1, 0.2 on token 3], V = [0.1, 0.2, 0.3, 0.4]:
        // to-go 0.3, 0.3, 0.2, 0.2; A = 0.2, 0.1, -0.1, -0.2.
        let (a, r) = gae(&[0.0, 0.1, 0.0, 0.2], &[0.1, 0.2, 0.3, 0.4], 1.0, 1.0);
        close(&r, &[0.3, 0.3, 0.2, 0.2]);
        close(&a, &[0.2, 0.1, -0.1, -0.2]);
        // lambda 0: one-step TD errors.
        let (a, _) = gae(&[0.0, 1.0], &[0.5, 0.25], 1.0, 0.0);
        close(&a, &[-0.25, 0.75]);
        assert_eq!(gae(&[], &[], 1.0, 1.0), (vec![], vec![]));
    }
}
