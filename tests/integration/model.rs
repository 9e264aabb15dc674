//! Tests of the model layer: loading tiny random Llama/Qwen2 models in HF and GGUF
//! form, generation with the KV cache and in batches, the training forward with LoRA, adapters,
//! export, bad inputs, and (when it is on disk) the real SmolLM2 GGUF against references.

use crate::model_fixtures as fixtures;
#[path = "model_bf16.rs"]
mod bf16;
#[path = "model_families.rs"]
pub mod families;
#[path = "model_formats.rs"]
mod formats;
#[path = "model_real.rs"]
mod real;

use anyhow::Result;
use candle_core::{Device, Tensor, D};
use empathy_gym::model::{
    load_model, AdapterMode, ChatMessage, ChatModel, LoadOptions, LoraConfig, Pass, Role,
    SamplingParams,
};
use empathy_gym::Error;
use fixtures::{write_gguf, write_hf, TinySpec, SYSTEM};
use rand::{Rng, SeedableRng};

fn tiny(spec: TinySpec, opts: &LoadOptions) -> Result<(tempfile::TempDir, ChatModel)> {
    let dir = tempfile::tempdir()?;
    write_hf(dir.path(), &spec)?;
    let m = load_model(dir.path(), &Device::Cpu, opts)?;
    Ok((dir, m))
}

fn lora_opts(rank: usize) -> LoadOptions {
    LoadOptions {
        lora: Some(LoraConfig {
            rank,
            ..LoraConfig::default()
        }),
        seed: 3,
        ..LoadOptions::default()
    }
}

/// B = 0 at initialisation makes every gradient of A zero (dL/dA = scale * B^T dL/dy x^T), so
/// tests that need A's gradient or an adapter effect set B to small random values.
fn randomize_lora_b(m: &ChatModel, seed: u64) -> Result<()> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    for (name, var) in m.trainable() {
        if name.ends_with("lora_b") {
            let n = var.elem_count();
            let v: Vec<f32> = (0..n).map(|_| rng.random_range(-0.2f32..0.2)).collect();
            var.set(&Tensor::from_vec(v, var.shape(), &Device::Cpu)?)?;
        }
    }
    Ok(())
}

fn max_abs_diff(a: &Tensor, b: &Tensor) -> Result<f32> {
    Ok((a - b)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?)
}

fn user(text: &str) -> Vec<ChatMessage> {
    vec![ChatMessage::new(Role::User, text)]
}

fn greedy(n: usize) -> SamplingParams {
    SamplingParams {
        greedy: true,
        max_new_tokens: n,
        ..SamplingParams::default()
    }
}

#[test]
fn tiny_llama_and_qwen2_load_encode_and_generate() -> Result<()> {
    for spec in [TinySpec::llama(), TinySpec::qwen2()] {
        let (_d, m) = tiny(spec, &LoadOptions::default())?;
        assert_eq!(m.config.qkv_bias, spec.qwen2);
        assert_eq!(m.config.tie_word_embeddings, spec.qwen2);
        let ids = m.encode_chat(&user("hello 42"), true)?;
        let text = m.decode(&ids)?;
        assert_eq!(text, format!("<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\nhello 42<|im_end|>\n<|im_start|>assistant\n"));
        assert_eq!(
            m.stop_tokens,
            vec![
                fixtures::id_of("<|im_end|>"),
                fixtures::id_of("<|endoftext|>")
            ]
        );
        let params = SamplingParams {
            temperature: 1.0,
            top_p: 0.9,
            max_new_tokens: 8,
            greedy: false,
        };
        let gens = m.generate(&[ids.clone(), ids[..5].to_vec()], &[1, 2], &params)?;
        for g in &gens {
            assert!(!g.tokens.is_empty() && g.tokens.len() <= 8);
            assert!(g.tokens.iter().all(|&t| (t as usize) < spec.vocab));
            assert_eq!(g.stopped, m.stop_tokens.contains(g.tokens.last().unwrap()));
        }
    }
    Ok(())
}

