//! Model hyper-parameters in two stages (candle's `LlamaConfig` -> `Config` pattern): `HfConfig`
//! mirrors an HF `config.json` as written, `ModelConfig` is the validated runtime form that the
//! network, the GGUF loader and the exporter share.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Which member of the Llama family; decides bias terms, q/k norms and export names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arch {
    /// Llama 2/3, SmolLM, SmolLM2 (`LlamaForCausalLM`).
    Llama,
    /// Qwen2 / Qwen2.5 (`Qwen2ForCausalLM`): bias on q, k and v.
    Qwen2,
    /// Qwen3 dense (`Qwen3ForCausalLM`): an RMSNorm over each query and key head before the
    /// rotary embedding, no bias, a head width of its own (Qwen3 technical report, 2025).
    Qwen3,
    /// Mistral 7B and its successors (`MistralForCausalLM`): Llama's layout, with sliding-window
    /// attention when the config sets `sliding_window` (Jiang et al. 2023).
    Mistral,
    /// Gemma 3 text models (`Gemma3ForCausalLM`): norms stored as an offset from 1, a norm after
    /// attention and after the MLP as well as before, q/k head norms, embeddings scaled by
    /// sqrt(hidden), a GELU-gated MLP, and local sliding-window layers with their own rotary base
    /// between global ones (Gemma 3 technical report, 2025).
    Gemma3,
}

impl Arch {
    /// The HF class and `model_type` of this member.
    pub fn hf_names(self) -> (&'static str, &'static str) {
        match self {
            Arch::Llama => ("LlamaForCausalLM", "llama"),
            Arch::Qwen2 => ("Qwen2ForCausalLM", "qwen2"),
            Arch::Qwen3 => ("Qwen3ForCausalLM", "qwen3"),
            Arch::Mistral => ("MistralForCausalLM", "mistral"),
            Arch::Gemma3 => ("Gemma3ForCausalLM", "gemma3_text"),
        }
    }
}

/// What the loader says of an architecture it refuses: the families it knows that this project
/// does not run, and why.
const REFUSED: [(&str, &str); 4] = [
    (
        "Gemma2ForCausalLM",
        "Gemma 2 soft-caps its attention scores and logits, which this project does not \
         implement; Gemma 3 (Gemma3ForCausalLM) is supported",
    ),
    (
        "Qwen3MoeForCausalLM",
        "Qwen3's mixture-of-experts models route each token to a few of many MLPs; only the dense \
         Qwen3 models (Qwen3ForCausalLM: 0.6B to 32B) are supported",
    ),
    (
        "MixtralForCausalLM",
        "Mixtral is a mixture of experts; only the dense Mistral models (MistralForCausalLM) are \
         supported",
    ),
    (
        "Gemma3ForConditionalGeneration",
        "this is Gemma 3's vision-language model; it is not supported yet",
    ),
];

/// How q/k weights pair the dimensions that one rotary frequency rotates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RopeLayout {
    /// Pairs (i, i + d/2): HF safetensors (candle `rope`).
    Half,
    /// Pairs (2i, 2i + 1): GGUF llama weights, stored permuted by llama.cpp (candle `rope_i`).
    Interleaved,
}

/// The gate's activation of the gated MLP: down(act(gate x) * up x).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MlpAct {
    /// SiLU: SwiGLU (Shazeer 2020), the Llama family's.
    #[default]
    Silu,
    /// GELU with the tanh approximation: GeGLU, Gemma's (`gelu_pytorch_tanh`).
    GeluTanh,
}

