//! Time to draw one token from SmolLM2-sized logits (49152) at the quickstart's sampling settings
//! (temperature 0.7, top-p 0.9): one row, a decode step's 8 rows one after another, and the same
//! 8 rows with `sample_rows` (in parallel on rayon's pool). The logits are Zipf-like over a
//! scrambled vocabulary (-1.2 ln(rank + 1) plus a little noise), so that at 0.7 the nucleus holds
//! tens of tokens, as a chat model's usually does.

use criterion::{criterion_group, criterion_main, Criterion};
use empathy_engine::sampler::{sample_rows, sample_token, SamplingParams};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const VOCAB: usize = 49152;

fn logits(seed: u64) -> Vec<f32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut rank: Vec<usize> = (0..VOCAB).collect();
    for i in (1..VOCAB).rev() {
        rank.swap(i, rng.random_range(0..=i));
    }
    rank.iter()
        .map(|&r| -1.2 * ((r + 1) as f32).ln() + rng.random_range(-0.1f32..0.1))
        .collect()
}

fn bench(c: &mut Criterion) {
    let params = SamplingParams {
        temperature: 0.7,
        top_p: 0.9,
        max_new_tokens: 1,
        greedy: false,
    };
    let rows: Vec<Vec<f32>> = (0..8).map(logits).collect();
    let mut rngs: Vec<ChaCha8Rng> = (0..8).map(ChaCha8Rng::seed_from_u64).collect();
    let mut group = c.benchmark_group("sample 49152 logits, T 0.7, top-p 0.9");
    group.bench_function("1 row", |b| {
        b.iter(|| sample_token(&rows[0], &params, &mut rngs[0]))
    });
    group.bench_function("8 rows one after another", |b| {
        b.iter(|| {
            rows.iter()
                .zip(rngs.iter_mut())
                .map(|(l, rng)| sample_token(l, &params, rng))
                .sum::<u32>()
        })
    });
    group.bench_function("8 rows, sample_rows", |b| {
        b.iter(|| sample_rows(&rows, &params, &mut rngs).len())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
