//! Unit tests of the GRPO loss, pinned to hand-computed numbers.

use super::*;
use candle_core::{Device, Var};

const E05: f32 = 1.648_721_3; // e^0.5
const EM05: f32 = 0.606_530_7; // e^-0.5
const E01: f32 = 1.105_170_9; // e^0.1

/// The shared example. Row 0 has A = +1, log-ratios [0, 0.5, -0.5], all three tokens on policy;
/// row 1 has A = -0.5, log-ratios [0.1, -0.5, 0.3], last token masked.
/// Ratios: row 0 [1, e^0.5 = 1.648721 (> 1.28 with A > 0: clipped high), e^-0.5 = 0.606531
/// (< 0.8 but A > 0: not clipped)]; row 1 [e^0.1 = 1.105171, e^-0.5 = 0.606531 (< 0.8 with A < 0:
/// clipped low), masked].
/// Surrogates r A (or bound A where clipped): row 0 [1, 1.28, 0.606531] sum 2.886531;
/// row 1 [-0.552585, 0.8 * -0.5 = -0.4] sum -0.952585. Total 1.933945 over 5 tokens.
struct Example {
    new: Var,
    old: Tensor,
    adv: Tensor,
    mask: Tensor,
}

fn example() -> Example {
    let dev = Device::Cpu;
    let old = Tensor::new(&[[-1.0f32, -2.0, -0.5], [-0.3, -1.0, -2.0]], &dev).unwrap();
    let delta = Tensor::new(&[[0.0f32, 0.5, -0.5], [0.1, -0.5, 0.3]], &dev).unwrap();
    let new = Var::from_tensor(&(&old + &delta).unwrap()).unwrap();
    let adv = Tensor::new(&[1.0f32, -0.5], &dev).unwrap();
    let mask = Tensor::new(&[[1u8, 1, 1], [1, 1, 0]], &dev).unwrap();
    Example {
        new,
        old,
        adv,
        mask,
    }
}

fn cfg(aggregation: Aggregation) -> LossConfig {
    LossConfig {
        aggregation,
        ..LossConfig::default()
    }
}

fn run(ex: &Example, c: &LossConfig, totals: Option<BatchTotals>) -> LossOutput {
    let inputs = LossInputs {
        logp_new: ex.new.as_tensor(),
        logp_old: &ex.old,
        logp_ref: None,
        advantages: &ex.adv,
        mask: &ex.mask,
    };
    grpo_loss(&inputs, c, totals).unwrap()
}

fn grad2(loss: &Tensor, var: &Var) -> Vec<Vec<f32>> {
    let grads = loss.backward().unwrap();
    grads.get(var.as_tensor()).unwrap().to_vec2().unwrap()
}

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-5, "{a} vs {b}");
}

#[test]
fn token_mean_value_stats_and_gradient() {
    let ex = example();
    let out = run(&ex, &cfg(Aggregation::TokenMean), None);
    // -(1.933945) / 5 = -0.386789.
    close(out.stats.loss, -0.386_789);
    assert_eq!((out.stats.tokens, out.stats.sequences), (5, 2));
    // One token clipped low (row 1 token 1), one high (row 0 token 1), of 5: 0.2 each.
    assert_eq!((out.stats.clipped_low, out.stats.clipped_high), (1, 1));
    close(out.stats.clip_frac_low(), 0.2);
    close(out.stats.clip_frac_high(), 0.2);
    // Mean ratio (1 + 1.648721 + 0.606531 + 1.105171 + 0.606531) / 5 = 4.966954 / 5 = 0.993391.
    close(out.stats.mean_ratio(), 0.993_391);
    assert_eq!(out.stats.mean_kl(), None);
    // d loss / d logp_new = -A r / 5 where unclipped, 0 where clipped or masked:
    // row 0 [-1 * 1 / 5 = -0.2, 0, -0.606531 / 5 = -0.121306];
    // row 1 [0.5 * 1.105171 / 5 = 0.110517, 0, 0].
    let g = grad2(&out.loss, &ex.new);
    let want = [[-0.2, 0.0, -EM05 / 5.0], [0.5 * E01 / 5.0, 0.0, 0.0]];
    for (gr, wr) in g.iter().zip(want.iter()) {
        for (x, y) in gr.iter().zip(wr.iter()) {
            assert!((x - y).abs() < 1e-6, "{g:?} vs {want:?}");
        }
    }
    // The clipped tokens have exactly zero gradient.
    assert_eq!((g[0][1], g[1][1]), (0.0, 0.0));
}

