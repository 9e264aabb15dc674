//! A one-hidden-layer network over sentence-embedding features, as the learned heads (the safety
//! screen's, perception's) store and run it: w1 [hidden, input], b1 [hidden], w2 [outputs,
//! hidden], b2 [outputs], row-major, ReLU between, in a safetensors file.

use std::path::Path;

use crate::error::{Error, Result};

/// The weights of one network.
#[derive(Clone, Debug, PartialEq)]
pub struct Mlp {
    pub input: usize,
    pub hidden: usize,
    pub outputs: usize,
    pub w1: Vec<f32>,
    pub b1: Vec<f32>,
    pub w2: Vec<f32>,
    pub b2: Vec<f32>,
}

fn bad(path: &Path, what: &str, fix: &str) -> Error {
    Error::input(
        path,
        what,
        format!("not the network this file should hold: {fix}"),
    )
}

impl Mlp {
    /// Reads the four tensors of an `input` -> `hidden` -> `outputs` network from safetensors
    /// `bytes` (read from `path`); `fix` says how to get a good file back.
    pub fn from_safetensors(
        bytes: &[u8],
        [input, hidden, outputs]: [usize; 3],
        path: &Path,
        fix: &str,
    ) -> Result<Self> {
        let st = safetensors::SafeTensors::deserialize(bytes)
            .map_err(|e| Error::input(path, "file", e.to_string()))?;
        let read = |name: &str, len: usize| -> Result<Vec<f32>> {
            let t = st.tensor(name).map_err(|_| bad(path, name, fix))?;
            if t.dtype() != safetensors::Dtype::F32 || t.data().len() != 4 * len {
                return Err(bad(path, name, fix));
            }
            Ok(t.data()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect())
        };
        Ok(Mlp {
            input,
            hidden,
            outputs,
            w1: read("w1", hidden * input)?,
            b1: read("b1", hidden)?,
            w2: read("w2", outputs * hidden)?,
            b2: read("b2", outputs)?,
        })
    }

    /// The safetensors bytes `from_safetensors` reads.
    pub fn to_safetensors(&self) -> Result<Vec<u8>> {
        use candle_core::{Device, Tensor};
        let (dev, (i, h, o)) = (Device::Cpu, (self.input, self.hidden, self.outputs));
        let tensors = [
            ("w1", Tensor::from_slice(&self.w1, (h, i), &dev)?),
            ("b1", Tensor::from_slice(&self.b1, h, &dev)?),
            ("w2", Tensor::from_slice(&self.w2, (o, h), &dev)?),
            ("b2", Tensor::from_slice(&self.b2, o, &dev)?),
        ];
        safetensors::serialize(tensors, None).map_err(|e| Error::Other(e.to_string()))
    }

    /// The output logits for one input of `input` features.
    pub fn logits(&self, x: &[f32]) -> Vec<f64> {
        let (i, h) = (self.input, self.hidden);
        let hidden: Vec<f32> = (0..h)
            .map(|j| (dot(&self.w1[j * i..(j + 1) * i], x) + self.b1[j]).max(0.0))
            .collect();
        (0..self.outputs)
            .map(|k| f64::from(dot(&self.w2[k * h..(k + 1) * h], &hidden) + self.b2[k]))
            .collect()
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The logistic function.
pub fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// Softmax of `logits`, shifted by their maximum.
pub fn softmax(logits: &[f64]) -> Vec<f64> {
    let max = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let p: Vec<f64> = logits.iter().map(|l| (l - max).exp()).collect();
    let sum: f64 = p.iter().sum();
    p.iter().map(|v| v / sum).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net() -> Mlp {
        Mlp {
            input: 2,
            hidden: 2,
            outputs: 1,
            w1: vec![1.0, 0.0, 0.0, -1.0],
            b1: vec![0.0, 0.5],
            w2: vec![2.0, 1.0],
            b2: vec![-1.0],
        }
    }

    #[test]
    fn logits_by_hand() {
        // hidden = relu(3, 0.5 - 4) = (3, 0); logit = 2 * 3 + 0 - 1 = 5.
        assert_eq!(net().logits(&[3.0, 4.0]), vec![5.0]);
        // hidden = relu(-1, 0.5 + 1) = (0, 1.5); logit = 1.5 - 1 = 0.5.
        assert_eq!(net().logits(&[-1.0, -1.0]), vec![0.5]);
        assert!((sigmoid(0.0) - 0.5).abs() < 1e-12);
        let p = softmax(&[0.0, 2f64.ln()]);
        assert!((p[0] - 1.0 / 3.0).abs() < 1e-12 && (p[1] - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn weights_read_back_what_they_wrote() {
        let n = net();
        let bytes = n.to_safetensors().unwrap();
        let fix = "fit it again";
        assert_eq!(
            Mlp::from_safetensors(&bytes, [2, 2, 1], Path::new("x"), fix).unwrap(),
            n
        );
        let err = Mlp::from_safetensors(&bytes, [2, 3, 1], Path::new("x"), fix)
            .expect_err("another hidden width");
        assert!(
            err.to_string().contains("w1") && err.to_string().contains(fix),
            "{err}"
        );
    }
}
