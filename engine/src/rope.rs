//! Rotary position embedding tables (Su et al. 2021, RoFormer): one cos/sin row per position,
//! shared by the fused inference kernels and the differentiable training ops.

use candle_core::{Device, Tensor};

use super::model_config::{Llama3RopeScaling, ModelConfig};
use crate::error::Result;

/// Longest table we precompute; longer contexts are refused with a clear error.
pub const MAX_TABLE_POSITIONS: usize = 32_768;

/// Precomputed cos/sin, each [positions, head_dim / 2], f32.
#[derive(Clone, Debug)]
pub struct RopeTables {
    /// cos(p * theta_i).
    pub cos: Tensor,
    /// sin(p * theta_i).
    pub sin: Tensor,
}

/// theta_i = base^(-2i/d) for i in 0..d/2 (RoFormer eq. 15), computed in f32 like candle's
/// quantized_llama and HF's `LlamaRotaryEmbedding`, then Llama 3.1 scaling if configured.
pub fn inv_freqs(head_dim: usize, base: f64, scaling: Option<&Llama3RopeScaling>) -> Vec<f32> {
    let base = base as f32;
    (0..head_dim)
        .step_by(2)
        .map(|i| 1f32 / base.powf(i as f32 / head_dim as f32))
        .map(|f| match scaling {
            Some(s) => llama3_scale(f, s),
            None => f,
        })
        .collect()
}

/// Meta's Llama 3.1 `apply_scaling`: wavelengths shorter than orig/high_freq_factor keep their
/// frequency, longer than orig/low_freq_factor are divided by `factor`, in between a linear blend.
pub fn llama3_scale(freq: f32, s: &Llama3RopeScaling) -> f32 {
    let orig = s.original_max_position_embeddings as f64;
    let freq64 = freq as f64;
    let wavelen = 2.0 * std::f64::consts::PI / freq64;
    let low_wavelen = orig / s.low_freq_factor;
    let high_wavelen = orig / s.high_freq_factor;
    let scaled = if wavelen < high_wavelen {
        freq64
    } else if wavelen > low_wavelen {
        freq64 / s.factor
    } else {
        let smooth =
            (orig / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        (1.0 - smooth) * freq64 / s.factor + smooth * freq64
    };
    scaled as f32
}

impl RopeTables {
    /// Tables for positions 0..min(max_position_embeddings, MAX_TABLE_POSITIONS) of the global
    /// layers: `rope_theta`, with Llama 3.1 or linear scaling if configured.
    pub fn new(cfg: &ModelConfig, device: &Device) -> Result<Self> {
        let mut freqs = inv_freqs(cfg.head_dim, cfg.rope_theta, cfg.rope_scaling.as_ref());
        if let Some(f) = cfg.rope_linear_factor {
            // Linear scaling (Chen et al. 2023, position interpolation): angle p theta / f.
            freqs.iter_mut().for_each(|x| *x /= f as f32);
        }
        Self::from_freqs(cfg, &freqs, device)
    }

    /// Tables of Gemma 3's sliding-window layers, at their own base and unscaled; None for a
    /// model whose layers all share [`RopeTables::new`].
    pub fn local(cfg: &ModelConfig, device: &Device) -> Result<Option<Self>> {
        let Some(g) = &cfg.gemma else {
            return Ok(None);
        };
        let freqs = inv_freqs(cfg.head_dim, g.local_rope_theta, None);
        Ok(Some(Self::from_freqs(cfg, &freqs, device)?))
    }

    fn from_freqs(cfg: &ModelConfig, freqs: &[f32], device: &Device) -> Result<Self> {
        let n = cfg.max_position_embeddings.clamp(1, MAX_TABLE_POSITIONS);
        let half = freqs.len();
        let mut cos = Vec::with_capacity(n * half);
        let mut sin = Vec::with_capacity(n * half);
        for p in 0..n {
            for f in freqs {
                let angle = p as f32 * f;
                cos.push(angle.cos());
                sin.push(angle.sin());
            }
        }
        Ok(RopeTables {
            cos: Tensor::from_vec(cos, (n, half), device)?,
            sin: Tensor::from_vec(sin, (n, half), device)?,
        })
    }

    /// Number of positions covered.
    pub fn len(&self) -> usize {
        self.cos.dims()[0]
    }

    /// True when the table is empty (never for a loaded model).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inv_freqs_match_hand_values() {
        // d = 4, base 10000: theta_0 = 1, theta_1 = 10000^(-2/4) = 0.01.
        let f = inv_freqs(4, 10_000.0, None);
        assert_eq!(f.len(), 2);
        assert!(
            (f[0] - 1.0).abs() < 1e-7 && (f[1] - 0.01).abs() < 1e-7,
            "{f:?}"
        );
    }

    #[test]
    fn llama3_scaling_three_regimes() {
        let s = Llama3RopeScaling {
            factor: 8.0,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_max_position_embeddings: 8192,
        };
        // High frequency (wavelength 2*pi < 8192/4 = 2048): unchanged.
        assert_eq!(llama3_scale(1.0, &s), 1.0);
        // Wavelength 2*pi/1e-4 = 62832 > 8192: divided by 8.
        assert!((llama3_scale(1e-4, &s) - 1.25e-5).abs() < 1e-10);
        // Wavelength 4096 (between 2048 and 8192): smooth = (8192/4096 - 1) / 3 = 1/3,
        // freq = (2/3) f/8 + (1/3) f = f * (1/12 + 1/3) = f * 5/12.
        let f = (2.0 * std::f64::consts::PI / 4096.0) as f32;
        let want = f * 5.0 / 12.0;
        assert!(
            (llama3_scale(f, &s) - want).abs() < 1e-9,
            "{} vs {want}",
            llama3_scale(f, &s)
        );
    }
}
