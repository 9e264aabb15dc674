//! Rebuilds a `tokenizers::Tokenizer` from GGUF metadata (a GGUF carries no tokenizer.json):
//! byte-level BPE from `tokenizer.ggml.tokens` and `tokenizer.ggml.merges`, control (3) and
//! user-defined (4) token types as added tokens, and the pre-tokenizer named by
//! `tokenizer.ggml.pre` (llama.cpp's names).

use std::path::Path;

use candle_core::quantized::gguf_file::Value;
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{AddedToken, PreTokenizerWrapper, SplitDelimiterBehavior, Tokenizer};

use super::gguf::{as_u64, GgufFile};
use super::weights::model_err;
use crate::error::Result;

/// GGUF token type of control tokens (`<|im_start|>`), llama.cpp's LLAMA_TOKEN_TYPE_CONTROL.
const TOKEN_TYPE_CONTROL: u64 = 3;
/// GGUF token type of user-defined added tokens, LLAMA_TOKEN_TYPE_USER_DEFINED.
const TOKEN_TYPE_USER_DEFINED: u64 = 4;

/// Llama 3's split regex ("llama-bpe" in llama.cpp), as in Meta's tokenizer.json.
const LLAMA3_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Qwen2's split regex (single digits), as in Qwen2's tokenizer.json.
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// The pre-tokenizers this module can rebuild, by `tokenizer.ggml.pre`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreKind {
    /// "smollm": digits split one by one, then GPT-2 byte-level with its regex.
    SmolLm,
    /// "default"/"gpt2" or absent: GPT-2 byte-level with its regex.
    Gpt2,
    /// "llama-bpe"/"llama3": Llama 3 split regex, then byte-level without regex.
    Llama3,
    /// "qwen2": Qwen2 split regex, then byte-level without regex.
    Qwen2,
}

impl PreKind {
    /// Maps llama.cpp's pre-tokenizer name; None when unsupported.
    pub fn from_gguf(name: Option<&str>) -> Option<Self> {
        match name {
            Some("smollm") => Some(PreKind::SmolLm),
            None | Some("default") | Some("gpt2") | Some("gpt-2") => Some(PreKind::Gpt2),
            Some("llama-bpe") | Some("llama3") | Some("llama-v3") => Some(PreKind::Llama3),
            Some("qwen2") => Some(PreKind::Qwen2),
            Some(_) => None,
        }
    }

    fn build(self) -> Result<PreTokenizerWrapper> {
        let byte_level = |regex| PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, true, regex));
        let split = |re: &str| -> Result<PreTokenizerWrapper> {
            let s = Split::new(
                SplitPattern::Regex(re.to_string()),
                SplitDelimiterBehavior::Isolated,
                false,
            )
            .map_err(|e| crate::error::Error::Other(format!("split regex: {e}")))?;
            Ok(PreTokenizerWrapper::Split(s))
        };
        Ok(match self {
            PreKind::SmolLm => PreTokenizerWrapper::Sequence(Sequence::new(vec![
                PreTokenizerWrapper::Digits(Digits::new(true)),
                byte_level(true),
            ])),
            PreKind::Gpt2 => byte_level(true),
            PreKind::Llama3 => PreTokenizerWrapper::Sequence(Sequence::new(vec![
                split(LLAMA3_SPLIT)?,
                byte_level(false),
            ])),
            PreKind::Qwen2 => PreTokenizerWrapper::Sequence(Sequence::new(vec![
                split(QWEN2_SPLIT)?,
                byte_level(false),
            ])),
        })
    }
}

fn strings(g: &GgufFile, key: &str) -> Result<Vec<String>> {
    match g.meta(key)? {
        Value::Array(items) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                _ => Err(model_err(
                    g.path(),
                    format!("{key} holds a non-string entry"),
                )),
            })
            .collect(),
        _ => Err(model_err(g.path(), format!("{key} is not an array"))),
    }
}

fn token_types(g: &GgufFile, n: usize) -> Result<Vec<u64>> {
    match g.content.metadata.get("tokenizer.ggml.token_type") {
        None => Ok(vec![1; n]),
        Some(Value::Array(items)) => Ok(items.iter().map(|v| as_u64(v).unwrap_or(1)).collect()),
        Some(_) => Err(model_err(
            g.path(),
            "tokenizer.ggml.token_type is not an array",
        )),
    }
}

