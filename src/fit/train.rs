//! Fits one of the learned heads' networks ([`Mlp`]): full batch, the project's AdamW, from a
//! seeded LeCun-normal start, so one command with the same data gives the same weights.

use candle_core::{DType, Device, Tensor, Var, D};
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};

use crate::environment::sim::mlp::Mlp;
use crate::error::Result;
use crate::learning::optimize::{AdamW, AdamWConfig};

/// The fit's settings.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FitSettings {
    pub hidden: usize,
    pub epochs: usize,
    pub lr: f64,
    pub weight_decay: f64,
    pub seed: u64,
}

impl Default for FitSettings {
    fn default() -> Self {
        FitSettings {
            hidden: 64,
            epochs: 300,
            lr: 3e-3,
            weight_decay: 1e-2,
            seed: 0,
        }
    }
}

/// What the network learns, per row of the inputs.
pub enum Targets<'a> {
    /// One class per row (softmax cross-entropy), each row weighted.
    Classes { class: &'a [u32], weight: &'a [f32] },
    /// Independent yes/no labels per output (binary cross-entropy on each output's sigmoid);
    /// `mask` is 1 where the row labels that output, 0 where it says nothing. Both [rows,
    /// outputs], row-major.
    Labels { y: &'a [f32], mask: &'a [f32] },
}

/// The loss of a batch of logits.
type LossFn = dyn Fn(&Tensor) -> candle_core::Result<Tensor>;

/// A seeded normal start for a [rows, cols] matrix, scaled by 1 / sqrt(cols) (LeCun).
fn start(rows: usize, cols: usize, rng: &mut rand_chacha::ChaCha8Rng) -> Vec<f32> {
    let n = Normal::new(0.0f32, 1.0 / (cols as f32).sqrt()).expect("a positive scale");
    (0..rows * cols).map(|_| n.sample(rng)).collect()
}

