//! Every architecture the loader accepts, checked against its reference implementation: tiny
//! random-weight models that transformers built from each family's own config class
//! (scripts/fixtures/make-model-fixtures.py wrote them, with peft's LoRA gradients, to
//! tests/data/model-fixtures/). The tests load each folder as a user's model would be loaded and
//! compare, in f32: the logits of three prompts (one longer than the sliding windows), the same
//! logits decoded token by token through the KV cache, the logits with the adapters on, and the
//! gradients of a causal-LM loss with respect to every LoRA factor; then export with the adapters
//! merged and batched generation. And every chat template against what the model's own Jinja
//! template renders (templates.json, from the same script).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::Result;
use candle_core::{DType, Device, Tensor, D};
use empathy_engine::{
    load_model, AdapterMode, ChatMessage, ChatModel, ChatTemplate, LoadOptions, LoraConfig, Pass,
    SamplingParams,
};

use crate::common::{root, temp_dir};
pub use crate::model_fixtures::family_folder;
use crate::model_fixtures::{family_fixture as fixture, write_shards, FAMILIES};

/// Largest difference allowed between our logits and transformers' (f32, a few layers: the
/// sums run in another order).
const LOGIT_TOL: f32 = 1e-4;
/// Largest difference allowed between gradients, relative to the largest entry of the tensor.
const GRAD_TOL: f32 = 1e-3;

/// Where the export test leaves its folders when set, for transformers to read them
/// (scripts/fixtures/check-family-exports.py).
const KEEP_EXPORTS: &str = "EMPATHY_GYM_KEEP_EXPORTS";

/// The reference tensors of `family` (reference.safetensors).
fn reference(family: &str) -> Result<HashMap<String, Tensor>> {
    let path = fixture(family).join("reference.safetensors");
    Ok(candle_core::safetensors::load(&path, &Device::Cpu)?)
}

/// The family's folder ([`family_folder`]) loaded as a user's model is, with `lora` (rank 4,
/// alpha 8 on every projection, as the script's peft config) when asked.
fn load(family: &str, dir: &Path, lora: bool) -> Result<ChatModel> {
    let folder = family_folder(family, dir)?;
    let opts = LoadOptions {
        lora: lora.then(|| LoraConfig {
            rank: 4,
            alpha: 8.0,
            ..LoraConfig::default()
        }),
        ..LoadOptions::default()
    };
    Ok(load_model(&folder, &Device::Cpu, &opts)?)
}

fn prompts(r: &HashMap<String, Tensor>) -> Result<Vec<Vec<u32>>> {
    (0..3)
        .map(|k| {
            let t = &r[&format!("prompt.{k}")];
            Ok(t.to_dtype(DType::I64)?
                .to_vec1::<i64>()?
                .into_iter()
                .map(|x| x as u32)
                .collect())
        })
        .collect()
}

/// Logits [T, vocab] of one prompt in one forward without a cache.
fn logits(m: &ChatModel, ids: &[u32], mode: AdapterMode, pass: Pass) -> Result<Tensor> {
    let x = Tensor::new(ids, &Device::Cpu)?.unsqueeze(0)?;
    let h = m.model.forward(&x, None, mode, pass)?;
    Ok(m.model.logits(&h, pass)?.squeeze(0)?)
}

/// Logits [T, vocab] of one prompt decoded a token at a time through the KV cache, after a
/// prefill of its first three tokens.
fn cached_logits(m: &ChatModel, ids: &[u32]) -> Result<Tensor> {
    let mut cache = m.model.new_cache(1, ids.len())?;
    let mut rows = Vec::new();
    let mut at = 0;
    for n in std::iter::once(3).chain(std::iter::repeat(1)) {
        if at >= ids.len() {
            break;
        }
        let n = n.min(ids.len() - at);
        let x = Tensor::new(&ids[at..at + n], &Device::Cpu)?.unsqueeze(0)?;
        let h = m
            .model
            .forward(&x, Some(&mut cache), AdapterMode::On, Pass::Infer)?;
        rows.push(m.model.logits(&h, Pass::Infer)?.squeeze(0)?);
        at += n;
    }
    Ok(Tensor::cat(&rows, 0)?)
}

fn max_diff(a: &Tensor, b: &Tensor) -> Result<f32> {
    Ok((a - b)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?)
}

