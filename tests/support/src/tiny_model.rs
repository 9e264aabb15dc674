//! Tiny random Llama/Qwen2 models written on the fly for the model tests and the fuzzer's seeds:
//! HF folders (config, safetensors, a small byte-level BPE tokenizer.json, tokenizer_config.json)
//! and the Llama's weights as a GGUF file with llama.cpp's q/k permutation and tokenizer
//! metadata; and model folders from the committed fixtures of every family.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::Result;
use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use empathy_engine::gguf::permute_rows;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::{AddedToken, PreTokenizerWrapper, Tokenizer};

pub const HIDDEN: usize = 32;
pub const INTER: usize = 64;
pub const LAYERS: usize = 2;
pub const HEADS: usize = 4;
pub const KV_HEADS: usize = 2;
pub const HEAD_DIM: usize = HIDDEN / HEADS;
pub const SYSTEM: &str = "You are a tiny test model";
pub const SPECIALS: [&str; 3] = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];
const MERGES: [(&str, &str); 4] = [("h", "e"), ("l", "l"), ("Ġ", "t"), ("he", "ll")];

/// Which tiny model.
#[derive(Clone, Copy, Debug)]
pub struct TinySpec {
    /// Qwen2 (q/k/v bias, tied embeddings) instead of Llama (untied, no bias).
    pub qwen2: bool,
    /// Rows of the embedding table.
    pub vocab: usize,
    /// Weight seed.
    pub seed: u64,
}

impl TinySpec {
    pub fn llama() -> Self {
        TinySpec {
            qwen2: false,
            vocab: 280,
            seed: 1,
        }
    }
    pub fn qwen2() -> Self {
        TinySpec {
            qwen2: true,
            vocab: 280,
            seed: 2,
        }
    }
}

/// Tokens in id order: the 256 byte-level characters, the merge results, the specials.
pub fn token_list() -> Vec<String> {
    let mut chars: Vec<char> = ByteLevel::alphabet().into_iter().collect();
    chars.sort();
    let mut toks: Vec<String> = chars.into_iter().map(String::from).collect();
    toks.extend(MERGES.iter().map(|(a, b)| format!("{a}{b}")));
    toks.extend(SPECIALS.iter().map(|s| s.to_string()));
    toks
}

pub fn id_of(tok: &str) -> u32 {
    token_list()
        .iter()
        .position(|t| t == tok)
        .expect("token in list") as u32
}

/// The byte-level BPE tokenizer (digits split like SmolLM2's).
pub fn tiny_tokenizer() -> Result<Tokenizer> {
    let vocab: Vocab = token_list()
        .into_iter()
        .enumerate()
        .map(|(i, t)| (t, i as u32))
        .collect();
    let merges = MERGES
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let bpe = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .build()
        .map_err(anyhow::Error::msg)?;
    let mut tok = Tokenizer::new(bpe);
    tok.with_pre_tokenizer(Some(PreTokenizerWrapper::Sequence(Sequence::new(vec![
        PreTokenizerWrapper::Digits(Digits::new(true)),
        PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, true, true)),
    ]))));
    tok.with_decoder(Some(ByteLevelDecoder::default()));
    tok.add_special_tokens(
        SPECIALS
            .iter()
            .map(|s| AddedToken::from(s.to_string(), true).normalized(false)),
    )
    .map_err(anyhow::Error::msg)?;
    Ok(tok)
}

pub fn chat_template() -> String {
    format!("{{% for message in messages %}}{{% if loop.first and messages[0]['role'] != 'system' %}}{{{{ '<|im_start|>system\n{SYSTEM}<|im_end|>\n' }}}}{{% endif %}}{{{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}}}{{% endfor %}}")
}

fn uniform(rng: &mut ChaCha8Rng, dims: &[usize], scale: f32, offset: f32) -> Result<Tensor> {
    let n: usize = dims.iter().product();
    let v: Vec<f32> = (0..n)
        .map(|_| offset + rng.random_range(-scale..scale))
        .collect();
    Ok(Tensor::from_vec(v, dims, &Device::Cpu)?)
}