/// Fits an `input` -> `s.hidden` -> `outputs` network on the rows of `x` ([rows, input],
/// row-major), with progress shown as `what`.
pub fn fit_mlp(
    x: &[f32],
    [input, outputs]: [usize; 2],
    targets: Targets<'_>,
    s: &FitSettings,
    what: &str,
) -> Result<Mlp> {
    let dev = Device::Cpu;
    let n = x.len() / input;
    let x = Tensor::from_slice(x, (n, input), &dev)?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(s.seed);
    let h = s.hidden;
    let w1 = Var::from_vec(start(h, input, &mut rng), (h, input), &dev)?;
    let b1 = Var::zeros(h, DType::F32, &dev)?;
    let w2 = Var::from_vec(start(outputs, h, &mut rng), (outputs, h), &dev)?;
    let b2 = Var::zeros(outputs, DType::F32, &dev)?;
    let cfg = AdamWConfig {
        lr: s.lr,
        weight_decay: s.weight_decay,
        ..AdamWConfig::default()
    };
    let mut opt = AdamW::new(
        [
            ("w1".to_string(), w1.clone()),
            ("b1".to_string(), b1.clone()),
            ("w2".to_string(), w2.clone()),
            ("b2".to_string(), b2.clone()),
        ],
        cfg,
    )?;
    // The targets as tensors, and the loss of a batch of logits.
    let loss_of: Box<LossFn> = match targets {
        Targets::Classes { class, weight } => {
            let y = Tensor::from_slice(class, (n, 1), &dev)?;
            let total: f32 = weight.iter().sum();
            let w: Vec<f32> = weight.iter().map(|v| v / total).collect();
            let w = Tensor::from_vec(w, (n, 1), &dev)?;
            Box::new(move |logits: &Tensor| {
                let logp = candle_nn::ops::log_softmax(logits, D::Minus1)?;
                (logp.gather(&y, 1)? * &w)?.sum_all()?.neg()
            })
        }
        Targets::Labels { y, mask } => {
            let count: f32 = mask.iter().sum::<f32>().max(1.0);
            let y = Tensor::from_slice(y, (n, outputs), &dev)?;
            let m = (Tensor::from_slice(mask, (n, outputs), &dev)? / f64::from(count))?;
            Box::new(move |z: &Tensor| {
                // log(1 + e^z) - y z, written stably: max(z, 0) - y z + log(1 + e^-|z|).
                let stable = (z.abs()?.neg()?.exp()? + 1.0)?.log()?;
                let bce = ((z.relu()? - (&y * z)?)? + stable)?;
                (bce * &m)?.sum_all()
            })
        }
    };
    let bar = super::bar(s.epochs as u64, what);
    for _ in 0..s.epochs {
        let hidden = x.matmul(&w1.t()?)?.broadcast_add(&b1)?.relu()?;
        let logits = hidden.matmul(&w2.t()?)?.broadcast_add(&b2)?;
        let loss = loss_of(&logits)?;
        let value = f64::from(loss.to_scalar::<f32>()?);
        opt.step(value, &loss.backward()?)?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    let flat = |v: &Var| -> Result<Vec<f32>> { Ok(v.as_tensor().flatten_all()?.to_vec1()?) };
    Ok(Mlp {
        input,
        hidden: h,
        outputs,
        w1: flat(&w1)?,
        b1: flat(&b1)?,
        w2: flat(&w2)?,
        b2: flat(&b2)?,
    })
}

/// What [`best_of_grid`] chose.
pub struct Chosen {
    pub net: Mlp,
    pub settings: FitSettings,
    /// Every setting of the grid with its score.
    pub grid: Vec<(FitSettings, f64)>,
}

/// A network per setting of `grid` fit on the labels `y` of the rows of `x` ([rows, input]) where
/// `mask` is 1 ([`Targets::Labels`]), scored by `score` (higher is better): the best (the first on
/// a tie), its setting, and every setting with its score. `None` for an empty grid.
pub fn best_of_grid(
    x: &[f32],
    [input, outputs]: [usize; 2],
    (y, mask): (&[f32], &[f32]),
    grid: &[FitSettings],
    what: &str,
    score: impl Fn(&Mlp) -> f64,
) -> Result<Option<Chosen>> {
    let mut best: Option<(Mlp, FitSettings, f64)> = None;
    let mut scores = Vec::new();
    for s in grid {
        let net = fit_mlp(x, [input, outputs], Targets::Labels { y, mask }, s, what)?;
        let v = score(&net);
        scores.push((s.clone(), v));
        if best.as_ref().is_none_or(|b| v > b.2) {
            best = Some((net, s.clone(), v));
        }
    }
    Ok(best.map(|(net, settings, _)| Chosen {
        net,
        settings,
        grid: scores,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::environment::sim::mlp::sigmoid;

    #[test]
    fn the_grid_keeps_the_best_score_and_the_first_on_a_tie() {
        let x = [1.0f32, -1.0, 2.0, -2.0];
        let y = [1.0f32, 0.0, 1.0, 0.0];
        let mask = [1.0f32; 4];
        let setting = |hidden, seed| FitSettings {
            hidden,
            epochs: 2,
            seed,
            ..FitSettings::default()
        };
        let grid = [setting(2, 0), setting(3, 1), setting(3, 2)];
        // Scored by the hidden width: the two 3s tie, and the first of them (seed 1) is kept.
        let c = best_of_grid(&x, [1, 1], (&y, &mask), &grid, "t", |n| n.hidden as f64)
            .unwrap()
            .expect("a choice");
        assert_eq!((c.settings.hidden, c.settings.seed), (3, 1));
        let scores: Vec<f64> = c.grid.iter().map(|(_, v)| *v).collect();
        assert_eq!(scores, [2.0, 3.0, 3.0]);
        let alone = best_of_grid(&x, [1, 1], (&y, &mask), &grid[1..2], "t", |_| 0.0).unwrap();
        assert_eq!(
            c.net,
            alone.expect("a choice").net,
            "the network of that setting"
        );
        assert!(best_of_grid(&x, [1, 1], (&y, &mask), &[], "t", |_| 0.0)
            .unwrap()
            .is_none());
    }

    #[test]
    fn labels_are_learned_where_the_mask_says_and_only_there() {
        // Output 0 is the sign of the first feature; output 1 is labelled 1 on every row but
        // masked out, so it stays near its start.
        let x: Vec<f32> = [1.0, 0.5, -1.0, 0.5, 2.0, -0.3, -2.0, -0.3]
            .into_iter()
            .collect();
        let y = [1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0];
        let mask = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0];
        let s = FitSettings {
            hidden: 4,
            epochs: 300,
            lr: 3e-2,
            weight_decay: 0.0,
            seed: 1,
        };
        let fit = || {
            let targets = Targets::Labels { y: &y, mask: &mask };
            fit_mlp(&x, [2, 2], targets, &s, "test").unwrap()
        };
        let net = fit();
        let p = |row: &[f32]| sigmoid(net.logits(row)[0]);
        assert!(p(&[1.5, 0.0]) > 0.9 && p(&[-1.5, 0.0]) < 0.1);
        let again = fit();
        assert_eq!(net, again, "seeded: the same weights twice");
    }
}