#[test]
fn kv_cache_greedy_equals_full_recompute() -> Result<()> {
    for spec in [TinySpec::llama(), TinySpec::qwen2()] {
        let (_d, mut m) = tiny(spec, &LoadOptions::default())?;
        m.stop_tokens.clear();
        let prompt = m.encode_chat(&user("the hello"), true)?;
        let cached = m
            .generate(std::slice::from_ref(&prompt), &[0], &greedy(16))?
            .remove(0)
            .tokens;
        let mut ids = prompt.clone();
        for _ in 0..16 {
            let x = Tensor::new(ids.as_slice(), &Device::Cpu)?.unsqueeze(0)?;
            let h = m.model.forward(&x, None, AdapterMode::On, Pass::Infer)?;
            let logits = m
                .model
                .logits(&h.narrow(1, ids.len() - 1, 1)?, Pass::Infer)?
                .flatten_all()?;
            ids.push(logits.argmax(D::Minus1)?.to_scalar::<u32>()?);
        }
        assert_eq!(cached, ids[prompt.len()..].to_vec(), "qwen2={}", spec.qwen2);
    }
    Ok(())
}

#[test]
fn batched_generation_equals_one_at_a_time() -> Result<()> {
    let (_d, mut m) = tiny(TinySpec::llama(), &LoadOptions::default())?;
    m.stop_tokens.clear();
    let a = m.encode_chat(&user("hello"), true)?;
    let b = m.encode_chat(&user("the 12 tell hell, a longer message"), true)?;
    let c = a[..7].to_vec();
    // Duplicated prompts (a twice) share one prefill; different lengths exercise left padding.
    let prompts = vec![a.clone(), b, a, c];
    let singles: Vec<Vec<u32>> = prompts
        .iter()
        .map(|p| {
            Ok(m.generate(std::slice::from_ref(p), &[0], &greedy(12))?
                .remove(0)
                .tokens)
        })
        .collect::<Result<_>>()?;
    // A stop token taken from the first sequence's output makes it leave the batch early.
    m.stop_tokens = vec![singles[0][2]];
    let singles: Vec<_> = prompts
        .iter()
        .map(|p| {
            Ok(m.generate(std::slice::from_ref(p), &[0], &greedy(12))?
                .remove(0))
        })
        .collect::<Result<Vec<_>>>()?;
    assert!(singles[0].stopped && singles[0].tokens.len() <= 3);
    let seeds = vec![0; prompts.len()];
    let batched = m.generate(&prompts, &seeds, &greedy(12))?;
    assert_eq!(batched, singles);
    // Sampling: sequence i's draws depend on its own seed only, not on the batch around it.
    m.stop_tokens.clear();
    let params = SamplingParams {
        temperature: 1.0,
        top_p: 0.95,
        max_new_tokens: 10,
        greedy: false,
    };
    let seeds = [11, 12, 13, 14];
    let batched = m.generate(&prompts, &seeds, &params)?;
    for (i, p) in prompts.iter().enumerate() {
        assert_eq!(
            batched[i],
            m.generate(std::slice::from_ref(p), &[seeds[i]], &params)?
                .remove(0),
            "sequence {i}"
        );
    }
    assert_ne!(
        batched[0].tokens, batched[2].tokens,
        "same prompt, different seeds"
    );
    Ok(())
}

