//! Loading variants of the tiny models: sharded safetensors with an index, and bf16 weights.

use anyhow::Result;
use candle_core::{DType, Device};
use empathy_gym::model::{
    load_model, AdapterMode, ChatMessage, LoadOptions, Pass, Role, SamplingParams,
};

use super::fixtures::{hf_weights, write_hf, write_shards, TinySpec};

#[test]
fn sharded_safetensors_with_index_load_like_a_single_file() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let spec = TinySpec::qwen2();
    let single = dir.path().join("single");
    write_hf(&single, &spec)?;
    let sharded = dir.path().join("sharded");
    write_hf(&sharded, &spec)?;
    std::fs::remove_file(sharded.join("model.safetensors"))?;
    write_shards(&sharded, hf_weights(&spec)?)?;
    let a = load_model(&single, &Device::Cpu, &LoadOptions::default())?;
    let b = load_model(&sharded, &Device::Cpu, &LoadOptions::default())?;
    let batch = vec![a.encode_chat(&[ChatMessage::new(Role::User, "hello")], true)?];
    let la = a.token_logprobs(&batch, AdapterMode::On, Pass::Infer)?;
    let lb = b.token_logprobs(&batch, AdapterMode::On, Pass::Infer)?;
    assert_eq!((la - lb)?.abs()?.sum_all()?.to_scalar::<f32>()?, 0.0);
    Ok(())
}

#[test]
fn bf16_weights_generate_and_stay_close_to_f32() -> Result<()> {
    let dir = tempfile::tempdir()?;
    write_hf(dir.path(), &TinySpec::llama())?;
    let f32m = load_model(dir.path(), &Device::Cpu, &LoadOptions::default())?;
    let bf16 = load_model(
        dir.path(),
        &Device::Cpu,
        &LoadOptions {
            dtype: DType::BF16,
            ..LoadOptions::default()
        },
    )?;
    assert_eq!(bf16.model.dtype(), DType::BF16);
    let prompt = bf16.encode_chat(&[ChatMessage::new(Role::User, "the hello")], true)?;
    let g = bf16.generate(
        &[prompt.clone(), prompt.clone()],
        &[1, 2],
        &SamplingParams {
            max_new_tokens: 6,
            ..SamplingParams::default()
        },
    )?;
    assert!(g.iter().all(|x| !x.tokens.is_empty()));
    let a = f32m.token_logprobs(std::slice::from_ref(&prompt), AdapterMode::On, Pass::Infer)?;
    let b = bf16.token_logprobs(std::slice::from_ref(&prompt), AdapterMode::On, Pass::Infer)?;
    let d = (a - b)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
    assert!(d < 0.25, "bf16 log-probs drift {d}");
    Ok(())
}

/// The error of loading `p`, which must fail.
fn load_error(p: &std::path::Path) -> String {
    load_model(p, &Device::Cpu, &LoadOptions::default())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_else(|| panic!("{} loaded", p.display()))
}

/// Replaces the u32 value of GGUF metadata `key` (written as type 4, u32) in `bytes`.
fn patch_gguf_u32(bytes: &mut [u8], key: &str, value: u32) {
    let at = bytes
        .windows(key.len())
        .position(|w| w == key.as_bytes())
        .expect("the key is in the file")
        + key.len();
    assert_eq!(&bytes[at..at + 4], &4u32.to_le_bytes(), "{key} is a u32");
    bytes[at + 4..at + 8].copy_from_slice(&value.to_le_bytes());
}

