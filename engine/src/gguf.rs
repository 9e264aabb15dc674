//! Loading a GGUF file (llama.cpp's format): hyper-parameters from the metadata, every tensor
//! dequantized to f32 (so sampling and training share one set of numerics),
//! and llama.cpp tensor names mapped onto `Weights`.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use candle_core::quantized::gguf_file::{Content, Value};
use candle_core::{DType, Device, Tensor};

use super::model_config::{Arch, ModelConfig, RopeLayout};
use super::weights::{model_err, LayerWeights, Proj, Weights};
use crate::error::{Error, Result};

/// An open GGUF file: its parsed header and a reader for the tensor data.
pub struct GgufFile {
    /// Header: metadata and tensor table.
    pub content: Content,
    reader: BufReader<File>,
    path: std::path::PathBuf,
}

impl GgufFile {
    /// Opens and parses the header of `path`.
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let mut reader = BufReader::new(file);
        let content = Content::read(&mut reader)
            .map_err(|e| model_err(path, format!("not a readable GGUF file: {e}")))?;
        let len = reader
            .get_ref()
            .metadata()
            .map_err(|e| Error::io(path, e))?
            .len();
        check_tensor_table(&content, len).map_err(|m| model_err(path, m))?;
        Ok(GgufFile {
            content,
            reader,
            path: path.to_path_buf(),
        })
    }

    /// A metadata value, or an error naming the key.
    pub fn meta(&self, key: &str) -> Result<&Value> {
        self.content
            .metadata
            .get(key)
            .ok_or_else(|| model_err(&self.path, format!("metadata key {key} is missing")))
    }

    /// An integer metadata value of any width.
    pub fn meta_usize(&self, key: &str) -> Result<usize> {
        as_u64(self.meta(key)?)
            .map(|v| v as usize)
            .ok_or_else(|| model_err(&self.path, format!("metadata key {key} is not an integer")))
    }

    fn meta_f64(&self, key: &str) -> Result<f64> {
        match self.meta(key)? {
            Value::F32(x) => Ok(*x as f64),
            Value::F64(x) => Ok(*x),
            _ => Err(model_err(
                &self.path,
                format!("metadata key {key} is not a float"),
            )),
        }
    }

    /// A string metadata value.
    pub fn meta_str(&self, key: &str) -> Result<&str> {
        match self.meta(key)? {
            Value::String(s) => Ok(s),
            _ => Err(model_err(
                &self.path,
                format!("metadata key {key} is not a string"),
            )),
        }
    }

    /// Reads tensor `name` dequantized to `dtype`.
    pub fn tensor(&mut self, name: &str, dtype: DType, device: &Device) -> Result<Tensor> {
        let q = self
            .content
            .tensor(&mut self.reader, name, device)
            .map_err(|e| model_err(&self.path, format!("tensor {name}: {e}")))?;
        Ok(q.dequantize(device)?.to_dtype(dtype)?)
    }

    fn has_tensor(&self, name: &str) -> bool {
        self.content.tensor_infos.contains_key(name)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Checks that every tensor of the table lies within the file, its size computed without
/// overflow: candle sizes a tensor as elements / block * bytes per block in wrapping arithmetic, so
/// a dimension near 2^64 could pass its bounds check with a size of 0 and then ask for a vector of
/// 2^63 elements when dequantized.
fn check_tensor_table(content: &Content, file_len: u64) -> std::result::Result<(), String> {
    for (name, info) in &content.tensor_infos {
        let elems = info
            .shape
            .dims()
            .iter()
            .try_fold(1u128, |n, &d| n.checked_mul(d as u128))
            .unwrap_or(u128::MAX);
        let (block, bytes_per_block) = (
            info.ggml_dtype.block_size() as u128,
            info.ggml_dtype.type_size() as u128,
        );
        let start = u128::from(content.tensor_data_offset) + u128::from(info.offset);
        let size = (elems / block.max(1)).saturating_mul(bytes_per_block);
        if elems % block.max(1) != 0 || start.saturating_add(size) > u128::from(file_len) {
            return Err(format!(
                "tensor {name} with shape {:?} ({elems} elements) at offset {start} does not fit in the file's {file_len} bytes",
                info.shape.dims()
            ));
        }
    }
    Ok(())
}

/// Any integer `Value` as u64 (GGUF writers differ in the widths they use).
pub fn as_u64(v: &Value) -> Option<u64> {
    match *v {
        Value::U8(x) => Some(x as u64),
        Value::I8(x) => u64::try_from(x).ok(),
        Value::U16(x) => Some(x as u64),
        Value::I16(x) => u64::try_from(x).ok(),
        Value::U32(x) => Some(x as u64),
        Value::I32(x) => u64::try_from(x).ok(),
        Value::U64(x) => Some(x),
        Value::I64(x) => u64::try_from(x).ok(),
        _ => None,
    }
}

/// Hyper-parameters from the metadata of a `llama` or `qwen2` GGUF.
pub fn gguf_config(g: &GgufFile) -> Result<ModelConfig> {
    let arch_name = g.meta_str("general.architecture")?.to_string();
    let (arch, layout) = match arch_name.as_str() {
        // llama.cpp's converter permutes llama q/k rows for interleaved rotary pairs.
        "llama" => (Arch::Llama, RopeLayout::Interleaved),
        // ... but not qwen2's, which keeps HF's half-split (NEOX) layout.
        "qwen2" => (Arch::Qwen2, RopeLayout::Half),
        other => {
            return Err(model_err(
                g.path(),
                format!("unsupported GGUF architecture {other:?}; supported: llama, qwen2"),
            ))
        }
    };
    if g.has_tensor("rope_freqs.weight") {
        return Err(model_err(g.path(), "GGUF rope frequency factors (Llama 3.1 scaling) are not supported; load the HF folder instead"));
    }
    let k = |s: &str| format!("{arch_name}.{s}");
    let hidden = g.meta_usize(&k("embedding_length"))?;
    let heads = g.meta_usize(&k("attention.head_count"))?;
    let kv_heads = g.meta_usize(&k("attention.head_count_kv")).unwrap_or(heads);
    if heads == 0 || kv_heads == 0 || heads % kv_heads != 0 || hidden % heads != 0 {
        return Err(model_err(
            g.path(),
            format!("inconsistent head counts: {heads} heads, {kv_heads} KV heads, width {hidden}"),
        ));
    }
    let vocab = g
        .content
        .tensor_infos
        .get("token_embd.weight")
        .map(|t| t.shape.dims().to_vec());
    let vocab_size = match vocab.as_deref() {
        Some([v, h]) if *h == hidden => *v,
        other => {
            return Err(model_err(
                g.path(),
                format!("token_embd.weight has shape {other:?}, expected [vocab, {hidden}]"),
            ))
        }
    };
    Ok(ModelConfig {
        arch,
        hidden_size: hidden,
        intermediate_size: g.meta_usize(&k("feed_forward_length"))?,
        num_layers: g.meta_usize(&k("block_count"))?,
        num_heads: heads,
        num_kv_heads: kv_heads,
        head_dim: hidden / heads,
        vocab_size,
        rms_norm_eps: g.meta_f64(&k("attention.layer_norm_rms_epsilon"))?,
        rope_theta: g.meta_f64(&k("rope.freq_base")).unwrap_or(10_000.0),
        rope_scaling: None,
        max_position_embeddings: g.meta_usize(&k("context_length")).unwrap_or(4096),
        tie_word_embeddings: !g.has_tensor("output.weight"),
        qkv_bias: g.has_tensor("blk.0.attn_q.bias"),
        rope_layout: layout,
        bos_token_id: g
            .meta_usize("tokenizer.ggml.bos_token_id")
            .ok()
            .map(|x| x as u32),
        eos_token_ids: g
            .meta_usize("tokenizer.ggml.eos_token_id")
            .ok()
            .map(|x| x as u32)
            .into_iter()
            .collect(),
        qk_norm: false,
        sliding_window: None,
        sliding_layers: Vec::new(),
        mlp_act: Default::default(),
        gemma: None,
        rope_linear_factor: None,
    })
}

/// Reads every weight of the decoder, dequantized to `dtype`.
pub fn gguf_weights(
    g: &mut GgufFile,
    cfg: &ModelConfig,
    dtype: DType,
    device: &Device,
) -> Result<Weights> {
    let embed = g.tensor("token_embd.weight", dtype, device)?;
    let norm = g.tensor("output_norm.weight", dtype, device)?;
    let lm_head = if cfg.tie_word_embeddings {
        None
    } else {
        Some(g.tensor("output.weight", dtype, device)?)
    };
    let mut layers = Vec::with_capacity(cfg.num_layers);
    for i in 0..cfg.num_layers {
        let mut proj = |name: &str, bias: bool| -> Result<Proj> {
            let weight = g.tensor(&format!("blk.{i}.{name}.weight"), dtype, device)?;
            let bias = if bias {
                Some(g.tensor(&format!("blk.{i}.{name}.bias"), dtype, device)?)
            } else {
                None
            };
            Ok(Proj { weight, bias })
        };
        let q = proj("attn_q", cfg.qkv_bias)?;
        let k = proj("attn_k", cfg.qkv_bias)?;
        let v = proj("attn_v", cfg.qkv_bias)?;
        let o = proj("attn_output", false)?;
        let gate = proj("ffn_gate", false)?;
        let up = proj("ffn_up", false)?;
        let down = proj("ffn_down", false)?;
        let attn_norm = g.tensor(&format!("blk.{i}.attn_norm.weight"), dtype, device)?;
        let mlp_norm = g.tensor(&format!("blk.{i}.ffn_norm.weight"), dtype, device)?;
        layers.push(LayerWeights {
            attn_norm,
            q,
            k,
            v,
            o,
            mlp_norm,
            gate,
            up,
            down,
            q_norm: None,
            k_norm: None,
            post_attn_norm: None,
            post_mlp_norm: None,
        });
    }
    let w = Weights {
        embed,
        norm,
        lm_head,
        layers,
    };
    w.check(cfg, g.path())?;
    Ok(w)
}

/// Undoes llama.cpp's q/k row permutation for one projection with `heads` heads: GGUF row
/// (h, i, j) for i < d/2, j in {0, 1} holds HF row (h, j, i). Works on weights [heads*d, in] and
/// biases [heads*d].
pub fn unpermute_rows(x: &Tensor, heads: usize) -> Result<Tensor> {
    let dims = x.dims().to_vec();
    let rows = dims[0];
    let d = rows / heads;
    let rest: usize = dims[1..].iter().product();
    let y = x
        .reshape((heads, d / 2, 2, rest))?
        .transpose(1, 2)?
        .contiguous()?;
    Ok(y.reshape(dims)?)
}

/// The inverse of `unpermute_rows` (HF layout -> GGUF interleaved layout).
pub fn permute_rows(x: &Tensor, heads: usize) -> Result<Tensor> {
    let dims = x.dims().to_vec();
    let d = dims[0] / heads;
    let rest: usize = dims[1..].iter().product();
    let y = x
        .reshape((heads, 2, d / 2, rest))?
        .transpose(1, 2)?
        .contiguous()?;
    Ok(y.reshape(dims)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unpermute_inverts_llama_cpp_permutation() -> Result<()> {
        // One head of width 4, one input column: HF rows [a0 a1 | b0 b1] (halves) become GGUF
        // rows [a0 b0 a1 b1] (pairs), as llama.cpp's convert script writes them.
        let hf = Tensor::new(&[[0f32], [1.], [2.], [3.]], &Device::Cpu)?;
        let gguf = permute_rows(&hf, 1)?;
        assert_eq!(gguf.flatten_all()?.to_vec1::<f32>()?, vec![0., 2., 1., 3.]);
        let back = unpermute_rows(&gguf, 1)?;
        assert_eq!(back.flatten_all()?.to_vec1::<f32>()?, vec![0., 1., 2., 3.]);
        Ok(())
    }
}
