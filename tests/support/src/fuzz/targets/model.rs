//! The model loaders: a GGUF file, and each file of an HF folder (weights, config, tokenizer,
//! tokenizer config), loaded with `load_model` as every command loads a model, then used the way
//! the program first uses one (encode, render a chat, generate a few tokens), so that a file
//! that loads but describes an impossible model is caught where it would fail.

use std::path::PathBuf;

use candle_core::quantized::GgmlDType;
use candle_core::Device;
use empathy_gym::model::{load_model, ChatMessage, ChatModel, LoadOptions, Role, SamplingParams};

use crate::fuzz::{FuzzContext, Kind, Target};
use crate::tiny_model::{write_gguf_as, write_hf, TinySpec};

/// Uses a loaded model: plain and special-token text, a chat, three sampled tokens.
pub fn exercise(m: &ChatModel) -> anyhow::Result<()> {
    let ids = m.encode("Hello 123 <|im_start|>héllo\n")?;
    m.decode(&ids)?;
    let chat = [
        ChatMessage::new(Role::System, "Be kind."),
        ChatMessage::new(Role::User, "hello there 42"),
    ];
    let prompt = m.encode_chat(&chat, true)?;
    let params = SamplingParams {
        temperature: 0.7,
        top_p: 0.9,
        max_new_tokens: 3,
        greedy: false,
    };
    m.generate(&[prompt], &[1], &params)?;
    Ok(())
}

/// `gguf`: a GGUF file (f32, Q8_0 and Q4_1 seeds of the tiny Llama).
pub fn gguf(ctx: &FuzzContext) -> anyhow::Result<Target> {
    let dir = ctx.fresh_dir("gguf")?;
    let mut seeds = Vec::new();
    for (name, dtype) in [
        ("f32", GgmlDType::F32),
        ("q8_0", GgmlDType::Q8_0),
        ("q4_1", GgmlDType::Q4_1),
    ] {
        let path = dir.join(format!("seed-{name}.gguf"));
        write_gguf_as(&path, &TinySpec::llama(), dtype)?;
        seeds.push(std::fs::read(&path)?);
    }
    let path = dir.join("input.gguf");
    Target::new("gguf", Kind::Gguf, seeds, move |input| {
        std::fs::write(&path, input)?;
        let m = load_model(&path, &Device::Cpu, &LoadOptions::default())?;
        exercise(&m)
    })
}

/// A target for one file of an HF folder: the tiny Llama's and Qwen2's folders are written,
/// each input replaces `file` in the one it resembles, and the folder is loaded.
fn hf_file(
    ctx: &FuzzContext,
    name: &'static str,
    file: &'static str,
    kind: Kind,
    is_qwen2: fn(&[u8]) -> bool,
) -> anyhow::Result<Target> {
    let dir = ctx.fresh_dir(name)?;
    let llama = dir.join("tiny-llama");
    let qwen2 = dir.join("tiny-qwen2");
    write_hf(&llama, &TinySpec::llama())?;
    write_hf(&qwen2, &TinySpec::qwen2())?;
    let mut seeds = vec![std::fs::read(llama.join(file))?];
    let other = std::fs::read(qwen2.join(file))?;
    if other != seeds[0] {
        seeds.push(other);
    }
    Target::new(name, kind, seeds, move |input| {
        let folder: &PathBuf = if is_qwen2(input) { &qwen2 } else { &llama };
        std::fs::write(folder.join(file), input)?;
        let m = load_model(folder, &Device::Cpu, &LoadOptions::default())?;
        exercise(&m)
    })
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// `safetensors`: model.safetensors of an HF folder.
pub fn safetensors(ctx: &FuzzContext) -> anyhow::Result<Target> {
    hf_file(
        ctx,
        "safetensors",
        "model.safetensors",
        Kind::Safetensors,
        |i| contains(&i[..i.len().min(64 << 10)], b".bias"),
    )
}

/// `hf_config`: config.json of an HF folder.
pub fn hf_config(ctx: &FuzzContext) -> anyhow::Result<Target> {
    hf_file(ctx, "hf_config", "config.json", Kind::Json, |i| {
        contains(i, b"qwen2")
    })
}

/// `tokenizer`: tokenizer.json of an HF folder.
pub fn tokenizer(ctx: &FuzzContext) -> anyhow::Result<Target> {
    hf_file(ctx, "tokenizer", "tokenizer.json", Kind::Json, |_| false)
}

/// `tokenizer_config`: tokenizer_config.json (the chat template) of an HF folder.
pub fn tokenizer_config(ctx: &FuzzContext) -> anyhow::Result<Target> {
    hf_file(
        ctx,
        "tokenizer_config",
        "tokenizer_config.json",
        Kind::Json,
        |_| false,
    )
}
