//! How a reply's supportive points add up: the pure arithmetic of the appraiser's `fit`.

/// The supportive points of a reply: `gains` summed largest first, the k-th times `decay^k`. A
/// reply that stacks one stock phrase per move does not earn their sum.
pub fn stacked(mut gains: Vec<f64>, decay: f64) -> f64 {
    gains.sort_by(|a, b| b.total_cmp(a));
    gains
        .iter()
        .enumerate()
        .map(|(k, g)| g * decay.powi(k as i32))
        .sum()
}

/// The share of its supportive points that a reply of specificity `spec` lands: in proportion up
/// to `full_at`, in full from there. A reply lands as far as it is about this person.
pub fn landing(spec: f64, full_at: f64) -> f64 {
    (spec / full_at).clamp(0.0, 1.0)
}

/// The multiplier of the supportive points that land at `emotion` for a user who started at
/// `start`: 1 at or below the start, `per_ten` more per 10 points above it, at most `max`. Intimacy
/// grows over repeated exchanges in which a person feels understood (Reis & Shaver's intimacy
/// process model, 1988; Laurenceau, Barrett & Pietromonaco 1998): a user who has been heard takes
/// in the next good reply more fully. Losses are not multiplied.
pub fn rapport(emotion: u8, start: u8, per_ten: f64, max: f64) -> f64 {
    let above = f64::from(emotion.saturating_sub(start));
    (1.0 + per_ten * above / 10.0).clamp(1.0, max.max(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gains_add_up_largest_first_each_at_a_decaying_share() {
        // 6 + 4 * 0.5 + 2 * 0.25 = 8.5, whatever the order given.
        assert_eq!(stacked(vec![2.0, 6.0, 4.0], 0.5), 8.5);
        // 8 + 8 * 0.2 = 9.6: with a small decay a second move adds little.
        assert!((stacked(vec![8.0, 8.0], 0.2) - 9.6).abs() < 1e-12);
        assert_eq!(
            stacked(vec![3.0, 5.0], 0.0),
            5.0,
            "0: only the largest counts"
        );
        assert_eq!(stacked(vec![3.0, 5.0], 1.0), 8.0, "1: they add up");
        assert_eq!(stacked(Vec::new(), 0.5), 0.0);
    }

    #[test]
    fn rapport_grows_above_the_start_up_to_its_cap() {
        assert_eq!(rapport(40, 40, 0.25, 2.0), 1.0);
        assert_eq!(
            rapport(30, 40, 0.25, 2.0),
            1.0,
            "below the start: no change"
        );
        assert_eq!(rapport(60, 40, 0.25, 2.0), 1.5); // 1 + 0.25 * 20 / 10
        assert_eq!(rapport(55, 40, 0.25, 2.0), 1.375); // 1 + 0.25 * 1.5
        assert_eq!(rapport(95, 40, 0.25, 2.0), 2.0, "capped");
        assert_eq!(rapport(95, 40, 0.0, 2.0), 1.0, "per_ten 0: none");
    }

    #[test]
    fn landing_is_proportional_up_to_full() {
        assert_eq!(landing(0.25, 0.5), 0.5);
        assert_eq!(landing(0.5, 0.5), 1.0);
        assert_eq!(landing(0.9, 0.5), 1.0);
        assert_eq!(landing(0.0, 0.5), 0.0);
        assert_eq!(landing(-0.1, 0.5), 0.0);
    }
}