#[test]
fn continued_dialogues_prefill_only_what_is_new_and_sample_as_a_fresh_prefill_does() -> Result<()> {
    let (_d, mut m) = tiny(TinySpec::llama(), &LoadOptions::default())?;
    m.stop_tokens.clear();
    let a = m.encode_chat(&user("hello"), true)?;
    let b = m.encode_chat(&user("the 12 tell hell, a longer message"), true)?;
    // b stops at its first token (its continuation is then the prefill's cache); a runs to the cap.
    let b_first = m.generate(std::slice::from_ref(&b), &[0], &greedy(1))?[0].tokens[0];
    m.stop_tokens = vec![b_first];
    let prompts = vec![a.clone(), b.clone()];
    let mut conts = vec![None, None];
    let first = m.generate_continuing(&prompts, &[0, 0], &greedy(10), &mut conts)?;
    assert_eq!(first, m.generate(&prompts, &[0, 0], &greedy(10))?);
    assert!(first[1].stopped && first[1].tokens.len() == 1);
    for (i, (g, c)) in first.iter().zip(&conts).enumerate() {
        // Cached: the prompt and every sampled token but the last (never fed back).
        let want = [&prompts[i][..], &g.tokens[..g.tokens.len() - 1]].concat();
        assert_eq!(
            c.as_ref().map(|c| c.tokens()),
            Some(&want[..]),
            "dialogue {i}"
        );
    }
    // The next turn: what the dialogue said so far, then the user's answer. The third prompt does
    // not extend its continuation (a new dialogue) and is prefilled whole.
    let tail =
        m.encode("<|im_end|>\n<|im_start|>user\nthe hello<|im_end|>\n<|im_start|>assistant\n")?;
    let second: Vec<Vec<u32>> = (0..2)
        .map(|i| [&prompts[i][..], &first[i].tokens[..], &tail[..]].concat())
        .chain([b[..9].to_vec()])
        .collect();
    conts.push(None);
    m.stop_tokens.clear();
    let seeds = [5, 6, 7];
    let fresh = m.generate(&second, &seeds, &greedy(10))?;
    let continued = m.generate_continuing(&second, &seeds, &greedy(10), &mut conts)?;
    assert_eq!(continued, fresh);
    // A prompt that leaves the cached tokens part way (a re-rendered reply tokenized otherwise)
    // or repeats them exactly reuses the shared part.
    let mut conts3 = vec![None, None];
    let g3 = m.generate_continuing(&prompts, &[0, 0], &greedy(10), &mut conts3)?;
    let cached_a = conts3[0]
        .as_ref()
        .map(|c| c.tokens().to_vec())
        .unwrap_or_default();
    let third = vec![
        [&prompts[0][..], &g3[0].tokens[..2], &tail[..]].concat(),
        conts3[1]
            .as_ref()
            .map(|c| c.tokens().to_vec())
            .unwrap_or_default(),
    ];
    assert!(cached_a.len() > prompts[0].len() + 3 && third[1].len() > prompts[1].len());
    assert_eq!(
        m.generate_continuing(&third, &seeds[..2], &greedy(10), &mut conts3)?,
        m.generate(&third, &seeds[..2], &greedy(10))?
    );
    // Sampling too: the same draws.
    let params = SamplingParams {
        temperature: 0.7,
        top_p: 0.9,
        max_new_tokens: 10,
        greedy: false,
    };
    let mut conts2 = vec![None, None];
    m.generate_continuing(&prompts, &[0, 0], &greedy(10), &mut conts2)?;
    let second2 = &second[..2];
    assert_eq!(
        m.generate_continuing(second2, &seeds[..2], &params, &mut conts2)?,
        m.generate(second2, &seeds[..2], &params)?
    );
    Ok(())
}

#[test]
fn prefill_after_a_cache_gives_a_whole_prefills_logits() -> Result<()> {
    use empathy_engine::generate::prefill_from;
    for spec in [TinySpec::llama(), TinySpec::qwen2()] {
        let (_d, m) = tiny(spec, &lora_opts(4))?;
        randomize_lora_b(&m, 1)?;
        let p = m.encode_chat(&user("the 12 tell hell, a longer message"), true)?;
        let whole = m.model.new_cache(1, p.len())?;
        let (_, want) = prefill_from(&m.model, whole, &p, AdapterMode::On)?;
        let k = p.len() / 2;
        let mut cache = m.model.new_cache(1, k)?;
        let x = Tensor::new(&p[..k], &Device::Cpu)?.unsqueeze(0)?;
        m.model
            .forward(&x, Some(&mut cache), AdapterMode::On, Pass::Infer)?;
        let (c, got) = prefill_from(&m.model, cache, &p[k..], AdapterMode::On)?;
        assert_eq!(c.len(), p.len());
        let diff = want
            .iter()
            .zip(&got)
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(diff < 1e-4, "qwen2={}: max |logit diff| {diff}", spec.qwen2);
    }
    Ok(())
}

#[test]
fn every_lora_tensor_gets_a_gradient_and_no_base_weight_does() -> Result<()> {
    for spec in [TinySpec::llama(), TinySpec::qwen2()] {
        let (_d, m) = tiny(spec, &lora_opts(4))?;
        randomize_lora_b(&m, 5)?;
        let batch = vec![
            m.encode_chat(&user("hello there"), true)?,
            m.encode_chat(&user("12"), false)?,
        ];
        let lp = m.token_logprobs(&batch, AdapterMode::On, Pass::Train)?;
        let infer = m.token_logprobs(&batch, AdapterMode::On, Pass::Infer)?;
        assert!(
            max_abs_diff(&lp, &infer)? < 1e-4,
            "train and infer numerics agree"
        );
        let grads = lp.sum_all()?.backward()?;
        let vars = m.trainable();
        assert_eq!(vars.len(), fixtures::LAYERS * 7 * 2);
        for (name, var) in &vars {
            let g = grads
                .get(var.as_tensor())
                .unwrap_or_else(|| panic!("{name} has no gradient"));
            let norm = g.abs()?.sum_all()?.to_scalar::<f32>()?;
            assert!(norm > 0.0 && norm.is_finite(), "{name}: |grad| = {norm}");
        }
        let mut base = vec![m.model.embedding().clone(), m.model.final_norm().clone()];
        for b in m.model.blocks() {
            base.push(b.attn_norm.clone());
            base.push(b.mlp_norm.clone());
            for (_, p) in b.projections() {
                base.push(p.weight().clone());
                base.extend(p.bias().cloned());
            }
        }
        base.extend(m.model.lm_head().cloned());
        assert!(
            base.iter().all(|t| grads.get(t).is_none()),
            "a frozen base tensor got a gradient"
        );
    }
    Ok(())
}

