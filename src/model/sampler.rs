//! Next-token sampling: greedy, temperature and nucleus (top-p, Holtzman et al. 2020). Top-p
//! never sorts the whole vocabulary: it partially selects the k best candidates (O(V)), sorts
//! only those, and widens k (x4) in the rare case their mass falls short of p.

use std::cmp::Ordering;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// How to pick tokens.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SamplingParams {
    /// Softmax temperature (default 1.0); <= 0 means greedy.
    pub temperature: f64,
    /// Nucleus mass in (0, 1] (default 1.0 = no truncation).
    pub top_p: f64,
    /// Cap on generated tokens per sequence (default 256).
    pub max_new_tokens: usize,
    /// Always take the most likely token (default false).
    pub greedy: bool,
}

impl Default for SamplingParams {
    fn default() -> Self {
        SamplingParams {
            temperature: 1.0,
            top_p: 1.0,
            max_new_tokens: 256,
            greedy: false,
        }
    }
}

/// First candidate count tried by top-p before widening.
const FIRST_K: usize = 64;

/// Index of the largest logit (lowest index on ties, NaN never wins).
pub fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0usize;
    let mut best_v = f32::NEG_INFINITY;
    for (i, &v) in logits.iter().enumerate() {
        if v > best_v {
            best = i;
            best_v = v;
        }
    }
    best as u32
}

/// Draws the next token from `logits` (one row) with `rng`.
pub fn sample_token(logits: &[f32], params: &SamplingParams, rng: &mut ChaCha8Rng) -> u32 {
    if params.greedy || params.temperature <= 0.0 || logits.len() < 2 {
        return argmax(logits);
    }
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let inv_t = (1.0 / params.temperature) as f32;
    let weights: Vec<f32> = logits
        .iter()
        .map(|&l| {
            if l.is_nan() {
                0.0
            } else {
                ((l - max) * inv_t).exp()
            }
        })
        .collect();
    let u: f64 = rng.random();
    if params.top_p >= 1.0 {
        let total: f64 = weights.iter().map(|&w| w as f64).sum();
        return pick(
            weights.iter().enumerate().map(|(i, &w)| (i as u32, w)),
            u * total,
        );
    }
    let cands = nucleus(&weights, params.top_p);
    let mass: f64 = cands.iter().map(|&(_, w)| w as f64).sum();
    pick(cands.into_iter(), u * mass)
}

/// Walks (id, weight) pairs until the cumulative weight exceeds `target`.
fn pick(items: impl Iterator<Item = (u32, f32)>, target: f64) -> u32 {
    let mut acc = 0f64;
    let mut last = 0u32;
    for (i, w) in items {
        if w <= 0.0 {
            continue;
        }
        acc += w as f64;
        last = i;
        if acc > target {
            return i;
        }
    }
    last
}

/// Descending weight, then ascending id: a total order so results never depend on the sort.
fn by_weight(weights: &[f32]) -> impl Fn(&u32, &u32) -> Ordering + '_ {
    move |&a, &b| {
        weights[b as usize]
            .total_cmp(&weights[a as usize])
            .then(a.cmp(&b))
    }
}

/// The smallest set of most likely tokens whose mass reaches `top_p` of the total, sorted by
/// descending weight: (id, unnormalised weight).
pub fn nucleus(weights: &[f32], top_p: f64) -> Vec<(u32, f32)> {
    let total: f64 = weights.iter().map(|&w| w as f64).sum();
    let target = top_p * total;
    let n = weights.len();
    let mut idx: Vec<u32> = (0..n as u32).collect();
    let mut k = FIRST_K.min(n);
    loop {
        if k < n {
            idx.select_nth_unstable_by(k - 1, by_weight(weights));
        }
        let top = &mut idx[..k];
        top.sort_unstable_by(by_weight(weights));
        let mut acc = 0f64;
        for (m, &i) in top.iter().enumerate() {
            acc += weights[i as usize] as f64;
            if acc >= target {
                return top[..=m]
                    .iter()
                    .map(|&i| (i, weights[i as usize]))
                    .collect();
            }
        }
        if k == n {
            return top.iter().map(|&i| (i, weights[i as usize])).collect();
        }
        k = (k * 4).min(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn nucleus_by_hand() {
        // Probabilities 0.2, 0.5, 0.3: sorted 0.5 (id 1), 0.3 (id 2), 0.2 (id 0).
        // top_p 0.6: 0.5 < 0.6, 0.5 + 0.3 = 0.8 >= 0.6 -> {1, 2}. top_p 0.49: {1} (0.5 exactly
        // sits on the boundary, where f32 rounding of 0.2 and 0.3 decides).
        let w = [0.2f32, 0.5, 0.3];
        let ids = |p| {
            nucleus(&w, p)
                .into_iter()
                .map(|(i, _)| i)
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(0.6), vec![1, 2]);
        assert_eq!(ids(0.49), vec![1]);
        assert_eq!(ids(1.0), vec![1, 2, 0]);
    }

    #[test]
    fn nucleus_widens_beyond_first_k_and_matches_full_sort() {
        // A flat-ish distribution over 49152 tokens: the nucleus needs far more than 64 tokens.
        let w: Vec<f32> = (0..49152u32)
            .map(|i| 1.0 + ((i * 7919) % 1000) as f32 / 1000.0)
            .collect();
        let got = nucleus(&w, 0.9);
        let mut all: Vec<u32> = (0..w.len() as u32).collect();
        all.sort_by(by_weight(&w));
        let total: f64 = w.iter().map(|&x| x as f64).sum();
        let mut acc = 0.0;
        let mut want = Vec::new();
        for i in all {
            acc += w[i as usize] as f64;
            want.push(i);
            if acc >= 0.9 * total {
                break;
            }
        }
        assert!(got.len() > FIRST_K);
        assert_eq!(got.into_iter().map(|(i, _)| i).collect::<Vec<_>>(), want);
    }

    #[test]
    fn top_p_sampling_never_leaves_nucleus_and_is_seeded() {
        let logits: Vec<f32> = [0.2f32, 0.5, 0.3].iter().map(|p| p.ln()).collect();
        let params = SamplingParams {
            temperature: 1.0,
            top_p: 0.6,
            max_new_tokens: 1,
            greedy: false,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let draws: Vec<u32> = (0..2000)
            .map(|_| sample_token(&logits, &params, &mut rng))
            .collect();
        assert!(!draws.contains(&0));
        // Within the nucleus, P(1) = 0.5 / 0.8 = 0.625.
        let ones = draws.iter().filter(|&&d| d == 1).count() as f64 / 2000.0;
        assert!((ones - 0.625).abs() < 0.04, "{ones}");
        let mut again = ChaCha8Rng::seed_from_u64(7);
        let replay: Vec<u32> = (0..2000)
            .map(|_| sample_token(&logits, &params, &mut again))
            .collect();
        assert_eq!(draws, replay);
    }

    #[test]
    fn greedy_and_zero_temperature_take_argmax() {
        let logits = [0.1f32, 2.0, 2.0, -1.0];
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let p = SamplingParams {
            temperature: 0.0,
            ..SamplingParams::default()
        };
        assert_eq!(sample_token(&logits, &p, &mut rng), 1);
        assert_eq!(argmax(&[f32::NAN, 1.0]), 1);
    }
}
