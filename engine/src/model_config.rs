//! Model hyper-parameters in two stages (candle's `LlamaConfig` -> `Config` pattern): `HfConfig`
//! mirrors an HF `config.json` as written, `ModelConfig` is the validated runtime form that the
//! network, the GGUF loader and the exporter share.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Which member of the Llama family; decides bias terms and export names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arch {
    /// Llama 2/3, SmolLM, SmolLM2 (`LlamaForCausalLM`).
    Llama,
    /// Qwen2 / Qwen2.5 (`Qwen2ForCausalLM`): bias on q, k and v.
    Qwen2,
}

/// How q/k weights pair the dimensions that one rotary frequency rotates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RopeLayout {
    /// Pairs (i, i + d/2): HF safetensors (candle `rope`).
    Half,
    /// Pairs (2i, 2i + 1): GGUF llama weights, stored permuted by llama.cpp (candle `rope_i`).
    Interleaved,
}

/// Llama 3.1 "llama3" rotary frequency scaling (Meta's reference `apply_scaling`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Llama3RopeScaling {
    /// Divisor for the low frequencies (8 in Llama 3.1).
    pub factor: f64,
    /// Wavelengths longer than original_max / low_freq_factor are fully scaled (1).
    pub low_freq_factor: f64,
    /// Wavelengths shorter than original_max / high_freq_factor are kept (4).
    pub high_freq_factor: f64,
    /// Context length the model was pre-trained with (8192).
    pub original_max_position_embeddings: usize,
}

/// Validated runtime configuration of a decoder.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelConfig {
    /// Family member.
    pub arch: Arch,
    /// Residual width (576 for SmolLM2-135M).
    pub hidden_size: usize,
    /// MLP inner width (1536 for SmolLM2-135M).
    pub intermediate_size: usize,
    /// Number of decoder blocks.
    pub num_layers: usize,
    /// Query heads.
    pub num_heads: usize,
    /// Key/value heads (grouped-query attention when smaller than `num_heads`).
    pub num_kv_heads: usize,
    /// Width of one head.
    pub head_dim: usize,
    /// Rows of the embedding table (and of the output projection).
    pub vocab_size: usize,
    /// RMSNorm epsilon.
    pub rms_norm_eps: f64,
    /// Rotary base (theta).
    pub rope_theta: f64,
    /// Optional Llama 3.1 frequency scaling.
    pub rope_scaling: Option<Llama3RopeScaling>,
    /// Longest sequence the rotary table covers.
    pub max_position_embeddings: usize,
    /// Output projection shares the embedding table.
    pub tie_word_embeddings: bool,
    /// q, k, v projections carry a bias (Qwen2, or Llama with `attention_bias`).
    pub qkv_bias: bool,
    /// Pairing of rotary dimensions in the loaded q/k weights.
    pub rope_layout: RopeLayout,
    /// Beginning-of-sequence id, if the model has one.
    pub bos_token_id: Option<u32>,
    /// End-of-sequence ids (generation stops on any of them).
    pub eos_token_ids: Vec<u32>,
}

/// Either one id or a list, as `eos_token_id` appears in HF configs.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(untagged)]
pub enum OneOrMany {
    /// `"eos_token_id": 2`
    One(u32),
    /// `"eos_token_id": [128001, 128009]`
    Many(Vec<u32>),
}