/// The trainer scores sampled tokens under softmax(logits / T), the distribution a sampler at
/// temperature T draws from: for every next token v after one prefix, log p_T(v) - log p_T(w) =
/// (log p_1(v) - log p_1(w)) / T (the normalizer cancels), and the p_T sum to 1 over the vocabulary.
#[test]
fn tempered_logprobs_are_the_samplers_distribution() -> Result<()> {
    let (_d, m) = tiny(TinySpec::llama(), &lora_opts(4))?;
    randomize_lora_b(&m, 3)?;
    let prefix = m.encode_chat(&user("hello there"), true)?;
    let vocab = fixtures::TinySpec::llama().vocab as u32;
    let batch: Vec<Vec<u32>> = (0..vocab)
        .map(|v| prefix.iter().copied().chain([v]).collect())
        .collect();
    let last = |t: Tensor| -> Result<Vec<f32>> {
        let cols = t.dim(1)?;
        Ok(t.narrow(1, cols - 1, 1)?.flatten_all()?.to_vec1::<f32>()?)
    };
    let p1 = last(m.token_logprobs(&batch, AdapterMode::On, Pass::Infer)?)?;
    assert_eq!(
        p1,
        last(m.tempered_logprobs(&batch, AdapterMode::On, Pass::Infer, 1.0)?)?
    );
    for t in [0.5f32, 0.7, 2.0] {
        let pt = last(m.tempered_logprobs(&batch, AdapterMode::On, Pass::Train, t as f64)?)?;
        let total: f32 = pt.iter().map(|x| x.exp()).sum();
        assert!((total - 1.0).abs() < 1e-4, "T = {t}: sums to {total}");
        for v in 1..p1.len() {
            let want = (p1[v] - p1[0]) / t;
            assert!((pt[v] - pt[0] - want).abs() < 1e-3, "T = {t}, token {v}");
        }
    }
    Ok(())
}

/// The trainer scores only its policy tokens: the head then runs at those positions alone. Same
/// log-probs there (within rounding: the head's matmul sees fewer rows), exact zeros elsewhere,
/// and the same gradients for a loss over the scored positions.
#[test]
fn scored_logprobs_equal_the_full_ones_where_scored() -> Result<()> {
    let (_d, m) = tiny(TinySpec::llama(), &lora_opts(4))?;
    randomize_lora_b(&m, 4)?;
    let batch = vec![
        m.encode_chat(&user("hello there, how are you"), true)?,
        m.encode_chat(&user("12"), false)?,
    ];
    let width = batch.iter().map(Vec::len).max().unwrap() - 1;
    // Score every third position of row 0 and the last two real targets of row 1.
    let short = batch[1].len() - 1;
    let keep: Vec<f32> = (0..2 * width)
        .map(|i| {
            let (r, c) = (i / width, i % width);
            let on = if r == 0 {
                c % 3 == 1
            } else {
                c + 2 >= short && c < short
            };
            if on {
                1.0
            } else {
                0.0
            }
        })
        .collect();
    let scored = Tensor::from_vec(keep.clone(), (2, width), &m.device)?;
    for t in [1.0, 0.7] {
        let full = m.tempered_logprobs(&batch, AdapterMode::On, Pass::Train, t)?;
        let part = m.scored_logprobs(&batch, AdapterMode::On, Pass::Train, t, &scored)?;
        let want = (&full * &scored)?;
        assert!(max_abs_diff(&part, &want)? < 1e-5, "T = {t}");
        let got = part.flatten_all()?.to_vec1::<f32>()?;
        for (i, k) in keep.iter().enumerate() {
            assert_eq!(
                *k == 0.0,
                got[i] == 0.0,
                "position {i}: zero exactly where not scored"
            );
        }
        let g_full = want.sum_all()?.backward()?;
        let g_part = part.sum_all()?.backward()?;
        for (name, var) in m.trainable() {
            let (a, b) = (
                g_full.get(var.as_tensor()).expect("grad"),
                g_part.get(var.as_tensor()).expect("grad"),
            );
            assert!(max_abs_diff(a, b)? < 1e-5, "T = {t}, {name}");
        }
    }
    let wrong = Tensor::zeros((2, width + 1), candle_core::DType::F32, &m.device)?;
    let e = m
        .scored_logprobs(&batch, AdapterMode::On, Pass::Infer, 1.0, &wrong)
        .unwrap_err();
    assert!(e.to_string().contains("scored mask"), "{e}");
    Ok(())
}

