//! Next-token sampling: greedy, temperature and nucleus (top-p, Holtzman et al. 2020). Top-p
//! never sorts the whole vocabulary: one pass keeps the tokens whose weight is at least a
//! threshold (1e-3 of the most likely token's, then 1e-6), a prefix of the sorted vocabulary, and
//! sorts only those when their mass reaches p; else it sorts everything. Rows of a batch are
//! sampled in parallel ([`sample_rows`]), each from its own generator, so a row's token never
//! depends on the others or on the thread count.

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

/// Weight thresholds (relative to the most likely token's, which is 1) tried by top-p before
/// sorting the whole vocabulary: at temperature 1 they keep the tokens within ln(1e3) = 6.9 and
/// ln(1e6) = 13.8 nats of the best.
const THRESHOLDS: [f32; 2] = [1e-3, 1e-6];

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

/// Draws one token per row of `logits` ([rows][vocab]), row r with `rngs[r]`, rows in parallel
/// on rayon's pool: the same tokens as [`sample_token`] row after row.
pub fn sample_rows<R: AsRef<[f32]> + Sync>(
    logits: &[R],
    params: &SamplingParams,
    rngs: &mut [ChaCha8Rng],
) -> Vec<u32> {
    use rayon::prelude::*;
    assert_eq!(
        logits.len(),
        rngs.len(),
        "sample_rows: one generator per row"
    );
    logits
        .par_iter()
        .zip(rngs.par_iter_mut())
        .map(|(row, rng)| sample_token(row.as_ref(), params, rng))
        .collect()
}

/// Draws the next token from `logits` (one row) with `rng`.
pub fn sample_token(logits: &[f32], params: &SamplingParams, rng: &mut ChaCha8Rng) -> u32 {
    if params.greedy || params.temperature <= 0.0 || logits.len() < 2 {
        return argmax(logits);
    }
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let inv_t = (1.0 / params.temperature) as f32;
    // The weights and their total in one pass (the total's additions in vocabulary order, as a
    // separate sum would make them).
    let mut total = 0f64;
    let weights: Vec<f32> = logits
        .iter()
        .map(|&l| {
            let w = if l.is_nan() {
                0.0
            } else {
                ((l - max) * inv_t).exp()
            };
            total += w as f64;
            w
        })
        .collect();
    let u: f64 = rng.random();
    if params.top_p >= 1.0 {
        return pick(
            weights.iter().enumerate().map(|(i, &w)| (i as u32, w)),
            u * total,
        );
    }
    let cands = nucleus_of(&weights, total, params.top_p);
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
/// descending weight: (id, unnormalised weight). `weights` are exp((logit - max) / T), so the
/// most likely token weighs 1.
pub fn nucleus(weights: &[f32], top_p: f64) -> Vec<(u32, f32)> {
    let total: f64 = weights.iter().map(|&w| w as f64).sum();
    nucleus_of(weights, total, top_p)
}

/// [`nucleus`] given the weights' `total`.
fn nucleus_of(weights: &[f32], total: f64, top_p: f64) -> Vec<(u32, f32)> {
    let target = top_p * total;
    // The tokens at or above a threshold are a prefix of the vocabulary sorted by `by_weight`
    // (every other token weighs less than each of them), so when their mass reaches the target
    // the nucleus, the shortest prefix that does, lies inside them.
    for tau in THRESHOLDS {
        let mut top: Vec<u32> = (0..weights.len() as u32)
            .filter(|&i| weights[i as usize] >= tau)
            .collect();
        if let Some(n) = prefix_reaching(weights, &mut top, target) {
            top.truncate(n);
            return top.into_iter().map(|i| (i, weights[i as usize])).collect();
        }
    }
    let mut all: Vec<u32> = (0..weights.len() as u32).collect();
    let n = prefix_reaching(weights, &mut all, target).unwrap_or(all.len());
    all.truncate(n);
    all.into_iter().map(|i| (i, weights[i as usize])).collect()
}

/// Sorts `ids` by descending weight and returns the length of the shortest prefix whose mass
/// reaches `target` (None when all of them fall short).
fn prefix_reaching(weights: &[f32], ids: &mut [u32], target: f64) -> Option<usize> {
    ids.sort_unstable_by(by_weight(weights));
    let mut acc = 0f64;
    for (m, &i) in ids.iter().enumerate() {
        acc += weights[i as usize] as f64;
        if acc >= target {
            return Some(m + 1);
        }
    }
    None
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

    /// The definition: sort everything, take the shortest prefix reaching top_p of the total.
    fn nucleus_by_full_sort(w: &[f32], top_p: f64) -> Vec<u32> {
        let mut all: Vec<u32> = (0..w.len() as u32).collect();
        all.sort_by(by_weight(w));
        let total: f64 = w.iter().map(|&x| x as f64).sum();
        let mut acc = 0.0;
        let mut want = Vec::new();
        for i in all {
            acc += w[i as usize] as f64;
            want.push(i);
            if acc >= top_p * total {
                break;
            }
        }
        want
    }

    /// Weights exp((l - max) / T) of Zipf-like logits -s ln(rank + 1) over a scrambled vocabulary.
    fn zipf_weights(n: u32, s: f32, temperature: f32) -> Vec<f32> {
        let logits: Vec<f32> = (0..n)
            .map(|i| -s * (((i * 7919) % n) as f32 + 1.0).ln())
            .collect();
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        logits
            .iter()
            .map(|&l| ((l - max) * (1.0 / temperature)).exp())
            .collect()
    }

    #[test]
    fn nucleus_through_each_threshold_matches_full_sort() {
        // Steep (the 1e-3 set suffices), Zipf 1.1 (1e-3 keeps 534 tokens, 75% of the mass, so
        // p >= 0.75 needs the 1e-6 set), shallow and flat (every token is above 1e-3), a tail so
        // heavy that only the full sort reaches p, and ties at a threshold (kept whole).
        let mut ties = vec![1e-3f32; 1000];
        ties[0] = 1.0;
        let cases = [
            zipf_weights(49152, 1.5, 0.7),
            zipf_weights(49152, 1.1, 1.0),
            zipf_weights(49152, 0.5, 1.0),
            zipf_weights(49152, 0.02, 1.0),
            vec![1e-7f32; 49152].into_iter().chain([1.0]).collect(),
            ties,
        ];
        for (c, w) in cases.iter().enumerate() {
            for p in [0.1, 0.5, 0.9, 0.95, 0.999, 1.0] {
                let got: Vec<u32> = nucleus(w, p).into_iter().map(|(i, _)| i).collect();
                assert_eq!(got, nucleus_by_full_sort(w, p), "case {c}, top_p {p}");
            }
        }
    }

    #[test]
    fn rows_in_parallel_draw_what_each_row_draws_alone() {
        let params = SamplingParams {
            temperature: 0.7,
            top_p: 0.9,
            max_new_tokens: 1,
            greedy: false,
        };
        let rows: Vec<Vec<f32>> = (1..=9)
            .map(|r| {
                zipf_weights(4096, 0.3 * r as f32, 1.0)
                    .iter()
                    .map(|w| w.ln())
                    .collect()
            })
            .collect();
        let seeded = || -> Vec<ChaCha8Rng> { (0..9).map(ChaCha8Rng::seed_from_u64).collect() };
        let mut par = seeded();
        let mut seq = seeded();
        for _ in 0..20 {
            let got = sample_rows(&rows, &params, &mut par);
            let want: Vec<u32> = rows
                .iter()
                .zip(seq.iter_mut())
                .map(|(l, rng)| sample_token(l, &params, rng))
                .collect();
            assert_eq!(got, want);
        }
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