/// Random weights under HF names.
pub fn hf_weights(spec: &TinySpec) -> Result<HashMap<String, Tensor>> {
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    let mut w = HashMap::new();
    let (q, kv) = (HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM);
    w.insert(
        "model.embed_tokens.weight".into(),
        uniform(&mut rng, &[spec.vocab, HIDDEN], 0.5, 0.0)?,
    );
    w.insert(
        "model.norm.weight".into(),
        uniform(&mut rng, &[HIDDEN], 0.1, 1.0)?,
    );
    if !spec.qwen2 {
        w.insert(
            "lm_head.weight".into(),
            uniform(&mut rng, &[spec.vocab, HIDDEN], 0.3, 0.0)?,
        );
    }
    for i in 0..LAYERS {
        let p = format!("model.layers.{i}");
        let shapes = [
            ("self_attn.q_proj", q, HIDDEN),
            ("self_attn.k_proj", kv, HIDDEN),
            ("self_attn.v_proj", kv, HIDDEN),
            ("self_attn.o_proj", HIDDEN, q),
            ("mlp.gate_proj", INTER, HIDDEN),
            ("mlp.up_proj", INTER, HIDDEN),
            ("mlp.down_proj", HIDDEN, INTER),
        ];
        for (name, out, inp) in shapes {
            let scale = 1.5 / (inp as f32).sqrt();
            w.insert(
                format!("{p}.{name}.weight"),
                uniform(&mut rng, &[out, inp], scale, 0.0)?,
            );
            if spec.qwen2 && name.starts_with("self_attn") && name != "self_attn.o_proj" {
                w.insert(
                    format!("{p}.{name}.bias"),
                    uniform(&mut rng, &[out], 0.2, 0.0)?,
                );
            }
        }
        w.insert(
            format!("{p}.input_layernorm.weight"),
            uniform(&mut rng, &[HIDDEN], 0.1, 1.0)?,
        );
        w.insert(
            format!("{p}.post_attention_layernorm.weight"),
            uniform(&mut rng, &[HIDDEN], 0.1, 1.0)?,
        );
    }
    Ok(w)
}

pub fn config_json(spec: &TinySpec) -> serde_json::Value {
    serde_json::json!({
        "architectures": [if spec.qwen2 { "Qwen2ForCausalLM" } else { "LlamaForCausalLM" }],
        "model_type": if spec.qwen2 { "qwen2" } else { "llama" },
        "hidden_size": HIDDEN, "intermediate_size": INTER, "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS, "vocab_size": spec.vocab,
        "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 512,
        "tie_word_embeddings": spec.qwen2, "hidden_act": "silu", "torch_dtype": "float32",
        "bos_token_id": id_of("<|im_start|>"), "eos_token_id": id_of("<|im_end|>"),
    })
}

/// Writes `tensors` into `dir` as two safetensors shards with the `model.safetensors.index.json`
/// transformers writes for them (names sorted, the first half in the first shard).
pub fn write_shards(dir: &Path, tensors: HashMap<String, Tensor>) -> Result<()> {
    let mut names: Vec<(String, Tensor)> = tensors.into_iter().collect();
    names.sort_by(|a, b| a.0.cmp(&b.0));
    let half = names.len() / 2;
    let mut map = serde_json::Map::new();
    for (i, part) in [&names[..half], &names[half..]].into_iter().enumerate() {
        let file = format!("model-{:05}-of-00002.safetensors", i + 1);
        let shard: HashMap<String, Tensor> = part.iter().cloned().collect();
        candle_core::safetensors::save(&shard, dir.join(&file))?;
        for (n, _) in part {
            map.insert(n.clone(), serde_json::Value::String(file.clone()));
        }
    }
    let index = serde_json::json!({ "metadata": {}, "weight_map": map });
    std::fs::write(dir.join("model.safetensors.index.json"), index.to_string())?;
    Ok(())
}

/// Writes an HF folder for `spec` into `dir`.
pub fn write_hf(dir: &Path, spec: &TinySpec) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(
        dir.join("config.json"),
        serde_json::to_string_pretty(&config_json(spec))?,
    )?;
    candle_core::safetensors::save(&hf_weights(spec)?, dir.join("model.safetensors"))?;
    tiny_tokenizer()?
        .save(dir.join("tokenizer.json"), false)
        .map_err(anyhow::Error::msg)?;
    let tc = serde_json::json!({ "chat_template": chat_template(), "eos_token": "<|im_end|>" });
    std::fs::write(
        dir.join("tokenizer_config.json"),
        serde_json::to_string(&tc)?,
    )?;
    Ok(())
}

/// Writes the Llama `spec`'s weights as an f32 GGUF file ([`write_gguf_as`]).
pub fn write_gguf(path: &Path, spec: &TinySpec) -> Result<()> {
    write_gguf_as(path, spec, GgmlDType::F32)
}

