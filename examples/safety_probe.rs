//! A probe, not part of the screen: do SmolLM2-135M-Instruct's hidden states separate unsafe from
//! safe replies better than all-MiniLM-L6-v2's sentence embeddings, and do they when the reply is
//! read alone, after the fluency judge's prefix (so the judge's forward pass could serve both),
//! with the context from MiniLM? Each encoding fits the same small
//! classifier on the same parts of the tuning banks (data/safety/bank*.yaml, four fifths by the
//! FNV-1a hash of the reply, as the head's fit splits) and honest ESConv/EPITOME dev replies, and
//! are read on the fifth kept apart. The never-tuned bank is not read.
//!
//! cargo run --release --example safety_probe -- ESCONV_DIR EPITOME_DIR

use std::path::Path;
use std::sync::Arc;

#[path = "probe_lm/mod.rs"]
mod probe_lm;

use empathy_gym::environment::sim::Embedder;
use empathy_gym::fit::corpora::{self, Example};
use empathy_gym::fit::train::{fit_mlp, FitSettings, Targets};
use empathy_gym::seed::fnv1a64;
use probe_lm::Lm;

fn apart(e: &Example) -> bool {
    fnv1a64(e.reply.as_bytes()).is_multiple_of(5)
}

/// The AUC of `pos` against `neg` (`report::stats::auc`).
fn auc(pos: &[f64], neg: &[f64]) -> f64 {
    let scores: Vec<f64> = pos.iter().chain(neg).copied().collect();
    let positive: Vec<bool> = (0..scores.len()).map(|i| i < pos.len()).collect();
    empathy_gym::report::stats::auc(&scores, &positive)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (esconv, epitome) = (Path::new(&args[1]), Path::new(&args[2]));
    let mut bank = Vec::new();
    for f in [
        "bank.yaml",
        "bank-self-harm.yaml",
        "bank-advice-isolation.yaml",
        "bank-degrading-agreement.yaml",
    ] {
        bank.extend(corpora::bank(&Path::new("data/safety").join(f))?);
    }
    let mut honest: Vec<Example> = corpora::esconv_dev(esconv)?
        .into_iter()
        .map(|t| t.example)
        .step_by(3)
        .collect();
    honest.extend(corpora::epitome(epitome)?.0.into_iter().step_by(3));
    eprintln!("bank {} honest {}", bank.len(), honest.len());

    let lm = Lm::load()?;
    let embedder = Arc::new(Embedder::load_default()?);
    let alone_features = |e: &Example| -> anyhow::Result<Vec<f32>> {
        let mut reply = lm.encode(&e.reply)?;
        reply.truncate(96);
        let mut x = lm.pooled(&lm.judge_prefix, &reply)?;
        x.extend(embedder.embed(&[e.context.as_str()])?[0].iter());
        Ok(x)
    };
    let lm_features = |e: &Example| -> anyhow::Result<Vec<f32>> {
        let ctx: String = e.context.chars().take(400).collect();
        let head = lm.encode(&format!(
            "<|im_start|>user\n{ctx}<|im_end|>\n<|im_start|>assistant\n"
        ))?;
        let mut reply = lm.encode(&e.reply)?;
        reply.truncate(96);
        lm.pooled(&head, &reply)
    };
    let mini_features = |e: &Example| -> anyhow::Result<Vec<f32>> {
        let v = embedder.embed(&[e.reply.as_str(), e.context.as_str()])?;
        let prod: Vec<f32> = v[0].iter().zip(v[1].iter()).map(|(a, b)| a * b).collect();
        Ok(v[0]
            .iter()
            .chain(v[1].iter())
            .copied()
            .chain(prod)
            .collect())
    };
    let all: Vec<(&Example, bool)> = bank
        .iter()
        .map(|e| (e, true))
        .chain(honest.iter().map(|e| (e, false)))
        .collect();
    let bar = indicatif::ProgressBar::new(all.len() as u64);
    let mut lmx = Vec::new();
    let mut ax = Vec::new();
    let mut mx = Vec::new();
    for (e, _) in &all {
        lmx.push(lm_features(e)?);
        ax.push(alone_features(e)?);
        mx.push(mini_features(e)?);
        bar.inc(1);
    }
    bar.finish();
    for (name, xs) in [
        ("SmolLM2-135M hidden, after the context", &lmx),
        ("SmolLM2-135M hidden, the reply alone + MiniLM context", &ax),
        ("MiniLM embeddings", &mx),
    ] {
        let dim = xs[0].len();
        // Standardize on the fit part.
        let fit_idx: Vec<usize> = (0..all.len()).filter(|&i| !apart(all[i].0)).collect();
        let mut mu = vec![0f64; dim];
        let mut sd = vec![0f64; dim];
        for &i in &fit_idx {
            for (j, v) in xs[i].iter().enumerate() {
                mu[j] += *v as f64;
            }
        }
        mu.iter_mut().for_each(|m| *m /= fit_idx.len() as f64);
        for &i in &fit_idx {
            for (j, v) in xs[i].iter().enumerate() {
                sd[j] += (*v as f64 - mu[j]).powi(2);
            }
        }
        sd.iter_mut()
            .for_each(|s| *s = (*s / fit_idx.len() as f64).sqrt().max(1e-6));
        let z = |x: &[f32]| -> Vec<f32> {
            x.iter()
                .enumerate()
                .map(|(j, v)| ((*v as f64 - mu[j]) / sd[j]) as f32)
                .collect()
        };
        let mut x = Vec::new();
        let mut class = Vec::new();
        let mut weight = Vec::new();
        for &i in &fit_idx {
            let (e, from_bank) = all[i];
            x.extend(z(&xs[i]));
            class.push(u32::from(e.kind.is_some()));
            weight.push(if from_bank { 3.0 } else { 1.0 });
        }
        let net = fit_mlp(
            &x,
            [dim, 2],
            Targets::Classes {
                class: &class,
                weight: &weight,
            },
            &FitSettings::default(),
            name,
        )?;
        let p = |i: usize| -> f64 {
            let l = net.logits(&z(&xs[i]));
            empathy_gym::environment::sim::mlp::softmax(&l)[1]
        };
        let dev: Vec<usize> = (0..all.len()).filter(|&i| apart(all[i].0)).collect();
        let unsafe_dev: Vec<f64> = dev
            .iter()
            .filter(|&&i| all[i].1 && all[i].0.kind.is_some())
            .map(|&i| p(i))
            .collect();
        let safe_bank_dev: Vec<f64> = dev
            .iter()
            .filter(|&&i| all[i].1 && all[i].0.kind.is_none())
            .map(|&i| p(i))
            .collect();
        let mut honest_dev: Vec<f64> = dev.iter().filter(|&&i| !all[i].1).map(|&i| p(i)).collect();
        honest_dev.sort_by(|a, b| b.total_cmp(a));
        let thr = honest_dev[(0.01 * honest_dev.len() as f64) as usize];
        let rate = |v: &[f64]| v.iter().filter(|&&s| s > thr).count() as f64 / v.len() as f64;
        println!(
            "{name}: dev unsafe {} safe-bank {} honest {} | AUC unsafe vs safe-bank {:.3}, vs honest {:.3} | at 1% honest: recall {:.3}, safe-bank flagged {:.3}",
            unsafe_dev.len(),
            safe_bank_dev.len(),
            honest_dev.len(),
            auc(&unsafe_dev, &safe_bank_dev),
            auc(&unsafe_dev, &honest_dev),
            rate(&unsafe_dev),
            rate(&safe_bank_dev)
        );
    }
    Ok(())
}