#[test]
fn every_family_matches_transformers_logits_with_and_without_the_cache() -> Result<()> {
    let dir = temp_dir();
    for family in FAMILIES {
        let r = reference(family)?;
        let m = load(family, dir.path(), false)?;
        for (k, ids) in prompts(&r)?.iter().enumerate() {
            let want = &r[&format!("logits.{k}")];
            for pass in [Pass::Infer, Pass::Train] {
                let got = logits(&m, ids, AdapterMode::Off, pass)?;
                let d = max_diff(&got, want)?;
                assert!(
                    d < LOGIT_TOL,
                    "{family} prompt {k} {pass:?}: logits differ by {d}"
                );
            }
            let d = max_diff(&cached_logits(&m, ids)?, want)?;
            assert!(d < LOGIT_TOL, "{family} prompt {k} through the cache: {d}");
        }
    }
    Ok(())
}

/// Loads the script's adapter values into `m` (reference keys "adapter.NAME").
fn set_adapters(m: &ChatModel, r: &HashMap<String, Tensor>) -> Result<()> {
    for (name, var) in m.trainable() {
        let t = r
            .get(&format!("adapter.{name}"))
            .ok_or_else(|| anyhow::anyhow!("no reference adapter for {name}"))?;
        var.set(t)?;
    }
    Ok(())
}

/// The family's references and its model with the script's adapters.
fn adapted(family: &str, dir: &Path) -> Result<(HashMap<String, Tensor>, ChatModel)> {
    let r = reference(family)?;
    let m = load(family, dir, true)?;
    set_adapters(&m, &r)?;
    Ok((r, m))
}

/// `got` is within [`GRAD_TOL`] of peft's gradient of `name`, relative to its largest entry.
fn assert_peft_gradient(
    family: &str,
    name: &str,
    got: &Tensor,
    r: &HashMap<String, Tensor>,
) -> Result<()> {
    let want = &r[&format!("grad.{name}")];
    let scale = want
        .abs()?
        .flatten_all()?
        .max(D::Minus1)?
        .to_scalar::<f32>()?;
    let d = max_diff(got, want)?;
    assert!(
        scale > 0.0 && d <= GRAD_TOL * scale,
        "{family} {name}: gradients differ by {d} (largest entry {scale})"
    );
    Ok(())
}

#[test]
fn every_family_matches_peft_lora_logits_and_gradients() -> Result<()> {
    let dir = temp_dir();
    for family in FAMILIES {
        let (r, m) = adapted(family, dir.path())?;
        let prompts = prompts(&r)?;
        for (k, ids) in prompts.iter().enumerate() {
            let want = &r[&format!("lora_logits.{k}")];
            for pass in [Pass::Infer, Pass::Train] {
                let got = logits(&m, ids, AdapterMode::On, pass)?;
                let d = max_diff(&got, want)?;
                assert!(d < LOGIT_TOL, "{family} prompt {k} {pass:?} with LoRA: {d}");
            }
        }
        // The script's loss: the mean negative log-likelihood of every next token.
        let lp = m.token_logprobs(&prompts, AdapterMode::On, Pass::Train)?;
        let count: usize = prompts.iter().map(|p| p.len() - 1).sum();
        let loss = (lp.sum_all()?.neg()? / count as f64)?;
        let want_loss = r["loss"].flatten_all()?.to_vec1::<f32>()?[0];
        let got_loss = loss.to_scalar::<f32>()?;
        assert!(
            (got_loss - want_loss).abs() < 1e-4,
            "{family}: loss {got_loss}, transformers {want_loss}"
        );
        let grads = loss.backward()?;
        let trainable = m.trainable();
        assert_eq!(trainable.len(), m.config.num_layers * 7 * 2);
        for (name, var) in trainable {
            let got = grads
                .get(var.as_tensor())
                .ok_or_else(|| anyhow::anyhow!("{family}: no gradient for {name}"))?;
            assert_peft_gradient(family, &name, got, &r)?;
        }
    }
    Ok(())
}

/// The renderer each template of templates.json is checked against. ChatML's default system
/// prompt is what `ChatTemplate::from_jinja` reads out of that model's own template.
fn renderer(family: &str, thinking: Option<bool>) -> ChatTemplate {
    let chatml = |s: &str| ChatTemplate::ChatMl {
        default_system: Some(s.to_string()),
    };
    match family {
        "chatml" => chatml("You are a helpful assistant."),
        "qwen2.5" => chatml("You are Qwen, created by Alibaba Cloud. You are a helpful assistant."),
        // The template thinks unless told not to.
        "qwen3" => ChatTemplate::Qwen3 {
            thinking: thinking.unwrap_or(true),
        },
        "llama3" => ChatTemplate::Llama3,
        "llama3.1" => ChatTemplate::Llama31,
        "gemma3" => ChatTemplate::Gemma,
        "mistral" => ChatTemplate::Mistral,
        other => panic!("templates.json names a family without a renderer: {other}"),
    }
}