#[test]
fn logprob_gradient_matches_finite_difference() -> Result<()> {
    let (_d, m) = tiny(TinySpec::qwen2(), &lora_opts(4))?;
    randomize_lora_b(&m, 9)?;
    let batch = vec![m.encode_chat(&user("hello 7"), true)?];
    let f = |pass| -> Result<f64> {
        Ok(m.token_logprobs(&batch, AdapterMode::On, pass)?
            .sum_all()?
            .to_scalar::<f32>()? as f64)
    };
    let lp = m.token_logprobs(&batch, AdapterMode::On, Pass::Train)?;
    let grads = lp.sum_all()?.backward()?;
    for target in [
        "layers.0.attn.q_proj.lora_a",
        "layers.1.mlp.down_proj.lora_b",
    ] {
        let (_, var) = m
            .trainable()
            .into_iter()
            .find(|(n, _)| n == target)
            .expect("var");
        let g = grads
            .get(var.as_tensor())
            .expect("grad")
            .flatten_all()?
            .to_vec1::<f32>()?;
        // Probe the element with the largest gradient so the difference stands above f32 noise.
        let k = (0..g.len())
            .max_by(|&a, &b| g[a].abs().total_cmp(&g[b].abs()))
            .unwrap_or(0);
        let orig = var.as_tensor().flatten_all()?.to_vec1::<f32>()?;
        let h = 1e-2f32;
        let at = |delta: f32| -> Result<f64> {
            let mut v = orig.clone();
            v[k] += delta;
            var.set(&Tensor::from_vec(v, var.shape(), &Device::Cpu)?)?;
            f(Pass::Infer)
        };
        let fd = (at(h)? - at(-h)?) / (2.0 * h as f64);
        at(0.0)?;
        let rel = (fd - g[k] as f64).abs() / (g[k].abs() as f64).max(1e-3);
        assert!(
            rel < 0.02,
            "{target}[{k}]: autograd {} vs finite difference {fd}",
            g[k]
        );
    }
    Ok(())
}

#[test]
fn adapters_off_give_base_logits_exactly_and_save_load_round_trips() -> Result<()> {
    let (dir, base) = tiny(TinySpec::llama(), &LoadOptions::default())?;
    let m = load_model(dir.path(), &Device::Cpu, &lora_opts(4))?;
    randomize_lora_b(&m, 1)?;
    let batch = vec![
        m.encode_chat(&user("hello"), true)?,
        m.encode_chat(&user("the tell"), true)?,
    ];
    for pass in [Pass::Infer, Pass::Train] {
        let off = m.token_logprobs(&batch, AdapterMode::Off, pass)?;
        let plain = base.token_logprobs(&batch, AdapterMode::On, pass)?;
        assert_eq!(max_abs_diff(&off, &plain)?, 0.0, "{pass:?}");
    }
    let want = base.token_logprobs(&batch, AdapterMode::On, Pass::Infer)?;
    let on = m.token_logprobs(&batch, AdapterMode::On, Pass::Infer)?;
    assert!(
        max_abs_diff(&on, &want)? > 1e-3,
        "adapters change the policy"
    );
    // Right padding: the shorter row is zero past its end.
    let short = batch[0].len();
    let pad = on
        .narrow(0, 0, 1)?
        .narrow(1, short - 1, on.dim(1)? - short + 1)?;
    assert_eq!(pad.abs()?.sum_all()?.to_scalar::<f32>()?, 0.0);
    let path = dir.path().join("adapters.safetensors");
    m.save_adapters(&path)?;
    let mut fresh = load_model(dir.path(), &Device::Cpu, &lora_opts(4))?;
    fresh.load_adapters(&path)?;
    assert_eq!(
        max_abs_diff(
            &fresh.token_logprobs(&batch, AdapterMode::On, Pass::Infer)?,
            &on
        )?,
        0.0
    );
    let mut wrong_rank = load_model(dir.path(), &Device::Cpu, &lora_opts(8))?;
    let err = wrong_rank.load_adapters(&path).unwrap_err().to_string();
    assert!(
        err.contains("adapters.safetensors") && err.contains("shape"),
        "{err}"
    );
    Ok(())
}