/// What Gemma 3 does differently from the Llama layout (`ModelConfig::gemma`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GemmaLayout {
    /// Every norm weight w is applied as (1 + w); the loader adds the 1, export takes it off.
    pub norm_plus_one: bool,
    /// Embeddings are multiplied by sqrt(hidden_size), rounded to the weights' dtype.
    pub embed_scale: bool,
    /// A norm after attention and after the MLP, before each is added to the residual.
    pub sandwich_norms: bool,
    /// Attention scores are scaled by `query_pre_attn_scalar`^-1/2 instead of head_dim^-1/2.
    pub query_pre_attn_scalar: f64,
    /// Rotary base of the sliding-window layers (`rope_local_base_freq`).
    pub local_rope_theta: f64,
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
    /// An RMSNorm over each query and key head (weights [head_dim]) before the rotary embedding
    /// (Qwen3).
    #[serde(default)]
    pub qk_norm: bool,
    /// Keys a query sees in a sliding-window layer: itself and the `sliding_window - 1` before it
    /// (Mistral; Qwen2/3 with `use_sliding_window`).
    #[serde(default)]
    pub sliding_window: Option<usize>,
    /// Which layers attend through the window (empty: none).
    #[serde(default)]
    pub sliding_layers: Vec<bool>,
    /// The MLP's gate activation.
    #[serde(default)]
    pub mlp_act: MlpAct,
    /// Gemma 3's differences from the Llama layout, for Gemma 3 only.
    #[serde(default)]
    pub gemma: Option<GemmaLayout>,
    /// Linear rotary scaling ("linear" `rope_scaling`: positions divided by this factor), on the
    /// global layers only when the model has local ones (Gemma 3 4B and larger).
    #[serde(default)]
    pub rope_linear_factor: Option<f64>,
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

/// `rope_scaling` as written in config.json ("llama3" and "linear" are supported).
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
    /// Width of the attention window (Mistral; Qwen2/3 only with `use_sliding_window`).
    #[serde(default)]
    pub sliding_window: Option<usize>,
    /// Qwen2/3: whether `sliding_window` applies at all (default false).
    #[serde(default)]
    pub use_sliding_window: Option<bool>,
    /// Qwen2/3: layers from this index on use the window (when `use_sliding_window`).
    #[serde(default)]
    pub max_window_layers: Option<usize>,
    /// Per layer "full_attention" or "sliding_attention" (newer transformers write it; it wins
    /// over the fields above).
    #[serde(default)]
    pub layer_types: Option<Vec<String>>,
    /// Gemma 3: every Nth layer is global, the others slide (older configs; `layer_types` in
    /// newer ones).
    #[serde(default)]
    pub sliding_window_pattern: Option<usize>,
    /// Gemma's name for `hidden_act`.
    #[serde(default)]
    pub hidden_activation: Option<String>,
    /// Gemma 3: the attention scale's denominator squared.
    #[serde(default)]
    pub query_pre_attn_scalar: Option<f64>,
    /// Gemma 3: the rotary base of the sliding-window layers.
    #[serde(default)]
    pub rope_local_base_freq: Option<f64>,
    /// Gemma 2's soft-capping of the attention scores (refused when set).
    #[serde(default)]
    pub attn_logit_softcapping: Option<f64>,
    /// Gemma 2's soft-capping of the logits (refused when set).
    #[serde(default)]
    pub final_logit_softcapping: Option<f64>,
    /// Gemma 3 embedding models attend both ways (refused when true).
    #[serde(default)]
    pub use_bidirectional_attention: Option<bool>,
    /// transformers 5's rotary settings, in place of `rope_theta` and `rope_scaling`: one set
    /// (`{"rope_type", "rope_theta", ...}`) or one per layer type (`{"full_attention": {...},
    /// "sliding_attention": {...}}`, Gemma 3).
    #[serde(default)]
    pub rope_parameters: Option<serde_json::Value>,
}

