//! Tests against the real SmolLM2-135M-Instruct Q4_1 GGUF (fetched by scripts/fetch-models.sh,
//! which the test command runs). A missing file fails each test, naming where it was looked for.

use anyhow::Result;
use candle_core::quantized::gguf_file;
use candle_core::Device;
use empathy_gym::model::{load_model, ChatMessage, LoadOptions, Role, DEFAULT_POLICY};

fn gguf_path() -> std::path::PathBuf {
    empathy_test_support::require_model(DEFAULT_POLICY)
}

/// Reference ids from llama.cpp itself: the `llama-cpp-cffi` 0.4.42 wheel from PyPI (CPU
/// backend), loading this GGUF with `vocab_only`, calling
/// `llama_tokenize(vocab, text, len, buf, n, add_special=False, parse_special=True)`, and
/// `llama_token_to_piece` to check the round trip (scripts/gguf-reference-tokens.py).
const REFERENCE: &[(&str, &[u32])] = &[
    ("Hello, world!", &[19556, 28, 905, 17]),
    (
        "I feel so alone since I lost my job.",
        &[57, 1407, 588, 4016, 1675, 339, 3590, 957, 2288, 30],
    ),
    (
        "naïve café — déjà vu",
        &[3546, 46494, 37366, 1841, 32564, 90, 16739, 386, 101],
    ),
    (
        "日本語のテキスト",
        &[
            23274, 115, 40993, 179, 120, 248, 26453, 11100, 224, 10391, 251, 10391, 134, 11100, 226,
        ],
    ),
    (
        "emoji 😀🎉 and 👩\u{200d}👩\u{200d}👧",
        &[
            391, 33777, 40303, 218, 10813, 232, 227, 284, 15107, 235, 119, 321, 231, 10813, 235,
            119, 321, 231, 10813, 235, 117,
        ],
    ),
    (
        "digits 1234567 and 3.14159",
        &[
            37307, 216, 33, 34, 35, 36, 37, 38, 39, 284, 216, 35, 30, 33, 36, 33, 37, 41,
        ],
    ),
    (
        "runs   of    spaces\tand\ttabs\n\nnewlines",
        &[
            33096, 256, 282, 333, 5600, 197, 397, 197, 100, 7366, 198, 198, 2241, 5110,
        ],
    ),
    ("  leading and trailing  ", &[216, 2899, 284, 35079, 256]),
    (
        "<|im_start|>user\nHi<|im_end|>\n",
        &[1, 4093, 198, 26843, 2, 198],
    ),
    ("don't I'll we're", &[12420, 982, 339, 3060, 392, 2316]),
    (
        "Ünïcödé ñ ß Ωμέγα Привет",
        &[
            142, 246, 94, 25972, 83, 7466, 84, 2756, 5549, 126, 5549, 249, 5664, 119, 16674, 34075,
            23098, 8998, 5470, 249, 46879, 16464, 32547,
        ],
    ),
];

