//! The model loaders: a GGUF file, and each file of an HF folder (weights, config, tokenizer,
//! tokenizer config), loaded with `load_model` as every command loads a model, then used the way
//! the program first uses one (encode, render a chat, generate a few tokens), so that a file
//! that loads but describes an impossible model is caught where it would fail.

use std::collections::HashMap;
use std::path::PathBuf;

use candle_core::quantized::GgmlDType;
use candle_core::Device;
use empathy_gym::model::{load_model, ChatMessage, ChatModel, LoadOptions, Role, SamplingParams};

use crate::fuzz::{FuzzContext, Kind, Target};
use crate::tiny_model::{family_folder, write_gguf_as, write_hf, TinySpec, FAMILIES};

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

/// A target for one file of an HF folder. A folder is written for each of `families` (the tiny
/// Llama and Qwen2 on the fly, the other families from their committed fixtures), each folder's
/// `file` is a seed, and each input replaces `file` in the folder `pick` names for it, which is
/// then loaded.
fn hf_file(
    ctx: &FuzzContext,
    name: &'static str,
    file: &'static str,
    kind: Kind,
    families: &[&'static str],
    pick: fn(&[u8]) -> &'static str,
) -> anyhow::Result<Target> {
    let dir = ctx.fresh_dir(name)?;
    let mut folders: HashMap<&'static str, PathBuf> = HashMap::new();
    let mut seeds: Vec<Vec<u8>> = Vec::new();
    for &family in families {
        let folder = match family {
            "llama" | "qwen2" => {
                let folder = dir.join(format!("tiny-{family}"));
                let spec = if family == "llama" {
                    TinySpec::llama()
                } else {
                    TinySpec::qwen2()
                };
                write_hf(&folder, &spec)?;
                folder
            }
            other => family_folder(other, &dir)?,
        };
        let seed = std::fs::read(folder.join(file))?;
        if !seeds.contains(&seed) {
            seeds.push(seed);
        }
        folders.insert(family, folder);
    }
    Target::new(name, kind, seeds, move |input| {
        let folder = &folders[pick(input)];
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
        &["llama", "qwen2"],
        |i| {
            if contains(&i[..i.len().min(64 << 10)], b".bias") {
                "qwen2"
            } else {
                "llama"
            }
        },
    )
}

/// `hf_config`: config.json of an HF folder, seeded with every family's config; an input goes
/// to the folder of the first family whose `model_type` it names (the Llama's when none).
pub fn hf_config(ctx: &FuzzContext) -> anyhow::Result<Target> {
    hf_file(
        ctx,
        "hf_config",
        "config.json",
        Kind::Json,
        &FAMILIES,
        |i| {
            FAMILIES[1..]
                .iter()
                .find(|f| contains(i, format!("\"{f}\"").as_bytes()))
                .copied()
                .unwrap_or("llama")
        },
    )
}

/// `tokenizer`: tokenizer.json of an HF folder.
pub fn tokenizer(ctx: &FuzzContext) -> anyhow::Result<Target> {
    hf_file(
        ctx,
        "tokenizer",
        "tokenizer.json",
        Kind::Json,
        &["llama"],
        |_| "llama",
    )
}

/// `tokenizer_config`: tokenizer_config.json (the chat template) of an HF folder.
pub fn tokenizer_config(ctx: &FuzzContext) -> anyhow::Result<Target> {
    hf_file(
        ctx,
        "tokenizer_config",
        "tokenizer_config.json",
        Kind::Json,
        &["llama"],
        |_| "llama",
    )
}