/// A tiny Qwen2 with random rank-4 adapters, one prompt, and its inference log-probs through them.
fn tiny_with_adapters() -> Result<(tempfile::TempDir, ChatModel, Vec<Vec<u32>>, Tensor)> {
    let (dir, _) = tiny(TinySpec::qwen2(), &LoadOptions::default())?;
    let m = load_model(dir.path(), &Device::Cpu, &lora_opts(4))?;
    randomize_lora_b(&m, 6)?;
    let batch = vec![m.encode_chat(&user("hello there"), true)?];
    let adapted = m.token_logprobs(&batch, AdapterMode::On, Pass::Infer)?;
    Ok((dir, m, batch, adapted))
}

#[test]
fn generation_with_merged_adapters_scores_as_the_adapters_do_until_the_guard_drops() -> Result<()> {
    // What generate() does on a GPU (Llama::merge_adapters), run on the CPU.
    let (_dir, m, batch, adapted) = tiny_with_adapters()?;
    let base = m.token_logprobs(&batch, AdapterMode::Off, Pass::Infer)?;
    {
        let _merged = m.model.merge_adapters()?;
        randomize_lora_b(&m, 7)?; // stale from here: the merged copies keep the old B
        let merged = m.token_logprobs(&batch, AdapterMode::On, Pass::Infer)?;
        assert!(max_abs_diff(&merged, &adapted)? < 1e-5);
        let off = m.token_logprobs(&batch, AdapterMode::Off, Pass::Infer)?;
        assert_eq!(max_abs_diff(&off, &base)?, 0.0);
        // A guard inside it (a generate call under the trainer's guard over a rollout) reuses
        // the copies and leaves them when it drops: still the old B.
        drop(m.model.merge_adapters()?);
        let nested = m.token_logprobs(&batch, AdapterMode::On, Pass::Infer)?;
        assert_eq!(max_abs_diff(&nested, &merged)?, 0.0);
    }
    let after = m.token_logprobs(&batch, AdapterMode::On, Pass::Infer)?;
    let train = m.token_logprobs(&batch, AdapterMode::On, Pass::Train)?;
    assert!(
        max_abs_diff(&after, &adapted)? > 1e-3,
        "the guard dropped the merged copies"
    );
    assert!(max_abs_diff(&after, &train)? < 1e-4);
    Ok(())
}

#[test]
fn a_served_models_adapters_stay_merged_through_every_call() -> Result<()> {
    // serve-model merges a checkpoint's adapters once (`BatchModel::prepare_to_serve`); each
    // generate call's own guard then reuses the copies and leaves them.
    use empathy_gym::serve::generator::BatchModel;
    let (_dir, m, batch, adapted) = tiny_with_adapters()?;
    m.prepare_to_serve()?;
    randomize_lora_b(&m, 7)?; // stale from here: the merged copies keep the old B
    drop(m.model.merge_adapters()?);
    let served = m.token_logprobs(&batch, AdapterMode::On, Pass::Infer)?;
    assert!(max_abs_diff(&served, &adapted)? < 1e-5);
    Ok(())
}

#[test]
fn export_merged_reloads_with_equal_logits() -> Result<()> {
    for spec in [TinySpec::llama(), TinySpec::qwen2()] {
        let (dir, m) = tiny(spec, &lora_opts(4))?;
        randomize_lora_b(&m, 2)?;
        let out = dir.path().join("export");
        m.export_merged(&out)?;
        let back = load_model(&out, &Device::Cpu, &LoadOptions::default())?;
        assert_eq!(back.template, m.template);
        let batch = vec![m.encode_chat(&user("hello 3"), true)?];
        assert_eq!(back.encode_chat(&user("hello 3"), true)?, batch[0]);
        let a = m.token_logprobs(&batch, AdapterMode::On, Pass::Infer)?;
        let b = back.token_logprobs(&batch, AdapterMode::On, Pass::Infer)?;
        assert!(max_abs_diff(&a, &b)? < 1e-5, "qwen2={}", spec.qwen2);
    }
    Ok(())
}