#[test]
fn seq_mean_token_sum_value_and_gradient() {
    let ex = example();
    let out = run(&ex, &cfg(Aggregation::SeqMeanTokenSum), None);
    // -(2.886531 - 0.952585) / 2 sequences = -0.966973.
    close(out.stats.loss, -0.966_973);
    // Gradient -A r / 2: row 0 [-0.5, 0, -0.303265], row 1 [0.5 * 1.105171 / 2 = 0.276293, 0, 0].
    let g = grad2(&out.loss, &ex.new);
    assert!((g[0][0] + 0.5).abs() < 1e-6 && (g[0][2] + EM05 / 2.0).abs() < 1e-6);
    assert!((g[1][0] - 0.25 * E01).abs() < 1e-6 && g[0][1] == 0.0);
}

#[test]
fn seq_mean_token_mean_value_and_gradient() {
    let ex = example();
    let out = run(&ex, &cfg(Aggregation::SeqMeanTokenMean), None);
    // Row means 2.886531 / 3 = 0.962177 and -0.952585 / 2 = -0.476293;
    // loss -(0.962177 - 0.476293) / 2 = -0.242942.
    close(out.stats.loss, -0.242_942);
    // Gradient -A r / (n_b * 2): row 0 token 0: -1 / 6 = -0.166667; row 1 token 0:
    // 0.5 * 1.105171 / 4 = 0.138146.
    let g = grad2(&out.loss, &ex.new);
    assert!((g[0][0] + 1.0 / 6.0).abs() < 1e-6);
    assert!((g[1][0] - 0.125 * E01).abs() < 1e-6);
}

#[test]
fn objective_on_both_sides_of_the_clip() {
    // One token, A = +2: ratio e^0.1 = 1.105171 (inside) gives -2 * 1.105171 = -2.210342;
    // ratio e^0.5 = 1.648721 (above 1.28) gives -2 * 1.28 = -2.56.
    // A = -2: ratio e^-0.5 = 0.606531 (below 0.8) gives -(-2 * 0.8) = 1.6; ratio e^0.5 (above
    // 1.28, A < 0: not clipped) gives -(-2 * 1.648721) = 3.297443.
    let dev = Device::Cpu;
    let cases = [
        (2.0f32, 0.1f32, -2.0 * E01, false),
        (2.0, 0.5, -2.56, true),
        (-2.0, -0.5, 1.6, true),
        (-2.0, 0.5, 2.0 * E05, false),
    ];
    for (a, log_ratio, want, clipped) in cases {
        let new = Var::from_tensor(&Tensor::new(&[[log_ratio]], &dev).unwrap()).unwrap();
        let old = Tensor::zeros((1, 1), DType::F32, &dev).unwrap();
        let adv = Tensor::new(&[a], &dev).unwrap();
        let mask = Tensor::ones((1, 1), DType::F32, &dev).unwrap();
        let ex = Example {
            new,
            old,
            adv,
            mask,
        };
        let out = run(&ex, &LossConfig::default(), None);
        close(out.stats.loss, want as f64);
        let g = grad2(&out.loss, &ex.new)[0][0];
        // Unclipped gradient: -A r; clipped: 0.
        let want_g = if clipped { 0.0 } else { -a * log_ratio.exp() };
        assert!(
            (g - want_g).abs() < 1e-5,
            "A={a} lr={log_ratio}: {g} vs {want_g}"
        );
    }
}

#[test]
fn k3_kl_on_hand_numbers() {
    // A = 0 so only the KL term is left. logp_new [0, -1, 1] and ref 0: d = ref - new = [0, 1, -1];
    // k3 = e^d - d - 1 = [0, e - 2 = 0.718282, e^-1 = 0.367879]; mean 1.086161 / 3 = 0.362054.
    // beta 0.1, token_mean: loss 0.036205. Gradient beta (1 - e^d) / 3:
    // [0, 0.1 * (1 - e) / 3 = -0.057276, 0.1 * (1 - e^-1) / 3 = 0.021071].
    let dev = Device::Cpu;
    let new = Var::from_tensor(&Tensor::new(&[[0.0f32, -1.0, 1.0]], &dev).unwrap()).unwrap();
    let reference = Tensor::zeros((1, 3), DType::F32, &dev).unwrap();
    let adv = Tensor::new(&[0.0f32], &dev).unwrap();
    let mask = Tensor::ones((1, 3), DType::F32, &dev).unwrap();
    let inputs = LossInputs {
        logp_new: new.as_tensor(),
        logp_old: new.as_tensor(),
        logp_ref: Some(&reference),
        advantages: &adv,
        mask: &mask,
    };
    let c = LossConfig {
        beta: 0.1,
        ..LossConfig::default()
    };
    let out = grpo_loss(&inputs, &c, None).unwrap();
    close(out.stats.mean_kl().unwrap(), 0.362_054);
    close(out.stats.loss, 0.036_205);
    let g = grad2(&out.loss, &new);
    let e = std::f32::consts::E;
    let want = [0.0, 0.1 * (1.0 - e) / 3.0, 0.1 * (1.0 - 1.0 / e) / 3.0];
    for (x, y) in g[0].iter().zip(want) {
        assert!((x - y).abs() < 1e-6, "{g:?} vs {want:?}");
    }
    // beta > 0 without a reference is an error; beta 0 without one is fine.
    let no_ref = LossInputs {
        logp_ref: None,
        ..inputs
    };
    assert!(grpo_loss(&no_ref, &c, None).is_err());
    assert!(grpo_loss(&no_ref, &LossConfig::default(), None).is_ok());
}

