//! Throughput of SmolLM2-135M on the CPU: batched decoding (batch 1, 16, 32) and one LoRA
//! training step (forward + backward + AdamW over rank-16 adapters, one 512-token sequence),
//! with the peak resident memory of each case (VmHWM, reset between cases).
//!
//! Run: `cargo bench --bench model` (needs models/ from scripts/fetch-models.sh).

use std::time::{Duration, Instant};

use candle_core::Device;
use candle_nn::{AdamW, Optimizer, ParamsAdamW};
use criterion::{Criterion, SamplingMode, Throughput};
use empathy_gym::model::{
    default_policy_path, load_model, AdapterMode, ChatMessage, LoadOptions, LoraConfig, Pass, Role,
    SamplingParams,
};

/// New tokens per sequence in the decode cases.
const DECODE_TOKENS: usize = 32;
/// Training sequence length.
const TRAIN_LEN: usize = 512;

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Resets VmHWM to the current RSS (Linux: "5" in clear_refs).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

struct Row {
    case: String,
    tokens: usize,
    times: Vec<Duration>,
    peak_mib: f64,
}

impl Row {
    fn median_s(&self) -> f64 {
        let mut t: Vec<f64> = self.times.iter().map(Duration::as_secs_f64).collect();
        t.sort_by(f64::total_cmp);
        t.get(t.len() / 2).copied().unwrap_or(f64::NAN)
    }
}

fn run_case(c: &mut Criterion, name: &str, tokens: usize, mut f: impl FnMut()) -> Row {
    reset_peak();
    let mut times = Vec::new();
    let mut group = c.benchmark_group("smollm2-135m-cpu");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Elements(tokens as u64));
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                f();
            }
            let el = start.elapsed();
            times.push(el / iters as u32);
            el
        })
    });
    group.finish();
    Row {
        case: name.to_string(),
        tokens,
        times,
        peak_mib: peak_rss_mib(),
    }
}

fn main() -> anyhow::Result<()> {
    let path = default_policy_path();
    if !path.is_file() {
        println!(
            "skipped: {} is absent (run scripts/fetch-models.sh)",
            path.display()
        );
        return Ok(());
    }
    let mut c = Criterion::default().configure_from_args();
    let dev = Device::Cpu;
    let mut rows = Vec::new();
    {
        let mut m = load_model(&path, &dev, &LoadOptions::default())?;
        m.stop_tokens.clear(); // every sequence decodes exactly DECODE_TOKENS tokens
        let prompt = m.encode_chat(
            &[ChatMessage::new(
                Role::User,
                "I lost my job today and I feel awful. What should I do?",
            )],
            true,
        )?;
        let params = SamplingParams {
            temperature: 1.0,
            top_p: 0.9,
            max_new_tokens: DECODE_TOKENS,
            greedy: false,
        };
        for batch in [1usize, 16, 32] {
            let prompts = vec![prompt.clone(); batch];
            let seeds: Vec<u64> = (0..batch as u64).collect();
            let name = format!(
                "decode batch {batch} ({}-token prompt, {DECODE_TOKENS} new)",
                prompt.len()
            );
            rows.push(run_case(&mut c, &name, batch * DECODE_TOKENS, || {
                m.generate(&prompts, &seeds, &params).expect("generate");
            }));
        }
    }
    {
        let opts = LoadOptions {
            lora: Some(LoraConfig {
                rank: 16,
                ..LoraConfig::default()
            }),
            ..LoadOptions::default()
        };
        let m = load_model(&path, &dev, &opts)?;
        let text = "I hear how much this hurts. ".repeat(200);
        let mut ids = m.encode(&text)?;
        ids.truncate(TRAIN_LEN);
        let vars: Vec<_> = m.trainable().into_iter().map(|(_, v)| v).collect();
        let mut opt = AdamW::new(
            vars,
            ParamsAdamW {
                lr: 1e-5,
                ..ParamsAdamW::default()
            },
        )?;
        let batch = vec![ids];
        let name = format!("train LoRA r16 fwd+bwd+AdamW, 1x{TRAIN_LEN}");
        rows.push(run_case(&mut c, &name, TRAIN_LEN, || {
            let lp = m
                .token_logprobs(&batch, AdapterMode::On, Pass::Train)
                .expect("forward");
            let loss = lp.mean_all().expect("mean").neg().expect("neg");
            opt.backward_step(&loss).expect("step");
        }));
    }
    c.final_summary();
    println!("\n| case | tokens/iter | median s/iter | tokens/s | peak RSS (MiB) |\n|---|---|---|---|---|");
    for r in &rows {
        let s = r.median_s();
        println!(
            "| {} | {} | {:.3} | {:.1} | {:.0} |",
            r.case,
            r.tokens,
            s,
            r.tokens as f64 / s,
            r.peak_mib
        );
    }
    Ok(())
}