/// The rotary settings of a config, from either form.
struct RopeSettings {
    theta: f64,
    scaling: Option<HfRopeScaling>,
    local_theta: Option<f64>,
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
        let mlp_act = self.mlp_act(arch).map_err(|(f, m)| bad(f, m))?;
        for (field, cap) in [
            ("attn_logit_softcapping", self.attn_logit_softcapping),
            ("final_logit_softcapping", self.final_logit_softcapping),
        ] {
            if let Some(c) = cap {
                return Err(bad(
                    field,
                    format!(
                        "soft-capping ({c}) is not implemented; set it to null, as Gemma 3 does"
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
        if self.use_bidirectional_attention == Some(true) {
            return Err(bad(
                "use_bidirectional_attention",
                "bidirectional attention (an embedding model) is not a chat decoder".into(),
            ));
        }
        let rope = self
            .rope_settings()
            .map_err(|m| bad("rope_parameters", m))?;
        let (rope_scaling, rope_linear_factor) = match &rope.scaling {
            None => (None, None),
            Some(s) if s.rope_type == "linear" => match s.factor {
                Some(f) if f.is_finite() && f > 0.0 => (None, Some(f)),
                _ => {
                    return Err(bad(
                        "rope_scaling",
                        "linear rope_scaling needs a positive factor".into(),
                    ))
                }
            },
            Some(s) => (
                Some(llama3_scaling(s).map_err(|m| bad("rope_scaling", m))?),
                None,
            ),
        };
        let sliding_layers = self.sliding_layers(arch).map_err(|(f, m)| bad(f, m))?;
        // Gemma3TextConfig's default window.
        let window = match arch {
            Arch::Gemma3 => self.sliding_window.or(Some(4096)),
            _ => self.sliding_window,
        };
        let sliding_window = match (sliding_layers.contains(&true), window) {
            (false, _) => None,
            (true, Some(w)) if w > 0 => Some(w),
            (true, _) => {
                return Err(bad(
                    "sliding_window",
                    "sliding-window layers need a positive `sliding_window`".into(),
                ))
            }
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
            rope_theta: rope.theta,
            rope_scaling,
            max_position_embeddings: self.max_position_embeddings,
            qkv_bias: arch == Arch::Qwen2 || self.attention_bias == Some(true),
            // Gemma 3 always ties its output projection to the embedding.
            tie_word_embeddings: arch == Arch::Gemma3 || self.tie_word_embeddings.unwrap_or(false),
            qk_norm: matches!(arch, Arch::Qwen3 | Arch::Gemma3),
            sliding_window,
            sliding_layers: if sliding_window.is_some() {
                sliding_layers
            } else {
                Vec::new()
            },
            mlp_act,
            gemma: (arch == Arch::Gemma3).then(|| GemmaLayout {
                norm_plus_one: true,
                embed_scale: true,
                sandwich_norms: true,
                query_pre_attn_scalar: self.query_pre_attn_scalar.unwrap_or(head_dim as f64),
                local_rope_theta: rope
                    .local_theta
                    .or(self.rope_local_base_freq)
                    .unwrap_or(10_000.0),
            }),
            rope_linear_factor,
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
        let mt = self.model_type.as_deref();
        let known = [
            Arch::Llama,
            Arch::Qwen2,
            Arch::Qwen3,
            Arch::Mistral,
            Arch::Gemma3,
        ];
        if let Some(a) = known.into_iter().find(|a| {
            let (class, model_type) = a.hf_names();
            name == Some(class) || (name.is_none() && mt == Some(model_type))
        }) {
            return Ok(a);
        }
        let other = name.unwrap_or("<none>");
        let why = REFUSED
            .iter()
            .find(|(class, _)| *class == other)
            .map_or(String::new(), |(_, why)| format!(": {why}"));
        Err(Error::input(
            file,
            "architectures",
            format!(
                "unsupported architecture {other:?} (model_type {:?}){why}; supported: \
                 LlamaForCausalLM (Llama 2/3, SmolLM2), Qwen2ForCausalLM (Qwen2/2.5), \
                 Qwen3ForCausalLM (dense Qwen3), MistralForCausalLM and Gemma3ForCausalLM \
                 (Gemma 3 text)",
                mt.unwrap_or("<none>")
            ),
        ))
    }

    /// `rope_parameters` when given (the full-attention set of a per-layer-type one, and the
    /// sliding set's base for the local layers), else `rope_theta` and `rope_scaling`.
    fn rope_settings(&self) -> std::result::Result<RopeSettings, String> {
        let Some(params) = &self.rope_parameters else {
            return Ok(RopeSettings {
                theta: self.rope_theta,
                scaling: self.rope_scaling.clone(),
                local_theta: None,
            });
        };
        let one =
            |v: &serde_json::Value| -> std::result::Result<(f64, Option<HfRopeScaling>), String> {
                let theta = v
                    .get("rope_theta")
                    .and_then(serde_json::Value::as_f64)
                    .unwrap_or(self.rope_theta);
                let scaling: HfRopeScaling =
                    serde_json::from_value(v.clone()).map_err(|e| format!("{v}: {e}"))?;
                let scaling = (scaling.rope_type != "default").then_some(scaling);
                Ok((theta, scaling))
            };
        match (
            params.get("full_attention"),
            params.get("sliding_attention"),
        ) {
            (None, None) => {
                let (theta, scaling) = one(params)?;
                Ok(RopeSettings {
                    theta,
                    scaling,
                    local_theta: None,
                })
            }
            (full, sliding) => {
                let (theta, scaling) = full
                    .map(one)
                    .transpose()?
                    .unwrap_or((self.rope_theta, None));
                let local = sliding.map(one).transpose()?;
                if local.as_ref().is_some_and(|(_, s)| s.is_some()) {
                    return Err(
                        "scaled rotary angles on the sliding layers are not supported".into(),
                    );
                }
                Ok(RopeSettings {
                    theta,
                    scaling,
                    local_theta: local.map(|(t, _)| t),
                })
            }
        }
    }

    /// The gated MLP's activation: `hidden_act` (or Gemma's `hidden_activation`), SiLU for the
    /// Llama family and tanh-approximated GELU for Gemma, refused otherwise.
    fn mlp_act(&self, arch: Arch) -> std::result::Result<MlpAct, (&str, String)> {
        let (field, named) = match (&self.hidden_activation, &self.hidden_act) {
            (Some(a), _) => ("hidden_activation", Some(a.as_str())),
            (None, a) => ("hidden_act", a.as_deref()),
        };
        match (arch, named) {
            (Arch::Gemma3, None | Some("gelu_pytorch_tanh")) => Ok(MlpAct::GeluTanh),
            (Arch::Gemma3, Some(other)) => Err((
                field,
                format!("unsupported activation {other:?}; Gemma 3 uses \"gelu_pytorch_tanh\""),
            )),
            (_, None | Some("silu")) => Ok(MlpAct::Silu),
            (_, Some(other)) => Err((
                field,
                format!("unsupported activation {other:?}; only \"silu\" (SwiGLU) is implemented"),
            )),
        }
    }

    /// Which layers attend through a sliding window: `layer_types` when given; else every layer
    /// of a Mistral with `sliding_window`, and for Qwen2/3 with `use_sliding_window` the layers
    /// from `max_window_layers` on (transformers' Qwen2Config/Qwen3Config). An error names the
    /// field.
    fn sliding_layers(&self, arch: Arch) -> std::result::Result<Vec<bool>, (&str, String)> {
        let n = self.num_hidden_layers;
        // A list per layer is sized by the file's number: check it first (`check_limits` comes
        // after validation).
        if n > MAX_LAYERS {
            return Err((
                "num_hidden_layers",
                format!("{n} is outside 1..={MAX_LAYERS}: the file is corrupted or not a decoder this project loads"),
            ));
        }
        if let Some(types) = &self.layer_types {
            if types.len() != n {
                return Err((
                    "layer_types",
                    format!("{} entries for {n} layers", types.len()),
                ));
            }
            return types
                .iter()
                .map(|t| match t.as_str() {
                    "full_attention" => Ok(false),
                    "sliding_attention" => Ok(true),
                    other => Err((
                        "layer_types",
                        format!(
                            "{other:?} is not an attention type this project runs \
                             (full_attention, sliding_attention)"
                        ),
                    )),
                })
                .collect();
        }
        Ok(match arch {
            Arch::Mistral => vec![self.sliding_window.is_some(); n],
            // transformers' Gemma3TextConfig: layer i slides unless (i + 1) is a multiple of the
            // pattern (6 in the released models: five local layers, then a global one).
            Arch::Gemma3 => {
                let pattern = self.sliding_window_pattern.unwrap_or(6).max(1);
                (0..n).map(|i| (i + 1) % pattern != 0).collect()
            }
            Arch::Qwen2 | Arch::Qwen3 if self.use_sliding_window == Some(true) => {
                let from = self.max_window_layers.unwrap_or(n);
                (0..n).map(|i| i >= from).collect()
            }
            _ => vec![false; n],
        })
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
        let qk_norms = if self.qk_norm { 2 * hd } else { 0 };
        let norms = if self.gemma.as_ref().is_some_and(|g| g.sandwich_norms) {
            4 * h
        } else {
            2 * h
        };
        let layer = attention + 3 * h * i + norms + qk_norms;
        let embeddings = v * h * if self.tie_word_embeddings { 1 } else { 2 };
        self.num_layers as u128 * layer + embeddings + h
    }

    /// The window of layer `layer`, if it attends through one.
    pub fn window_of(&self, layer: usize) -> Option<usize> {
        self.sliding_window.filter(|_| self.is_sliding(layer))
    }

    fn is_sliding(&self, layer: usize) -> bool {
        self.sliding_layers.get(layer).copied().unwrap_or(false)
    }

    /// Query heads served by one key/value head.
    pub fn kv_groups(&self) -> usize {
        self.num_heads / self.num_kv_heads
    }

    /// The HF `config.json` that describes this model after export (rope layout: half).
    pub fn to_hf(&self) -> serde_json::Value {
        let (archs, model_type) = self.arch.hf_names();
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
            "torch_dtype": "float32",
            "bos_token_id": self.bos_token_id,
            "eos_token_id": self.eos_token_ids,
        });
        match self.mlp_act {
            MlpAct::Silu => v["hidden_act"] = "silu".into(),
            MlpAct::GeluTanh => v["hidden_activation"] = "gelu_pytorch_tanh".into(),
        }
        if matches!(
            self.arch,
            Arch::Llama | Arch::Qwen3 | Arch::Mistral | Arch::Gemma3
        ) {
            v["attention_bias"] = serde_json::Value::Bool(self.qkv_bias);
        }
        if let Some(g) = &self.gemma {
            // An integer where it is one: transformers 5 checks the field's type.
            let q = g.query_pre_attn_scalar;
            v["query_pre_attn_scalar"] = if q.fract() == 0.0 && q > 0.0 && q < 1e15 {
                serde_json::json!(q as u64)
            } else {
                serde_json::json!(q)
            };
            v["rope_local_base_freq"] = serde_json::json!(g.local_rope_theta);
        }
        if let Some(f) = self.rope_linear_factor {
            v["rope_scaling"] = serde_json::json!({ "rope_type": "linear", "factor": f });
        }
        if self.arch == Arch::Llama {
            v["mlp_bias"] = serde_json::Value::Bool(false);
        }
        // The window as layer_types, which every reader since transformers 4.53 takes as given;
        // older ones read sliding_window (Mistral) or use_sliding_window (Qwen). Not for a Mistral
        // that slides in every layer: transformers reads a Mistral config with layer_types as
        // Ministral's.
        v["sliding_window"] = serde_json::json!(self.sliding_window);
        let all_slide = self.sliding_layers.iter().all(|&s| s);
        if self.sliding_window.is_some() && !(self.arch == Arch::Mistral && all_slide) {
            let types: Vec<&str> = (0..self.num_layers)
                .map(|i| {
                    if self.is_sliding(i) {
                        "sliding_attention"
                    } else {
                        "full_attention"
                    }
                })
                .collect();
            v["layer_types"] = serde_json::json!(types);
            if matches!(self.arch, Arch::Qwen2 | Arch::Qwen3) {
                let from = self.sliding_layers.iter().position(|&s| s);
                v["use_sliding_window"] = serde_json::Value::Bool(true);
                v["max_window_layers"] = serde_json::json!(from);
            }
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
            r#"{"architectures":["PhiForCausalLM"],"hidden_size":64,"intermediate_size":128,
            "num_hidden_layers":2,"num_attention_heads":4,"vocab_size":300}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("config.json")
                && err.contains("architectures")
                && err.contains("PhiForCausalLM")
                && err.contains("Qwen3ForCausalLM"),
            "{err}"
        );
        // A known family the project does not run says why.
        let err = parse(
            r#"{"architectures":["Qwen3MoeForCausalLM"],"hidden_size":64,"intermediate_size":128,
            "num_hidden_layers":2,"num_attention_heads":4,"vocab_size":300}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("mixture-of-experts"), "{err}");
    }

    #[test]
    fn qwen3_has_qk_norms_its_own_head_width_and_no_window_unless_asked() {
        let json = r#"{"architectures":["Qwen3ForCausalLM"],"hidden_size":1024,
            "intermediate_size":3072,"num_hidden_layers":28,"num_attention_heads":16,
            "num_key_value_heads":8,"head_dim":128,"vocab_size":151936,"tie_word_embeddings":true,
            "sliding_window":32768,"use_sliding_window":false,"max_window_layers":28,
            "attention_bias":false,"rope_theta":1000000}"#;
        let cfg = parse(json).unwrap();
        assert_eq!(cfg.arch, Arch::Qwen3);
        assert!(cfg.qk_norm && !cfg.qkv_bias);
        assert_eq!((cfg.head_dim, cfg.sliding_window), (128, None));
        // Qwen3-0.6B: 596,049,920 parameters with the tied embedding counted once (28 layers of
        // 1024 x (16 + 16) x 128 attention in and out, 3 x 1024 x 3072 MLP, 2 x 1024 + 2 x 128
        // norms; 151,936 x 1024 embeddings; the final norm).
        assert_eq!(cfg.parameter_count(), 596_049_920);
        let windowed = json.replace(
            r#""use_sliding_window":false,"max_window_layers":28"#,
            r#""use_sliding_window":true,"max_window_layers":20"#,
        );
        let cfg = parse(&windowed).unwrap();
        assert_eq!(cfg.window_of(19), None);
        assert_eq!(cfg.window_of(20), Some(32768));
    }

