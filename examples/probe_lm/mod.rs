//! What the safety probes share (not an example of its own): SmolLM2-135M-Instruct as the fluency
//! judge loads it, the judge's prefix, and a text's final hidden states pooled over its tokens.

use candle_core::{Device, Tensor};
use empathy_engine::{find_model, load_model, AdapterMode, ChatModel, LoadOptions, Pass};

pub struct Lm {
    lm: ChatModel,
    /// The fluency judge's prefix (`data/fluency.yaml`), as token ids.
    pub judge_prefix: Vec<u32>,
}

impl Lm {
    pub fn load() -> anyhow::Result<Self> {
        let lm = load_model(
            &find_model("smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf")?,
            &Device::Cpu,
            &LoadOptions::default(),
        )?;
        let fluency: serde_yaml::Value =
            serde_yaml::from_str(&std::fs::read_to_string("data/fluency.yaml")?)?;
        let mut out = Lm {
            lm,
            judge_prefix: Vec::new(),
        };
        out.judge_prefix = out.encode(fluency["prefix"].as_str().unwrap_or_default())?;
        Ok(out)
    }

    pub fn encode(&self, s: &str) -> anyhow::Result<Vec<u32>> {
        Ok(self
            .lm
            .tokenizer
            .encode(s, false)
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .get_ids()
            .to_vec())
    }

    /// The final hidden states of `reply` read after `head`: the mean over the reply's tokens,
    /// then the max.
    pub fn pooled(&self, head: &[u32], reply: &[u32]) -> anyhow::Result<Vec<f32>> {
        let n = head.len();
        let ids: Vec<u32> = head.iter().chain(reply).copied().collect();
        let t = Tensor::new(ids.as_slice(), &Device::Cpu)?.unsqueeze(0)?;
        let h = self
            .lm
            .model
            .forward(&t, None, AdapterMode::Off, Pass::Infer)?
            .squeeze(0)?;
        let r = h.narrow(0, n, ids.len() - n)?;
        let mean = r.mean(0)?.to_vec1::<f32>()?;
        let max = r.max(0)?.to_vec1::<f32>()?;
        Ok(mean.into_iter().chain(max).collect())
    }
}