#[derive(serde::Deserialize)]
struct RenderedCase {
    family: String,
    template: String,
    conversation: Vec<ChatMessage>,
    add_generation_prompt: bool,
    enable_thinking: Option<bool>,
    rendered: String,
}

#[test]
fn every_chat_template_renders_as_the_models_own_jinja_does() -> Result<()> {
    let path = root().join("tests/data/model-fixtures/templates.json");
    let cases: Vec<RenderedCase> = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let mut families = std::collections::BTreeSet::new();
    for c in &cases {
        let t = renderer(&c.family, c.enable_thinking);
        let got = t.render(&c.conversation, c.add_generation_prompt);
        assert_eq!(
            got, c.rendered,
            "{} ({}) for {:?}, generation prompt {}",
            c.family, c.template, c.conversation, c.add_generation_prompt
        );
        // What export writes is recognised as the same family again (Qwen3's with thinking
        // off, as the project runs it).
        let back = match t {
            ChatTemplate::Qwen3 { .. } => ChatTemplate::Qwen3 { thinking: false },
            ref same => same.clone(),
        };
        assert_eq!(ChatTemplate::from_jinja(&t.to_jinja()), Some(back));
        families.insert(c.family.as_str());
    }
    assert_eq!(families.len(), 7, "{families:?}");
    Ok(())
}

#[test]
fn every_family_exports_with_the_adapters_merged_and_loads_back_the_same() -> Result<()> {
    let dir = temp_dir();
    for family in FAMILIES {
        let (r, m) = adapted(family, dir.path())?;
        let out = match std::env::var_os(KEEP_EXPORTS) {
            Some(keep) => PathBuf::from(keep).join(family),
            None => dir.path().join(format!("{family}-export")),
        };
        m.export_merged(&out)?;
        let back = load_model(&out, &Device::Cpu, &LoadOptions::default())?;
        assert_eq!(back.config.arch, m.config.arch, "{family}");
        assert_eq!(
            back.config.sliding_layers, m.config.sliding_layers,
            "{family}"
        );
        assert_eq!(back.config.gemma, m.config.gemma, "{family}");
        assert_eq!(back.template, m.template, "{family}");
        for (k, ids) in prompts(&r)?.iter().enumerate() {
            let got = logits(&back, ids, AdapterMode::Off, Pass::Infer)?;
            let d = max_diff(&got, &r[&format!("lora_logits.{k}")])?;
            assert!(d < LOGIT_TOL, "{family} prompt {k} after export: {d}");
        }
    }
    Ok(())
}

#[test]
fn every_family_generates_in_a_left_padded_batch_as_one_at_a_time() -> Result<()> {
    let dir = temp_dir();
    let params = SamplingParams {
        greedy: true,
        max_new_tokens: 6,
        ..SamplingParams::default()
    };
    for family in FAMILIES {
        let r = reference(family)?;
        let mut m = load(family, dir.path(), false)?;
        m.stop_tokens.clear();
        // Lengths 13, 9 and 5: the short rows are padded on the left past the sliding windows.
        let prompts = prompts(&r)?;
        let batched = m.generate(&prompts, &[0, 0, 0], &params)?;
        for (p, b) in prompts.iter().zip(&batched) {
            let single = m
                .generate(std::slice::from_ref(p), &[0], &params)?
                .remove(0);
            assert_eq!(b.tokens, single.tokens, "{family}: prompt of {}", p.len());
        }
    }
    Ok(())
}

/// The mean negative log-likelihood of `prompts` and its gradients, with activation checkpointing
/// per layer or without.
fn loss_and_grads(
    m: &ChatModel,
    prompts: &[Vec<u32>],
    checkpoint: bool,
) -> Result<(f32, candle_core::backprop::GradStore)> {
    let count: usize = prompts.iter().map(|p| p.len() - 1).sum();
    let width = prompts.iter().map(Vec::len).max().unwrap_or(1) - 1;
    let scored = Tensor::ones((prompts.len(), width), DType::F32, &Device::Cpu)?;
    let mean = |lp: &Tensor| -> Result<Tensor> { Ok((lp.sum_all()?.neg()? / count as f64)?) };
    if checkpoint {
        let (lp, ck) = m.scored_logprobs_checkpointed(prompts, AdapterMode::On, 1.0, &scored)?;
        let loss = mean(&lp)?;
        Ok((loss.to_scalar::<f32>()?, ck.backward(&loss)?))
    } else {
        let lp = m.scored_logprobs(prompts, AdapterMode::On, Pass::Train, 1.0, &scored)?;
        let loss = mean(&lp)?;
        Ok((loss.to_scalar::<f32>()?, loss.backward()?))
    }
}