#[test]
fn corrupted_sizes_are_errors_naming_the_field_not_aborts() -> Result<()> {
    let dir = tempfile::tempdir()?;
    // An HF config whose layer count would size a terabyte vector.
    let hf = dir.path().join("hf");
    write_hf(&hf, &TinySpec::llama())?;
    let cfg_path = hf.join("config.json");
    let original = std::fs::read_to_string(&cfg_path)?;
    let mut cfg: serde_json::Value = serde_json::from_str(&original)?;
    cfg["num_hidden_layers"] = serde_json::json!(1_000_000_000_000u64);
    std::fs::write(&cfg_path, cfg.to_string())?;
    let e = load_error(&hf);
    assert!(
        e.contains("num_hidden_layers") && e.contains("outside"),
        "{e}"
    );
    // Within the limits, but more parameters than the weights' bytes can hold.
    cfg["num_hidden_layers"] = serde_json::json!(1000);
    cfg["intermediate_size"] = serde_json::json!(200_000);
    std::fs::write(&cfg_path, cfg.to_string())?;
    let e = load_error(&hf);
    assert!(e.contains("cut short or belong to another config"), "{e}");
    std::fs::write(&cfg_path, original)?;
    // A shard index that points outside its folder.
    std::fs::remove_file(hf.join("model.safetensors"))?;
    let index = serde_json::json!({"weight_map": {"model.norm.weight": "../../etc/passwd"}});
    std::fs::write(hf.join("model.safetensors.index.json"), index.to_string())?;
    let e = load_error(&hf);
    assert!(e.contains("not a file name in this folder"), "{e}");

    // GGUF metadata: a block count of two billion, a context of four billion positions.
    let gguf = dir.path().join("tiny.gguf");
    super::fixtures::write_gguf(&gguf, &TinySpec::llama())?;
    let good = std::fs::read(&gguf)?;
    for (key, value, field) in [
        ("llama.block_count", 0x7fff_ffff, "block_count"),
        ("llama.context_length", u32::MAX, "context_length"),
        ("llama.attention.head_count", 0, "inconsistent head counts"),
    ] {
        let mut bytes = good.clone();
        patch_gguf_u32(&mut bytes, key, value);
        std::fs::write(&gguf, &bytes)?;
        let e = load_error(&gguf);
        assert!(e.contains(field), "{key} = {value}: {e}");
    }
    Ok(())
}

#[test]
fn corrupted_tokenizers_and_gguf_alignment_are_errors_not_panics() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let hf = dir.path().join("hf");
    write_hf(&hf, &TinySpec::llama())?;
    let tok_path = hf.join("tokenizer.json");
    let good: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&tok_path)?)?;
    // `tokenizers` panics (an `expect` in its decoder deserializer) on a syntax error inside
    // "decoder", and on a decoder of the wrong shape.
    let text = good.to_string();
    let at = text.find("\"decoder\":").expect("a decoder") + "\"decoder\":".len();
    std::fs::write(&tok_path, format!("{}{{:{}", &text[..at], &text[at..]))?;
    let e = load_error(&hf);
    assert!(
        e.contains("not valid JSON") && e.contains("tokenizer.json"),
        "{e}"
    );
    let mut wrong = good.clone();
    wrong["decoder"] = serde_json::json!({"type": 7});
    std::fs::write(&tok_path, wrong.to_string())?;
    let e = load_error(&hf);
    assert!(e.contains("tokenizer.json"), "{e}");
    // Its BPE builder slices past its buffer for a merge longer than every vocabulary token.
    let mut long = good.clone();
    let vocab = long["model"]["vocab"].as_object().unwrap();
    let longest = vocab.keys().max_by_key(|k| k.len()).unwrap().clone();
    long["model"]["merges"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!(format!("{longest} {longest}")));
    std::fs::write(&tok_path, long.to_string())?;
    let e = load_error(&hf);
    assert!(e.contains("tokenizer.json"), "{e}");

    // A GGUF whose general.alignment is 0 (candle divided by it): the 17-byte key
    // "llama.block_count" renamed to "general.alignment", its value set to 0.
    let gguf = dir.path().join("tiny.gguf");
    super::fixtures::write_gguf(&gguf, &TinySpec::llama())?;
    let mut bytes = std::fs::read(&gguf)?;
    patch_gguf_u32(&mut bytes, "llama.block_count", 0);
    let at = bytes
        .windows(17)
        .position(|w| w == b"llama.block_count")
        .unwrap();
    bytes[at..at + 17].copy_from_slice(b"general.alignment");
    std::fs::write(&gguf, &bytes)?;
    let e = load_error(&gguf);
    assert!(e.contains("general.alignment is 0"), "{e}");

    // A tensor of 2^63 elements, whose size candle computes as 0 in wrapping arithmetic (and then
    // asked for a vector of 2^63 floats when dequantizing it).
    super::fixtures::write_gguf(&gguf, &TinySpec::llama())?;
    let mut bytes = std::fs::read(&gguf)?;
    let name = b"blk.0.attn_norm.weight";
    let at = bytes.windows(name.len()).position(|w| w == name).unwrap() + name.len();
    assert_eq!(&bytes[at..at + 4], &1u32.to_le_bytes(), "one dimension");
    bytes[at + 4..at + 12].copy_from_slice(&(1u64 << 63).to_le_bytes());
    std::fs::write(&gguf, &bytes)?;
    let e = load_error(&gguf);
    assert!(e.contains("does not fit in the file"), "{e}");
    Ok(())
}