    #[test]
    fn mistral_windows_every_layer_and_layer_types_win() {
        let json = r#"{"architectures":["MistralForCausalLM"],"hidden_size":64,
            "intermediate_size":128,"num_hidden_layers":3,"num_attention_heads":4,
            "num_key_value_heads":2,"vocab_size":300,"sliding_window":4096}"#;
        let cfg = parse(json).unwrap();
        assert_eq!(cfg.arch, Arch::Mistral);
        assert!((0..3).all(|i| cfg.window_of(i) == Some(4096)));
        // Written as Mistral writes it: transformers reads layer_types in a Mistral config as
        // Ministral's.
        let hf = cfg.to_hf();
        assert!(
            hf["layer_types"].is_null() && hf["sliding_window"] == 4096,
            "{hf}"
        );
        let none = parse(&json.replace("4096", "null")).unwrap();
        assert_eq!(none.window_of(0), None);
        let typed = json.replace(
            "\"sliding_window\":4096",
            r#""sliding_window":8,"layer_types":["sliding_attention","full_attention","sliding_attention"]"#,
        );
        let cfg = parse(&typed).unwrap();
        let windows: Vec<_> = (0..3).map(|i| cfg.window_of(i)).collect();
        assert_eq!(windows, [Some(8), None, Some(8)]);
        assert_eq!(cfg.to_hf()["layer_types"][1], "full_attention");
        let bad = typed.replace("full_attention", "chunked_attention");
        let e = parse(&bad).unwrap_err().to_string();
        assert!(
            e.contains("layer_types") && e.contains("chunked_attention"),
            "{e}"
        );
    }

    #[test]
    fn gemma3_reads_the_older_keys_its_layer_pattern_and_counts_its_parameters() {
        // gemma-3-270m's config as transformers 4.5x wrote it.
        let json = r#"{"architectures":["Gemma3ForCausalLM"],"hidden_size":640,
            "intermediate_size":2048,"num_hidden_layers":18,"num_attention_heads":4,
            "num_key_value_heads":1,"head_dim":256,"vocab_size":262144,"rope_theta":1000000,
            "rope_local_base_freq":10000,"sliding_window":512,"sliding_window_pattern":6,
            "query_pre_attn_scalar":256,"hidden_activation":"gelu_pytorch_tanh",
            "attn_logit_softcapping":null,"final_logit_softcapping":null}"#;
        let cfg = parse(json).unwrap();
        assert_eq!(cfg.arch, Arch::Gemma3);
        assert!(cfg.tie_word_embeddings && cfg.qk_norm && cfg.mlp_act == MlpAct::GeluTanh);
        let g = cfg.gemma.clone().unwrap();
        assert_eq!(
            (g.local_rope_theta, cfg.rope_theta),
            (10_000.0, 1_000_000.0)
        );
        assert_eq!(g.query_pre_attn_scalar, 256.0);
        // Five local layers, then a global one.
        let windows: Vec<_> = (0..12).map(|i| cfg.window_of(i)).collect();
        let local = Some(512);
        assert_eq!(windows[..6], [local, local, local, local, local, None]);
        assert_eq!(windows[11], None);
        // 18 x (640 x 6 x 256 + 4 x 256 x 640 attention, 3 x 640 x 2048 MLP, 4 x 640 + 2 x 256
        // norms) + 262,144 x 640 tied embeddings + the final norm: gemma-3-270m's 268,098,176.
        assert_eq!(cfg.parameter_count(), 268_098_176);
        let capped = json.replace(
            r#""attn_logit_softcapping":null"#,
            r#""attn_logit_softcapping":50.0"#,
        );
        let e = parse(&capped).unwrap_err().to_string();
        assert!(e.contains("attn_logit_softcapping"), "{e}");
        let gemma2 = json.replace("Gemma3ForCausalLM", "Gemma2ForCausalLM");
        let e = parse(&gemma2).unwrap_err().to_string();
        assert!(e.contains("soft-caps"), "{e}");
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