impl OneOrMany {
    /// The ids as a list.
    pub fn to_vec(&self) -> Vec<u32> {
        match self {
            OneOrMany::One(x) => vec![*x],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

/// `rope_scaling` as written in config.json (only the "llama3" type is supported).
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct HfRopeScaling {
    /// "llama3"; other types are rejected by `validate`.
    #[serde(alias = "type")]
    pub rope_type: String,
    /// See `Llama3RopeScaling`.
    pub factor: Option<f64>,
    /// See `Llama3RopeScaling`.
    pub low_freq_factor: Option<f64>,
    /// See `Llama3RopeScaling`.
    pub high_freq_factor: Option<f64>,
    /// See `Llama3RopeScaling`.
    pub original_max_position_embeddings: Option<usize>,
}

/// Serde mirror of an HF `config.json` (fields we read; the rest of the file is ignored because
/// HF configs carry many keys that do not concern inference).
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct HfConfig {
    /// e.g. ["LlamaForCausalLM"].
    #[serde(default)]
    pub architectures: Vec<String>,
    /// e.g. "llama", "qwen2".
    #[serde(default)]
    pub model_type: Option<String>,
    /// See `ModelConfig`.
    pub hidden_size: usize,
    /// See `ModelConfig`.
    pub intermediate_size: usize,
    /// See `ModelConfig::num_layers`.
    pub num_hidden_layers: usize,
    /// See `ModelConfig::num_heads`.
    pub num_attention_heads: usize,
    /// Defaults to `num_attention_heads`.
    #[serde(default)]
    pub num_key_value_heads: Option<usize>,
    /// Defaults to hidden_size / num_attention_heads.
    #[serde(default)]
    pub head_dim: Option<usize>,
    /// See `ModelConfig`.
    pub vocab_size: usize,
    /// Default 1e-6 (HF LlamaConfig default).
    #[serde(default = "default_eps")]
    pub rms_norm_eps: f64,
    /// Default 10000.
    #[serde(default = "default_theta")]
    pub rope_theta: f64,
    /// Optional frequency scaling.
    #[serde(default)]
    pub rope_scaling: Option<HfRopeScaling>,
    /// Default 2048.
    #[serde(default = "default_max_pos")]
    pub max_position_embeddings: usize,
    /// Default false for Llama.
    #[serde(default)]
    pub tie_word_embeddings: Option<bool>,
    /// Llama's optional q/k/v/o bias flag.
    #[serde(default)]
    pub attention_bias: Option<bool>,
    /// Llama's optional MLP bias flag (unsupported when true).
    #[serde(default)]
    pub mlp_bias: Option<bool>,
    /// Default "silu".
    #[serde(default)]
    pub hidden_act: Option<String>,
    /// BOS id.
    #[serde(default)]
    pub bos_token_id: Option<u32>,
    /// EOS id or ids.
    #[serde(default)]
    pub eos_token_id: Option<OneOrMany>,
}

fn default_eps() -> f64 {
    1e-6
}
fn default_theta() -> f64 {
    10_000.0
}
fn default_max_pos() -> usize {
    2048
}

impl HfConfig {
    /// Reads and parses `config.json`.
    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        serde_json::from_str(&text).map_err(|e| {
            Error::input(
                path,
                format!("line {}", e.line()),
                format!("not a valid HF config.json: {e}"),
            )
        })
    }

    /// Checks the fields and resolves defaults into a runtime `ModelConfig`; `file` names the
    /// config in errors.
    pub fn validate(&self, file: &Path) -> Result<ModelConfig> {
        let arch = self.arch(file)?;
        let bad = |field: &str, msg: String| Error::input(file, field, msg);
        if let Some(act) = &self.hidden_act {
            if act != "silu" {
                return Err(bad(
                    "hidden_act",
                    format!(
                        "unsupported activation {act:?}; only \"silu\" (SwiGLU) is implemented"
                    ),
                ));
            }
        }
        if self.mlp_bias == Some(true) {
            return Err(bad("mlp_bias", "MLP bias is not supported".into()));
        }
        let heads = self.num_attention_heads;
        let kv = self.num_key_value_heads.unwrap_or(heads);
        if heads == 0 || kv == 0 || !heads.is_multiple_of(kv) {
            return Err(bad(
                "num_key_value_heads",
                format!("{kv} KV heads must divide {heads} query heads"),
            ));
        }
        let head_dim = match self.head_dim {
            Some(d) => d,
            None if self.hidden_size.is_multiple_of(heads) => self.hidden_size / heads,
            None => {
                return Err(bad(
                    "num_attention_heads",
                    format!(
                        "{heads} heads do not divide hidden_size {}",
                        self.hidden_size
                    ),
                ))
            }
        };
        if head_dim % 2 != 0
            || self.hidden_size == 0
            || self.vocab_size == 0
            || self.num_hidden_layers == 0
        {
            return Err(bad(
                "hidden_size",
                "sizes must be positive and the head width even".into(),
            ));
        }
        let rope_scaling = match &self.rope_scaling {
            None => None,
            Some(s) => Some(llama3_scaling(s).map_err(|m| bad("rope_scaling", m))?),
        };
        Ok(ModelConfig {
            arch,
            hidden_size: self.hidden_size,
            intermediate_size: self.intermediate_size,
            num_layers: self.num_hidden_layers,
            num_heads: heads,
            num_kv_heads: kv,
            head_dim,
            vocab_size: self.vocab_size,
            rms_norm_eps: self.rms_norm_eps,
            rope_theta: self.rope_theta,
            rope_scaling,
            max_position_embeddings: self.max_position_embeddings,
            tie_word_embeddings: self.tie_word_embeddings.unwrap_or(false),
            qkv_bias: arch == Arch::Qwen2 || self.attention_bias == Some(true),
            rope_layout: RopeLayout::Half,
            bos_token_id: self.bos_token_id,
            eos_token_ids: self
                .eos_token_id
                .as_ref()
                .map(OneOrMany::to_vec)
                .unwrap_or_default(),
        })
    }

    fn arch(&self, file: &Path) -> Result<Arch> {
        let name = self.architectures.first().map(String::as_str);
        match (name, self.model_type.as_deref()) {
            (Some("LlamaForCausalLM"), _) | (None, Some("llama")) => Ok(Arch::Llama),
            (Some("Qwen2ForCausalLM"), _) | (None, Some("qwen2")) => Ok(Arch::Qwen2),
            (other, mt) => Err(Error::input(
                file,
                "architectures",
                format!(
                    "unsupported architecture {:?} (model_type {:?}); supported: LlamaForCausalLM \
                     (Llama 2/3, SmolLM2) and Qwen2ForCausalLM (Qwen2/2.5)",
                    other.unwrap_or("<none>"),
                    mt.unwrap_or("<none>")
                ),
            )),
        }
    }
}

fn llama3_scaling(s: &HfRopeScaling) -> std::result::Result<Llama3RopeScaling, String> {
    if s.rope_type != "llama3" {
        return Err(format!(
            "rope_scaling type {:?} is not supported (only \"llama3\")",
            s.rope_type
        ));
    }
    match (s.factor, s.low_freq_factor, s.high_freq_factor, s.original_max_position_embeddings) {
        (Some(factor), Some(low), Some(high), Some(orig)) if high > low && factor > 0.0 => {
            Ok(Llama3RopeScaling { factor, low_freq_factor: low, high_freq_factor: high, original_max_position_embeddings: orig })
        }
        _ => Err("llama3 rope_scaling needs factor, low_freq_factor < high_freq_factor and original_max_position_embeddings".into()),
    }
}

/// Largest sizes a config may give: far above any released decoder of these families (Llama 3.1
/// 405B has 126 layers, 128 heads, width 16,384, MLP 53,248, 128,256 tokens), low enough that a
/// corrupted number cannot ask for an allocation that aborts the process.
pub const MAX_LAYERS: usize = 1024;
pub const MAX_HEADS: usize = 1024;
pub const MAX_HEAD_DIM: usize = 1024;
pub const MAX_WIDTH: usize = 1 << 16;
pub const MAX_MLP_WIDTH: usize = 1 << 18;
pub const MAX_VOCAB: usize = 1 << 22;
pub const MAX_POSITIONS: usize = 1 << 24;

/// Bits per parameter below which no weight format goes (llama.cpp's smallest, IQ1_S, takes about
/// 1.56): weights smaller than the parameter count at 1 bit cannot belong to the config.
const MIN_BITS_PER_PARAM: u128 = 1;

impl ModelConfig {
    /// Checks every size against the limits above and the parameter count against the bytes of
    /// weights actually present (`weight_bytes`, in `weights`, which the error names), so that a
    /// corrupted or mismatched config is an error naming the field, never an allocation sized by a
    /// wrong number.
    pub fn check_limits(&self, file: &Path, weights: &Path, weight_bytes: u64) -> Result<()> {
        let over = |field: &str, value: usize, max: usize| -> Result<()> {
            if value == 0 || value > max {
                return Err(Error::input(
                    file,
                    field,
                    format!("{value} is outside 1..={max}: the file is corrupted or not a decoder this project loads"),
                ));
            }
            Ok(())
        };
        over(
            "num_hidden_layers (block_count)",
            self.num_layers,
            MAX_LAYERS,
        )?;
        over("num_attention_heads", self.num_heads, MAX_HEADS)?;
        over("num_key_value_heads", self.num_kv_heads, self.num_heads)?;
        over("head_dim", self.head_dim, MAX_HEAD_DIM)?;
        over(
            "hidden_size (embedding_length)",
            self.hidden_size,
            MAX_WIDTH,
        )?;
        over(
            "intermediate_size (feed_forward_length)",
            self.intermediate_size,
            MAX_MLP_WIDTH,
        )?;
        over("vocab_size", self.vocab_size, MAX_VOCAB)?;
        over(
            "max_position_embeddings (context_length)",
            self.max_position_embeddings,
            MAX_POSITIONS,
        )?;
        let positive = |field: &str, x: f64| -> Result<()> {
            if !(x.is_finite() && x > 0.0) {
                return Err(Error::input(
                    file,
                    field,
                    format!("{x} must be a positive finite number"),
                ));
            }
            Ok(())
        };
        positive("rms_norm_eps", self.rms_norm_eps)?;
        positive("rope_theta", self.rope_theta)?;
        let params = self.parameter_count();
        if params * MIN_BITS_PER_PARAM > u128::from(weight_bytes) * 8 {
            return Err(Error::input(
                file,
                "num_hidden_layers",
                format!(
                    "the config describes {params} parameters, but {} holds only {weight_bytes} bytes (less than 1 bit each): the weights are cut short or belong to another config",
                    weights.display()
                ),
            ));
        }
        Ok(())
    }

    /// Parameters of the decoder the config describes (embeddings, attention, MLP, norms and an
    /// untied output projection), counted without overflow.
    pub fn parameter_count(&self) -> u128 {
        let [h, i, hd, q, kv, v] = [
            self.hidden_size,
            self.intermediate_size,
            self.head_dim,
            self.num_heads,
            self.num_kv_heads,
            self.vocab_size,
        ]
        .map(|x| x as u128);
        let attention = h * (q + 2 * kv) * hd + q * hd * h;
        let layer = attention + 3 * h * i + 2 * h;
        let embeddings = v * h * if self.tie_word_embeddings { 1 } else { 2 };
        self.num_layers as u128 * layer + embeddings + h
    }

    /// Query heads served by one key/value head.
    pub fn kv_groups(&self) -> usize {
        self.num_heads / self.num_kv_heads
    }

    /// The HF `config.json` that describes this model after export (rope layout: half).
    pub fn to_hf(&self) -> serde_json::Value {
        let (archs, model_type) = match self.arch {
            Arch::Llama => ("LlamaForCausalLM", "llama"),
            Arch::Qwen2 => ("Qwen2ForCausalLM", "qwen2"),
        };
        let mut v = serde_json::json!({
            "architectures": [archs],
            "model_type": model_type,
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_hidden_layers": self.num_layers,
            "num_attention_heads": self.num_heads,
            "num_key_value_heads": self.num_kv_heads,
            "head_dim": self.head_dim,
            "vocab_size": self.vocab_size,
            "rms_norm_eps": self.rms_norm_eps,
            "rope_theta": self.rope_theta,
            "max_position_embeddings": self.max_position_embeddings,
            "tie_word_embeddings": self.tie_word_embeddings,
            "hidden_act": "silu",
            "torch_dtype": "float32",
            "bos_token_id": self.bos_token_id,
            "eos_token_id": self.eos_token_ids,
        });
        if self.arch == Arch::Llama {
            v["attention_bias"] = serde_json::Value::Bool(self.qkv_bias);
            v["mlp_bias"] = serde_json::Value::Bool(false);
        }
        if let Some(s) = &self.rope_scaling {
            v["rope_scaling"] = serde_json::json!({
                "rope_type": "llama3", "factor": s.factor, "low_freq_factor": s.low_freq_factor,
                "high_freq_factor": s.high_freq_factor,
                "original_max_position_embeddings": s.original_max_position_embeddings,
            });
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<ModelConfig> {
        let cfg: HfConfig = serde_json::from_str(json).map_err(|e| Error::Other(e.to_string()))?;
        cfg.validate(Path::new("config.json"))
    }

    #[test]
    fn smollm2_config_resolves_defaults() {
        let cfg = parse(
            r#"{"architectures":["LlamaForCausalLM"],"hidden_size":576,"intermediate_size":1536,
            "num_hidden_layers":30,"num_attention_heads":9,"num_key_value_heads":3,"vocab_size":49152,
            "rms_norm_eps":1e-5,"rope_theta":100000,"tie_word_embeddings":true,"eos_token_id":2,
            "torch_dtype":"bfloat16"}"#,
        )
        .unwrap();
        assert_eq!(cfg.head_dim, 64); // 576 / 9
        assert_eq!(cfg.kv_groups(), 3); // 9 / 3
        assert!(cfg.tie_word_embeddings && !cfg.qkv_bias);
        assert_eq!(cfg.eos_token_ids, vec![2]);
        // 30 x (576*15*64 + 9*64*576 + 3*576*1536 + 2*576) + 49152*576 + 576: the published
        // 134,515,008 of SmolLM2-135M.
        assert_eq!(cfg.parameter_count(), 134_515_008);
    }

    fn smollm2() -> ModelConfig {
        parse(
            r#"{"architectures":["LlamaForCausalLM"],"hidden_size":576,"intermediate_size":1536,
            "num_hidden_layers":30,"num_attention_heads":9,"num_key_value_heads":3,"vocab_size":49152,
            "tie_word_embeddings":true}"#,
        )
        .unwrap()
    }

    #[test]
    fn sizes_beyond_the_limits_or_the_weights_are_errors_naming_the_field() {
        let file = Path::new("model.gguf");
        let q4_bytes = 88_000_000; // SmolLM2-135M at 4 to 5 bits a weight
        smollm2().check_limits(file, file, q4_bytes).unwrap();
        type Corrupt = fn(&mut ModelConfig);
        let cases: [(Corrupt, &str); 6] = [
            (|c| c.num_layers = 1 << 40, "num_hidden_layers"),
            (|c| c.vocab_size = usize::MAX, "vocab_size"),
            (
                |c| c.max_position_embeddings = 1 << 50,
                "max_position_embeddings",
            ),
            (|c| c.num_kv_heads = 10, "num_key_value_heads"),
            (|c| c.rms_norm_eps = f64::NAN, "rms_norm_eps"),
            (|c| c.intermediate_size = 0, "intermediate_size"),
        ];
        for (corrupt, field) in cases {
            let mut c = smollm2();
            corrupt(&mut c);
            let e = c
                .check_limits(file, file, q4_bytes)
                .unwrap_err()
                .to_string();
            assert!(e.contains(field) && e.contains("model.gguf"), "{e}");
        }
        // 200 layers are within the limits, but not within 88 MB.
        let mut c = smollm2();
        c.num_layers = 200;
        let e = c
            .check_limits(file, file, q4_bytes)
            .unwrap_err()
            .to_string();
        assert!(e.contains("cut short or belong to another config"), "{e}");
    }

    #[test]
    fn qwen2_has_qkv_bias_and_eos_list() {
        let cfg = parse(
            r#"{"architectures":["Qwen2ForCausalLM"],"hidden_size":64,"intermediate_size":128,
            "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"vocab_size":300,
            "eos_token_id":[5,6]}"#,
        )
        .unwrap();
        assert_eq!(cfg.arch, Arch::Qwen2);
        assert!(cfg.qkv_bias);
        assert_eq!(cfg.eos_token_ids, vec![5, 6]);
    }

    #[test]
    fn unsupported_architecture_names_field() {
        let err = parse(
            r#"{"architectures":["MistralForCausalLM"],"hidden_size":64,"intermediate_size":128,
            "num_hidden_layers":2,"num_attention_heads":4,"vocab_size":300}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("config.json")
                && err.contains("architectures")
                && err.contains("MistralForCausalLM"),
            "{err}"
        );
    }

    #[test]
    fn bad_gqa_is_rejected() {
        let err = parse(
            r#"{"architectures":["LlamaForCausalLM"],"hidden_size":64,"intermediate_size":128,
            "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":3,"vocab_size":300}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("num_key_value_heads"), "{err}");
    }
}