/// Runs a `tokenizers` call that may panic on malformed input instead of returning an error (its
/// decoder deserializer `expect`s, its BPE builder slices by lengths it does not check), turning a
/// panic into an error naming `path`.
pub fn without_panics<T>(path: &Path, what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let why = p
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| p.downcast_ref::<&str>().copied())
            .unwrap_or("no message");
        Err(model_err(
            path,
            format!(
                "{what}: the tokenizer library failed on this input ({why}); the file is corrupted"
            ),
        ))
    })
}

/// Reads an HF `tokenizer.json`: its JSON is checked first (an error with line and column), then
/// handed to `tokenizers` under [`without_panics`].
pub fn tokenizer_from_json_file(path: &Path) -> Result<Tokenizer> {
    let text = std::fs::read_to_string(path).map_err(|e| crate::error::Error::io(path, e))?;
    serde_json::from_str::<serde_json::Value>(&text)
        .map_err(|e| model_err(path, format!("not valid JSON: {e}")))?;
    without_panics(path, "reading the tokenizer", || {
        text.parse::<Tokenizer>()
            .map_err(|e| model_err(path, format!("cannot read tokenizer: {e}")))
    })
}

/// Builds the tokenizer described by the GGUF metadata.
pub fn tokenizer_from_gguf(g: &GgufFile) -> Result<Tokenizer> {
    let path: &Path = g.path();
    let model = g.meta_str("tokenizer.ggml.model")?;
    if model != "gpt2" {
        return Err(model_err(path, format!("GGUF tokenizer model {model:?} is not supported (only byte-level BPE, \"gpt2\"); load the HF folder with its tokenizer.json instead")));
    }
    let pre_name = g.meta_str("tokenizer.ggml.pre").ok();
    let pre = PreKind::from_gguf(pre_name).ok_or_else(|| {
        model_err(
            path,
            format!(
                "GGUF pre-tokenizer {:?} is not supported (smollm, gpt2, llama-bpe, qwen2)",
                pre_name.unwrap_or("")
            ),
        )
    })?;
    let tokens = strings(g, "tokenizer.ggml.tokens")?;
    let merges: Vec<(String, String)> = strings(g, "tokenizer.ggml.merges")?
        .into_iter()
        .map(|m| match m.split_once(' ') {
            Some((a, b)) => Ok((a.to_string(), b.to_string())),
            None => Err(model_err(path, format!("merge {m:?} has no space"))),
        })
        .collect::<Result<_>>()?;
    let vocab: Vocab = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), i as u32))
        .collect();
    let bpe = without_panics(path, "building the BPE of the GGUF vocabulary", || {
        BPE::builder()
            .vocab_and_merges(vocab, merges)
            .build()
            .map_err(|e| {
                model_err(
                    path,
                    format!("cannot build BPE from the GGUF vocabulary: {e}"),
                )
            })
    })?;
    let mut tok = Tokenizer::new(bpe);
    tok.with_pre_tokenizer(Some(pre.build()?));
    tok.with_decoder(Some(ByteLevelDecoder::default()));
    let types = token_types(g, tokens.len())?;
    let added = |kind: u64, special: bool| -> Vec<AddedToken> {
        tokens
            .iter()
            .zip(&types)
            .filter(|(_, &t)| t == kind)
            .map(|(s, _)| AddedToken::from(s.clone(), special).normalized(false))
            .collect()
    };
    tok.add_special_tokens(added(TOKEN_TYPE_CONTROL, true))
        .map_err(|e| model_err(path, format!("special tokens: {e}")))?;
    tok.add_tokens(added(TOKEN_TYPE_USER_DEFINED, false))
        .map_err(|e| model_err(path, format!("added tokens: {e}")))?;
    Ok(tok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pre_names_map_to_kinds() {
        assert_eq!(PreKind::from_gguf(Some("smollm")), Some(PreKind::SmolLm));
        assert_eq!(PreKind::from_gguf(None), Some(PreKind::Gpt2));
        assert_eq!(PreKind::from_gguf(Some("llama-bpe")), Some(PreKind::Llama3));
        assert_eq!(PreKind::from_gguf(Some("deepseek-coder")), None);
        for k in [
            PreKind::SmolLm,
            PreKind::Gpt2,
            PreKind::Llama3,
            PreKind::Qwen2,
        ] {
            assert!(k.build().is_ok(), "{k:?}");
        }
    }
}