#[test]
fn smollm2_gguf_tokenizer_matches_llama_cpp_and_round_trips() -> Result<()> {
    let path = gguf_path();
    let m = load_model(&path, &Device::Cpu, &LoadOptions::default())?;
    for (text, ids) in REFERENCE {
        assert_eq!(m.encode(text)?, ids.to_vec(), "{text:?}");
        assert_eq!(m.decode(ids)?, *text);
    }
    assert_eq!(m.stop_tokens, vec![2, 0]); // <|im_end|> (also EOS), <|endoftext|>
    let prompt = m.decode(&m.encode_chat(&[ChatMessage::new(Role::User, "Hi")], true)?)?;
    assert_eq!(prompt, "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    Ok(())
}

/// Built with `--features reference` only (scripts/test-full.sh runs it): nothing else needs
/// candle-transformers.
#[cfg(feature = "reference")]
mod reference {
    use super::*;
    use candle_core::Tensor;
    use candle_transformers::models::quantized_llama::ModelWeights;
    use empathy_gym::model::{AdapterMode, Pass};

    /// candle_transformers' quantized_llama on the same file with every tensor dequantized (its
    /// batched prefill needs dequantized weights) gives the same last-position logits as our f32
    /// forward, both with and without our KV cache.
    #[test]
    fn smollm2_f32_forward_matches_candle_quantized_llama_dequantized() -> Result<()> {
        let path = gguf_path();
        // Read once per thread by candle's QMatMul; each test runs on its own thread.
        std::env::set_var("CANDLE_DEQUANTIZE_ALL", "1");
        let dev = Device::Cpu;
        let m = load_model(&path, &dev, &LoadOptions::default())?;
        let ids = m.encode_chat(
            &[ChatMessage::new(
                Role::User,
                "I lost my job today and I feel awful.",
            )],
            true,
        )?;
        let mut file = std::fs::File::open(&path)?;
        let ct = gguf_file::Content::read(&mut file)?;
        let mut reference = ModelWeights::from_gguf(ct, &mut file, &dev)?;
        let n = ids.len();
        let split = n - 4;
        // Ours without cache: all positions at once.
        let x = Tensor::new(ids.as_slice(), &dev)?.unsqueeze(0)?;
        let full = m
            .model
            .logits(
                &m.model.forward(&x, None, AdapterMode::On, Pass::Infer)?,
                Pass::Infer,
            )?
            .squeeze(0)?;
        // Ours with cache: prefill then single steps, like the reference.
        let mut cache = m.model.new_cache(1, n)?;
        let mut worst = 0f32;
        for pos in split..=n {
            let (start, len) = if pos == split {
                (0, split)
            } else {
                (pos - 1, 1)
            };
            let step = Tensor::new(&ids[start..start + len], &dev)?.unsqueeze(0)?;
            let want = reference.forward(&step, start)?.squeeze(0)?;
            let h = m
                .model
                .forward(&step, Some(&mut cache), AdapterMode::On, Pass::Infer)?;
            let cached = m
                .model
                .logits(&h.narrow(1, len - 1, 1)?, Pass::Infer)?
                .flatten_all()?;
            let uncached = full.get(start + len - 1)?;
            for got in [cached, uncached] {
                let d = (got - &want)?.abs()?.max(0)?.to_scalar::<f32>()?;
                worst = worst.max(d);
            }
        }
        println!("max |logit difference| vs quantized_llama (dequantized): {worst:e}");
        assert!(worst < 1e-3, "max abs logit difference {worst}");
        Ok(())
    }
}

/// The name people see for the GGUF is its file stem, not the `general.name` the converter wrote
/// ("Smollm2 135M 8k Lc100K Mix1 Ep2", which `train` and `chat` once showed), and the
/// words check would catch that name. `chat` greets with the stem (stdin is closed, so it ends
/// after the greeting); `train` prints the same `ChatModel::name` in its first line.
#[test]
fn smollm2_is_shown_by_its_file_stem() -> Result<()> {
    let path = gguf_path();
    let stem = "SmolLM2-135M-Instruct.Q4_1";
    assert_eq!(path.file_stem().and_then(|s| s.to_str()), Some(stem));
    let general = {
        let mut file = std::fs::File::open(&path)?;
        let ct = gguf_file::Content::read(&mut file)?;
        ct.metadata["general.name"].to_string()?.clone()
    };
    assert_ne!(general, stem, "the file's general.name is the converter's");
    assert!(
        crate::common::debug_form(&format!("Talking with {general}.")).is_some(),
        "the words check misses {general:?}"
    );

    let model = load_model(&path, &Device::Cpu, &LoadOptions::default())?;
    assert_eq!(model.name, stem);
    let o = crate::common::eg(&["chat"]);
    let out = crate::common::output_of(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains(&format!("Talking with {stem} (end with /quit")),
        "{out}"
    );
    crate::common::assert_words_for_people("chat", &out);
    Ok(())
}