/// Writes the Llama `spec`'s weights as a GGUF file with tensors of `dtype` (the norms stay f32),
/// q/k rows permuted the way llama.cpp's converter does, and the tokenizer in the metadata with
/// pre-tokenizer "smollm".
pub fn write_gguf_as(path: &Path, spec: &TinySpec, dtype: GgmlDType) -> Result<()> {
    anyhow::ensure!(!spec.qwen2, "the tiny GGUF fixture is Llama-only");
    let mut w = hf_weights(spec)?;
    let mut take = |n: &str| {
        w.remove(n)
            .ok_or_else(|| anyhow::anyhow!("tiny model: no tensor {n}"))
    };
    let mut tensors: Vec<(String, Tensor)> = vec![
        (
            "token_embd.weight".into(),
            take("model.embed_tokens.weight")?,
        ),
        ("output_norm.weight".into(), take("model.norm.weight")?),
        ("output.weight".into(), take("lm_head.weight")?),
    ];
    for i in 0..LAYERS {
        let p = format!("model.layers.{i}");
        let names = [
            ("self_attn.q_proj.weight", "attn_q.weight"),
            ("self_attn.k_proj.weight", "attn_k.weight"),
            ("self_attn.v_proj.weight", "attn_v.weight"),
            ("self_attn.o_proj.weight", "attn_output.weight"),
            ("mlp.gate_proj.weight", "ffn_gate.weight"),
            ("mlp.up_proj.weight", "ffn_up.weight"),
            ("mlp.down_proj.weight", "ffn_down.weight"),
            ("input_layernorm.weight", "attn_norm.weight"),
            ("post_attention_layernorm.weight", "ffn_norm.weight"),
        ];
        for (hf, gg) in names {
            let mut t = take(&format!("{p}.{hf}"))?;
            if gg == "attn_q.weight" {
                t = permute_rows(&t, HEADS)?;
            } else if gg == "attn_k.weight" {
                t = permute_rows(&t, KV_HEADS)?;
            }
            tensors.push((format!("blk.{i}.{gg}"), t));
        }
    }
    let qt: Vec<(String, QTensor)> = tensors
        .iter()
        .map(|(n, t)| {
            let d = if t.rank() == 1 { GgmlDType::F32 } else { dtype };
            Ok((n.clone(), QTensor::quantize(t, d)?))
        })
        .collect::<Result<_>>()?;
    let toks = token_list();
    let types: Vec<Value> = toks
        .iter()
        .map(|t| Value::I32(if SPECIALS.contains(&t.as_str()) { 3 } else { 1 }))
        .collect();
    let strs = |v: Vec<String>| Value::Array(v.into_iter().map(Value::String).collect());
    let meta: Vec<(&str, Value)> = vec![
        ("general.architecture", Value::String("llama".into())),
        ("general.name", Value::String("tiny".into())),
        ("llama.block_count", Value::U32(LAYERS as u32)),
        ("llama.context_length", Value::U32(512)),
        ("llama.embedding_length", Value::U32(HIDDEN as u32)),
        ("llama.feed_forward_length", Value::U32(INTER as u32)),
        ("llama.attention.head_count", Value::U32(HEADS as u32)),
        ("llama.attention.head_count_kv", Value::U32(KV_HEADS as u32)),
        ("llama.attention.layer_norm_rms_epsilon", Value::F32(1e-5)),
        ("llama.rope.freq_base", Value::F32(10000.0)),
        ("tokenizer.ggml.model", Value::String("gpt2".into())),
        ("tokenizer.ggml.pre", Value::String("smollm".into())),
        ("tokenizer.ggml.tokens", strs(toks.clone())),
        ("tokenizer.ggml.token_type", Value::Array(types)),
        (
            "tokenizer.ggml.merges",
            strs(MERGES.iter().map(|(a, b)| format!("{a} {b}")).collect()),
        ),
        (
            "tokenizer.ggml.bos_token_id",
            Value::U32(id_of("<|im_start|>")),
        ),
        (
            "tokenizer.ggml.eos_token_id",
            Value::U32(id_of("<|im_end|>")),
        ),
        ("tokenizer.chat_template", Value::String(chat_template())),
    ];
    let meta_refs: Vec<(&str, &Value)> = meta.iter().map(|(k, v)| (*k, v)).collect();
    let t_refs: Vec<(&str, &QTensor)> = qt.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let mut f = std::fs::File::create(path)?;
    gguf_file::write(&mut f, &meta_refs, &t_refs)?;
    Ok(())
}

/// The families with committed fixtures (every architecture the loader accepts), the Llama first.
pub const FAMILIES: [&str; 5] = ["llama", "qwen2", "qwen3", "mistral", "gemma3"];

/// The committed fixture of `family` (llama, qwen2, qwen3, mistral, gemma3): transformers'
/// config.json, model.safetensors and reference tensors, written by
/// scripts/fixtures/make-model-fixtures.py.
pub fn family_fixture(family: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../data/model-fixtures")
        .join(family)
}

/// The family's fixture as a model folder in `dir`: transformers' config.json and
/// model.safetensors with the tiny tokenizer and ChatML template of the other model tests.
pub fn family_folder(family: &str, dir: &Path) -> Result<PathBuf> {
    let folder = dir.join(family);
    std::fs::create_dir_all(&folder)?;
    for f in ["config.json", "model.safetensors"] {
        std::fs::copy(family_fixture(family).join(f), folder.join(f))?;
    }
    tiny_tokenizer()?
        .save(folder.join("tokenizer.json"), false)
        .map_err(anyhow::Error::msg)?;
    let tc = serde_json::json!({ "chat_template": chat_template(), "eos_token": "<|im_end|>" });
    std::fs::write(folder.join("tokenizer_config.json"), tc.to_string())?;
    Ok(folder)
}
