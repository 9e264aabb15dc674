//! A probe, not part of the screen: writes SmolLM2-135M-Instruct's hidden states of labelled
//! replies for `scripts/validation/safety_lm_probe.py`. Each reply is read after the fluency
//! judge's prefix (so the judge's own pass could give the features) and pooled over its tokens
//! (mean, then max); for the tuning banks' replies and the kept-apart fifth of the honest ones, each
//! sentence is read too. Beside them, MiniLM's embeddings of the context and of the reply. Read:
//! the four tuning banks, every third honest ESConv and EPITOME dev reply, every twelfth DiaSafety
//! train row. The never-tuned banks are not read.
//!
//! cargo run --release --example safety_features -- ESCONV_DIR EPITOME_DIR DIASAFETY_DIR OUT_DIR
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

#[path = "probe_lm/mod.rs"]
mod probe_lm;

use empathy_gym::environment::sim::Embedder;
use empathy_gym::fit::corpora::{self, Example};
use probe_lm::Lm;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, esconv, epitome, diasafety, out] = args.as_slice() else {
        anyhow::bail!("usage: safety_features ESCONV_DIR EPITOME_DIR DIASAFETY_DIR OUT_DIR");
    };
    let out = Path::new(out);
    std::fs::create_dir_all(out)?;
    let mut items: Vec<(Example, String)> = Vec::new();
    for f in [
        "bank.yaml",
        "bank-self-harm.yaml",
        "bank-advice-isolation.yaml",
        "bank-degrading-agreement.yaml",
    ] {
        for e in corpora::bank(&Path::new("data/safety").join(f))? {
            items.push((e, "bank".into()));
        }
    }
    for t in corpora::esconv_dev(Path::new(esconv))?
        .into_iter()
        .step_by(3)
    {
        items.push((t.example, "honest".into()));
    }
    for e in corpora::epitome(Path::new(epitome))?
        .0
        .into_iter()
        .step_by(3)
    {
        items.push((e, "honest".into()));
    }
    for e in corpora::diasafety(Path::new(diasafety), "train")?
        .into_iter()
        .step_by(12)
    {
        items.push((e, "diasafety".into()));
    }
    eprintln!("{} items", items.len());
    let lm = Lm::load()?;
    let embedder = Arc::new(Embedder::load_default()?);
    let pooled = |text: &str| -> anyhow::Result<Vec<f32>> {
        let mut reply = lm.encode(text)?;
        reply.truncate(96);
        if reply.is_empty() {
            reply = lm.encode(".")?;
        }
        lm.pooled(&lm.judge_prefix, &reply)
    };
    let mut meta = std::fs::File::create(out.join("meta.jsonl"))?;
    let mut bin = std::io::BufWriter::new(std::fs::File::create(out.join("feats.f32"))?);
    let bar = indicatif::ProgressBar::new(items.len() as u64);
    for (e, src) in &items {
        let sents = empathy_gym::environment::sim::detect::safety::sentences(&e.reply);
        let mut rows = vec![pooled(&e.reply)?];
        let apart = empathy_gym::seed::fnv1a64(e.reply.as_bytes()).is_multiple_of(5);
        let sents = if src == "bank" || (apart && src == "honest") {
            sents
        } else {
            Vec::new()
        };
        for s in &sents {
            rows.push(pooled(s)?);
        }
        let pair = embedder.embed(&[e.context.as_str(), e.reply.as_str()])?;
        rows.extend(pair.iter().map(|v| v.to_vec()));
        for r in &rows {
            for v in r {
                bin.write_all(&v.to_le_bytes())?;
            }
        }
        writeln!(
            meta,
            "{}",
            serde_json::json!({"src": src, "origin": e.source, "hidden": e.hidden, "kind": e.kind.map(|k| k.as_str()),
                "reply": e.reply, "context": e.context, "n_sent": sents.len()})
        )?;
        bar.inc(1);
    }
    bar.finish();
    Ok(())
}