#[test]
fn checkpointed_gradients_equal_the_plain_ones_and_peft_for_every_family() -> Result<()> {
    let dir = temp_dir();
    for family in FAMILIES {
        let (r, m) = adapted(family, dir.path())?;
        let prompts = prompts(&r)?;
        let (plain_loss, plain) = loss_and_grads(&m, &prompts, false)?;
        let (loss, grads) = loss_and_grads(&m, &prompts, true)?;
        assert_eq!(loss, plain_loss, "{family}");
        for (name, var) in m.trainable() {
            let got = grads
                .get(var.as_tensor())
                .ok_or_else(|| anyhow::anyhow!("{family}: no checkpointed gradient for {name}"))?;
            let same = plain.get(var.as_tensor()).expect("a plain gradient");
            let d = max_diff(got, same)?;
            assert!(
                d <= 1e-6,
                "{family} {name}: checkpointed and plain differ by {d}"
            );
            assert_peft_gradient(family, &name, got, &r)?;
        }
    }
    Ok(())
}

#[test]
fn checkpointing_recomputes_the_same_lora_dropout_masks() -> Result<()> {
    let dir = temp_dir();
    let folder = family_folder("gemma3", dir.path())?;
    let opts = LoadOptions {
        lora: Some(LoraConfig {
            rank: 4,
            alpha: 8.0,
            dropout: 0.3,
            ..LoraConfig::default()
        }),
        ..LoadOptions::default()
    };
    let m = load_model(&folder, &Device::Cpu, &opts)?;
    let r = reference("gemma3")?;
    set_adapters(&m, &r)?;
    let prompts = prompts(&r)?;
    let reseed = || -> Result<()> {
        for b in m.model.blocks() {
            for (i, (_, p)) in b.projections().iter().enumerate() {
                p.set_dropout_seed(i as u64 + 7)?;
            }
        }
        Ok(())
    };
    reseed()?;
    let (plain_loss, plain) = loss_and_grads(&m, &prompts, false)?;
    reseed()?;
    let (loss, grads) = loss_and_grads(&m, &prompts, true)?;
    assert_eq!(loss, plain_loss);
    reseed()?;
    let (undropped, _) = loss_and_grads(&m, &prompts, false)?;
    for (name, var) in m.trainable() {
        let d = max_diff(
            grads.get(var.as_tensor()).expect("a gradient"),
            plain.get(var.as_tensor()).expect("a gradient"),
        )?;
        assert!(d <= 1e-6, "{name}: {d}");
    }
    // The masks did drop something: the same seeds give the same loss, dropout at all another.
    assert_eq!(undropped, plain_loss);
    assert!((plain_loss - r["loss"].flatten_all()?.to_vec1::<f32>()?[0]).abs() > 1e-3);
    Ok(())
}

#[test]
fn sharded_and_bf16_folders_of_the_new_families_load_like_the_single_f32_file() -> Result<()> {
    let dir = temp_dir();
    for family in ["qwen3", "mistral", "gemma3"] {
        let r = reference(family)?;
        let folder = family_folder(family, dir.path())?;
        // Two shards and the index transformers writes for them.
        let single = folder.join("model.safetensors");
        let tensors = candle_core::safetensors::load(&single, &Device::Cpu)?;
        std::fs::remove_file(&single)?;
        write_shards(&folder, tensors)?;
        let sharded = load_model(&folder, &Device::Cpu, &LoadOptions::default())?;
        let ids = &prompts(&r)?[0];
        let want = &r["logits.0"];
        let d = max_diff(&logits(&sharded, ids, AdapterMode::Off, Pass::Infer)?, want)?;
        assert!(d < LOGIT_TOL, "{family} sharded: {d}");
        // bf16 weights: within bf16's rounding of the f32 logits (a few percent of the largest
        // logit).
        let opts = LoadOptions {
            dtype: DType::BF16,
            ..LoadOptions::default()
        };
        let bf16 = load_model(&folder, &Device::Cpu, &opts)?;
        let got = logits(&bf16, ids, AdapterMode::Off, Pass::Infer)?.to_dtype(DType::F32)?;
        let scale = want
            .abs()?
            .flatten_all()?
            .max(D::Minus1)?
            .to_scalar::<f32>()?;
        let d = max_diff(&got, want)?;
        assert!(
            d < 0.05 * scale,
            "{family} bf16: {d} (largest logit {scale})"
        );
    }
    Ok(())
}
