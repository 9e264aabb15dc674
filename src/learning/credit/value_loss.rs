//! PPO's clipped value loss (verl `compute_value_loss`, `cliprange_value`; the value clipping of
//! OpenAI's baselines PPO2): the new prediction may move at most `clip` away from the value
//! recorded at rollout time before its error stops counting.
//!
//! Per policy token: v_clip = clamp(v_new, v_old - clip, v_old + clip),
//!   l_t = 0.5 * max((v_new - R)^2, (v_clip - R)^2),
//! averaged over the batch's policy tokens (the normalizer is passed in, so micro-batches add up to
//! the batch). Where the clipped error is the larger one the prediction is already outside the
//! band, so that token contributes no gradient. `clipped` counts those tokens (verl's
//! `vf_clipfrac`).

use candle_core::{DType, Tensor};

use crate::error::Result;

/// The value loss of one (micro-)batch and its detached statistics.
pub struct ValueLoss {
    /// Scalar loss, differentiable w.r.t. the new values.
    pub loss: Tensor,
    /// Its value.
    pub value: f64,
    /// Policy tokens whose clipped error was the larger (no gradient).
    pub clipped: usize,
}

/// `v_new`, `v_old`, `returns` and `mask` are `[B, T]`; `tokens` is the whole batch's count of
/// policy tokens.
pub fn value_loss(
    v_new: &Tensor,
    v_old: &Tensor,
    returns: &Tensor,
    mask: &Tensor,
    clip: f64,
    tokens: usize,
) -> Result<ValueLoss> {
    let v_old = v_old.detach();
    let returns = returns.detach();
    let mask = mask.to_dtype(v_new.dtype())?;
    let lo = (&v_old - clip)?;
    let hi = (&v_old + clip)?;
    let v_clip = v_new.detach().maximum(&lo)?.minimum(&hi)?;
    let l1 = (v_new - &returns)?.sqr()?;
    let l2 = (v_clip - &returns)?.sqr()?;
    let use_clip = l2.gt(&l1.detach())?.to_dtype(v_new.dtype())?;
    let per_token = ((&l1 * (1.0 - &use_clip)?)? + (l2 * &use_clip)?)?;
    let loss = ((per_token * &mask)?.sum_all()? * (0.5 / tokens.max(1) as f64))?;
    let clipped = (use_clip * &mask)?
        .sum_all()?
        .to_dtype(DType::F64)?
        .to_scalar::<f64>()?;
    Ok(ValueLoss {
        value: loss.to_dtype(DType::F64)?.to_scalar::<f64>()?,
        loss,
        clipped: clipped.round() as usize,
    })
}

/// Explained variance of the values as predictors of the returns over the policy tokens:
/// 1 - Var(R - V) / Var(R) (verl `vf_explained_var`). 1 is perfect, 0 is no better than a
/// constant, negative is worse. `None` when the returns have no variance.
pub fn explained_variance(values: &[f32], returns: &[f32]) -> Option<f64> {
    let var = |xs: &mut dyn Iterator<Item = f64>| {
        let v: Vec<f64> = xs.collect();
        let n = v.len() as f64;
        let m = v.iter().sum::<f64>() / n;
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n
    };
    if values.len() != returns.len() || returns.len() < 2 {
        return None;
    }
    let var_r = var(&mut returns.iter().map(|&r| r as f64));
    if var_r <= 0.0 {
        return None;
    }
    let var_d = var(&mut returns.iter().zip(values).map(|(&r, &v)| (r - v) as f64));
    Some(1.0 - var_d / var_r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Var};

    #[test]
    fn clipped_value_loss_by_hand() {
        // clip 0.5, three tokens (the third masked):
        //   token 0: v_new 0.0, v_old 0.2, R 0.5: band [-0.3, 0.7], v_clip 0.0; both errors 0.25.
        //   token 1: v_new 1.0, v_old 0.2, R 1.2: v_clip 0.7; errors 0.04 and 0.25: clipped
        //            (0.25 counts, no gradient).
        // loss = 0.5 * (0.25 + 0.25) / 2 tokens = 0.125. Gradient: token 0 0.5 * 2 * (0 - 0.5) / 2
        // = -0.25; token 1 0; masked 0. One of two tokens clipped.
        let dev = Device::Cpu;
        let v_new = Var::new(&[[0.0f32, 1.0, 3.0]], &dev).unwrap();
        let v_old = Tensor::new(&[[0.2f32, 0.2, 0.0]], &dev).unwrap();
        let ret = Tensor::new(&[[0.5f32, 1.2, 0.0]], &dev).unwrap();
        let mask = Tensor::new(&[[1f32, 1.0, 0.0]], &dev).unwrap();
        let out = value_loss(v_new.as_tensor(), &v_old, &ret, &mask, 0.5, 2).unwrap();
        assert!((out.value - 0.125).abs() < 1e-6, "{}", out.value);
        assert_eq!(out.clipped, 1);
        let g = out.loss.backward().unwrap();
        let g: Vec<Vec<f32>> = g.get(v_new.as_tensor()).unwrap().to_vec2().unwrap();
        assert!(
            (g[0][0] + 0.25).abs() < 1e-6 && g[0][1] == 0.0 && g[0][2] == 0.0,
            "{g:?}"
        );
    }

    #[test]
    fn explained_variance_by_hand() {
        // R = [1, 2, 3, 4] (mean 2.5, var 1.25); V = [1, 2, 3, 3]: R - V = [0, 0, 0, 1],
        // mean 0.25, var (3 * 0.0625 + 0.5625) / 4 = 0.1875. EV = 1 - 0.1875 / 1.25 = 0.85.
        let ev = explained_variance(&[1.0, 2.0, 3.0, 3.0], &[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert!((ev - 0.85).abs() < 1e-9, "{ev}");
        // A constant predictor explains nothing: 0.
        let ev = explained_variance(&[7.0; 4], &[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert!(ev.abs() < 1e-12);
        assert_eq!(explained_variance(&[0.0, 0.0], &[1.0, 1.0]), None);
    }
}