#[test]
fn gguf_weights_with_interleaved_rope_match_hf_and_export_unpermutes() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let spec = TinySpec::llama();
    write_hf(&dir.path().join("hf"), &spec)?;
    let gguf = dir.path().join("tiny.gguf");
    write_gguf(&gguf, &spec)?;
    let hf = load_model(
        &dir.path().join("hf"),
        &Device::Cpu,
        &LoadOptions::default(),
    )?;
    let gg = load_model(&gguf, &Device::Cpu, &lora_opts(4))?;
    assert_eq!(
        gg.config.rope_layout,
        empathy_engine::RopeLayout::Interleaved
    );
    let text = "hello 2024, the\ttell  hell";
    assert_eq!(gg.encode(text)?, hf.encode(text)?);
    assert_eq!(gg.template, hf.template);
    let batch = vec![hf.encode_chat(&user(text), true)?];
    let want = hf.token_logprobs(&batch, AdapterMode::On, Pass::Infer)?;
    for pass in [Pass::Infer, Pass::Train] {
        assert!(max_abs_diff(&gg.token_logprobs(&batch, AdapterMode::On, pass)?, &want)? < 1e-5);
    }
    randomize_lora_b(&gg, 4)?;
    let out = dir.path().join("export");
    gg.export_merged(&out)?;
    let back = load_model(&out, &Device::Cpu, &LoadOptions::default())?;
    assert_eq!(back.config.rope_layout, empathy_engine::RopeLayout::Half);
    let a = gg.token_logprobs(&batch, AdapterMode::On, Pass::Infer)?;
    assert!(
        max_abs_diff(
            &a,
            &back.token_logprobs(&batch, AdapterMode::On, Pass::Infer)?
        )? < 1e-5
    );
    Ok(())
}

fn expect_model_err(path: &std::path::Path, needle: &str) -> Result<String> {
    let err = match load_model(path, &Device::Cpu, &LoadOptions::default()) {
        Ok(_) => anyhow::bail!("loading {} should fail", path.display()),
        Err(e) => e,
    };
    assert!(err.is_user_error(), "{err}");
    let msg = err.to_string();
    assert!(msg.contains(needle), "{msg} should name {needle}");
    Ok(msg)
}

#[test]
fn bad_inputs_give_clear_errors() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let missing = dir.path().join("nowhere/SmolLM2.gguf");
    let msg = expect_model_err(&missing, "nowhere/SmolLM2.gguf")?;
    assert!(msg.contains("scripts/fetch-models.sh"), "{msg}");

    let arch = dir.path().join("arch");
    write_hf(&arch, &TinySpec::llama())?;
    let mut cfg = fixtures::config_json(&TinySpec::llama());
    cfg["architectures"] = serde_json::json!(["Qwen3MoeForCausalLM"]);
    std::fs::write(arch.join("config.json"), cfg.to_string())?;
    let msg = expect_model_err(&arch, "config.json")?;
    assert!(
        msg.contains("Qwen3MoeForCausalLM")
            && msg.contains("mixture-of-experts")
            && matches!(
                load_model(&arch, &Device::Cpu, &LoadOptions::default()),
                Err(Error::Input { .. })
            ),
        "{msg}"
    );

    let corrupt = dir.path().join("corrupt");
    write_hf(&corrupt, &TinySpec::llama())?;
    std::fs::write(
        corrupt.join("model.safetensors"),
        b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all",
    )?;
    expect_model_err(&corrupt, "model.safetensors")?;

    let small = dir.path().join("small-vocab");
    let spec = TinySpec {
        vocab: 200,
        ..TinySpec::llama()
    };
    write_hf(&small, &spec)?;
    let msg = expect_model_err(&small, "tokenizer.json")?;
    assert!(msg.contains("200 rows"), "{msg}");

    let not_gguf = dir.path().join("fake.gguf");
    std::fs::write(&not_gguf, b"definitely not gguf")?;
    expect_model_err(&not_gguf, "fake.gguf")?;
    Ok(())
}
