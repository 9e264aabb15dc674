//! The PMI reading of specificity (`src/environment/sim/pmi.rs`) on sets of (user messages, reply)
//! items, outside the reward: how far each reply's own words gain probability from what the user
//! said, against each generic message of a bank. results/validation/pmi.md says how it was run.
//!
//! ```text
//! cargo run --release --example pmi_probe -- ITEMS OUT SETTING [EPITOME_DIR ESCONV_DIR N [CORPUS]]
//! ```
//!
//! ITEMS is a JSONL file of `{"label", "users": [..], "reply"}` objects, or `human` to draw N
//! replies of EPITOME's and ESConv's dev parts (the user's own copies), each read once after its
//! own message and once after another message of its corpus. SETTING is a `pmi:` block alone in a
//! file (results/validation/pmi/specificity-pmi-best-of-six.yaml); its generic messages and chat
//! template are read, its scale is not. Each output line is the item with `per_generic`: the mean
//! PMI (nats per own token past the first) against each generic message; the reward's reading is
//! their least.
use std::collections::BTreeSet;
use std::io::{BufRead, Write};
use std::path::Path;

use anyhow::{bail, Context};
use candle_core::Device;
use empathy_gym::environment::sim::fluency::Fluency;
use empathy_gym::environment::sim::lexicon::Lexicon;
use empathy_gym::environment::sim::pmi::{gains, load_setting};
use empathy_gym::environment::sim::responsive::content_words;
use empathy_gym::fit::corpora::{epitome, esconv_dev, Example};
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

/// N dev replies of each corpus, each after its own message and after another drawn at random.
fn human(epitome_dir: &Path, esconv_dir: &Path, n: usize) -> anyhow::Result<Vec<Value>> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let (dev, _) = epitome(epitome_dir)?;
    let es: Vec<Example> = esconv_dev(esconv_dir)?
        .into_iter()
        .map(|t| t.example)
        .collect();
    let mut out = Vec::new();
    for (name, set) in [("epitome-dev", dev), ("esconv-dev", es)] {
        let set: Vec<Example> = set
            .into_iter()
            .filter(|e| e.reply.split_whitespace().count() >= 8)
            .collect();
        for pair in 0..n {
            let i = rng.random_range(0..set.len());
            let mut j = rng.random_range(0..set.len());
            while set[j].context == set[i].context {
                j = rng.random_range(0..set.len());
            }
            for (side, ctx) in [("own", &set[i].context), ("other", &set[j].context)] {
                out.push(json!({"label": format!("{name}-{side}"), "pair": pair,
                    "users": [ctx], "reply": set[i].reply}));
            }
        }
    }
    Ok(out)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        bail!("usage: pmi_probe ITEMS|human OUT SETTING [EPITOME_DIR ESCONV_DIR N [CORPUS]]");
    }
    let items: Vec<Value> = if args[0] == "human" {
        let n = args
            .get(5)
            .context("human needs EPITOME_DIR ESCONV_DIR N")?;
        let mut items = human(Path::new(&args[3]), Path::new(&args[4]), n.parse()?)?;
        // An optional seventh argument keeps one corpus's pairs (`epitome-dev`, `esconv-dev`).
        if let Some(only) = args.get(6) {
            items.retain(|i| {
                i["label"]
                    .as_str()
                    .is_some_and(|l| l.starts_with(only.as_str()))
            });
        }
        items
    } else {
        std::io::BufReader::new(std::fs::File::open(&args[0])?)
            .lines()
            .map(|l| Ok(serde_json::from_str(&l?)?))
            .collect::<anyhow::Result<_>>()?
    };
    let use_ = load_setting(Path::new(&args[2]))?;
    let lex = Lexicon::load(Path::new("data/lexicon.yaml"))?;
    let f = Fluency::load(Path::new("data/fluency.yaml"), &Device::Cpu)?;
    let mut out = std::fs::File::create(&args[1])?;
    let bar = indicatif::ProgressBar::new(items.len() as u64);
    for mut item in items {
        let users: Vec<&str> = item["users"]
            .as_array()
            .context("users")?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let reply = item["reply"].as_str().context("reply")?;
        let drop: BTreeSet<String> = content_words(users.iter().copied(), &lex.stopwords);
        let per_generic = gains(&f, &use_, &users, reply, &drop)?;
        item["per_generic"] = json!(per_generic);
        writeln!(out, "{item}")?;
        bar.inc(1);
    }
    bar.finish();
    Ok(())
}