#[test]
fn micro_batches_accumulate_to_the_full_batch() {
    for agg in [
        Aggregation::TokenMean,
        Aggregation::SeqMeanTokenMean,
        Aggregation::SeqMeanTokenSum,
    ] {
        let ex = example();
        let full = run(&ex, &cfg(agg), None);
        let full_grad = grad2(&full.loss, &ex.new);
        // The same batch as two micro-batches of one row each, sharing the full totals (5 tokens,
        // 2 sequences); gradients accumulate with GradStore::extend.
        let totals = BatchTotals::of_mask(&ex.mask).unwrap();
        assert_eq!(
            totals,
            BatchTotals {
                tokens: 5,
                sequences: 2
            }
        );
        let mut stats = LossStats::default();
        let mut store: Option<candle_core::backprop::GradStore> = None;
        for row in 0..2 {
            let new = ex.new.as_tensor().narrow(0, row, 1).unwrap();
            let old = ex.old.narrow(0, row, 1).unwrap();
            let adv = ex.adv.narrow(0, row, 1).unwrap();
            let mask = ex.mask.narrow(0, row, 1).unwrap();
            let inputs = LossInputs {
                logp_new: &new,
                logp_old: &old,
                logp_ref: None,
                advantages: &adv,
                mask: &mask,
            };
            let out = grpo_loss(&inputs, &cfg(agg), Some(totals)).unwrap();
            stats.merge(&out.stats);
            let g = out.loss.backward().unwrap();
            match store.as_mut() {
                Some(s) => s.extend(g).unwrap(),
                None => store = Some(g),
            }
        }
        close(stats.loss, full.stats.loss);
        assert_eq!(stats.tokens, 5);
        close(stats.clip_frac_low(), full.stats.clip_frac_low());
        let acc: Vec<Vec<f32>> = store
            .unwrap()
            .get(ex.new.as_tensor())
            .unwrap()
            .to_vec2()
            .unwrap();
        for (a, b) in acc.iter().flatten().zip(full_grad.iter().flatten()) {
            assert!((a - b).abs() < 1e-7, "{agg:?}: {acc:?} vs {full_grad:?}");
        }
    }
}

#[test]
fn masked_garbage_does_not_leak() {
    // -inf and NaN on a masked position change neither the loss nor the gradient.
    let ex = example();
    let clean = run(&ex, &LossConfig::default(), None);
    let bad_old = Tensor::new(
        &[[-1.0f32, -2.0, -0.5], [-0.3, -1.0, f32::NEG_INFINITY]],
        &Device::Cpu,
    )
    .unwrap();
    let dirty = Example {
        old: bad_old,
        ..example()
    };
    let out = run(&dirty, &LossConfig::default(), None);
    close(out.stats.loss, clean.stats.loss);
    let g = grad2(&out.loss, &dirty.new);
    assert!(g.iter().flatten().all(|x| x.is_finite()));
}

#[test]
fn shape_mismatch_and_small_totals_are_errors() {
    let ex = example();
    let short_adv = Tensor::new(&[1.0f32], &Device::Cpu).unwrap();
    let inputs = LossInputs {
        logp_new: ex.new.as_tensor(),
        logp_old: &ex.old,
        logp_ref: None,
        advantages: &short_adv,
        mask: &ex.mask,
    };
    assert!(grpo_loss(&inputs, &LossConfig::default(), None).is_err());
    let inputs = LossInputs {
        advantages: &ex.adv,
        ..inputs
    };
    let too_small = BatchTotals {
        tokens: 4,
        sequences: 2,
    };
    assert!(grpo_loss(&inputs, &LossConfig::default(), Some(too_small)).is_err());
}
