//! Fitting and measuring the safety screen's learned head (`empathy-gym safety fit` and
//! `safety eval`; docs/VALIDATION.md, "The safety screen"). The public corpora are read from the
//! user's copies; what is fit, tuned and reported on is fixed here:
//! - fit: DiaSafety's train part, the project's tuning bank (`data/safety/bank.yaml`, four fifths
//!   of it), and honest supporter replies as safe (four fifths of ESConv's dev turns and of
//!   EPITOME's dev part);
//! - choose the threshold on: the other fifths and DiaSafety's val part;
//! - report once per version: DiaSafety's test part, the never-tuned banks
//!   (`data/safety/heldout.yaml`, `heldout-2.yaml`), the safe-messaging replies
//!   (`data/safety/safe-messaging.yaml`), ESConv's `FailedESConv.json` supporter turns and
//!   EPITOME's test part.

pub mod net;
pub mod report;

use std::path::Path;

use crate::environment::sim::embed::Embedder;
use crate::error::{Error, Result};
use crate::fit::corpora::{self as data, Example};
use crate::fit::embedded::Embedded;
use crate::fit::train::FitSettings;
use crate::fit::Corpora;
use crate::seed::fnv1a64;

/// Weight of a bank example against a corpus one: the bank is in the simulator's own register.
pub const BANK_WEIGHT: f32 = 40.0;
/// The share of honest dev replies the threshold may flag.
pub const TARGET_FALSE_POSITIVES: f64 = 0.003;
/// The lowest threshold the fit may choose.
pub const MIN_THRESHOLD: f64 = 0.5;

/// Whether an example is in the fifth kept apart for choices (by the FNV-1a hash of its reply).
pub fn held_for_choices(e: &Example) -> bool {
    fnv1a64(e.reply.as_bytes()).is_multiple_of(5)
}

fn split(v: Vec<Example>) -> (Vec<Example>, Vec<Example>) {
    v.into_iter().partition(|e| !held_for_choices(e))
}

/// What the fit gives, beside the weights.
pub struct Fitted {
    pub net: crate::environment::sim::mlp::Mlp,
    pub threshold: f64,
    /// Named counts and rates for `data/safety-head.yaml`.
    pub summary: serde_yaml::Mapping,
}

fn rate(flagged: usize, n: usize) -> f64 {
    if n == 0 {
        0.0
    } else {
        (flagged as f64 / n as f64 * 10_000.0).round() / 10_000.0
    }
}

/// Fits the head from the corpora and the bank under `root`, and chooses its threshold.
pub fn fit_head(
    root: &Path,
    corpora: &Corpora,
    embedder: &Embedder,
    s: &FitSettings,
) -> Result<Fitted> {
    let dia_train = data::diasafety(&corpora.diasafety, "train")?;
    let dia_val = data::diasafety(&corpora.diasafety, "val")?;
    let (bank_fit, bank_dev) = split(data::bank(&root.join("data/safety/bank.yaml"))?);
    let esconv: Vec<Example> = data::esconv_dev(&corpora.esconv)?
        .into_iter()
        .map(|t| t.example)
        .collect();
    let (esconv_fit, esconv_dev) = split(esconv);
    let (epitome_fit, epitome_dev) = split(data::epitome(&corpora.epitome)?.0);

    let mut emb = Embedded::new(embedder);
    for (set, what) in [
        (&dia_train, "DiaSafety train"),
        (&dia_val, "DiaSafety val"),
        (&bank_fit, "bank"),
        (&bank_dev, "bank (dev)"),
        (&esconv_fit, "ESConv dev"),
        (&esconv_dev, "ESConv dev (choices)"),
        (&epitome_fit, "EPITOME dev"),
        (&epitome_dev, "EPITOME dev (choices)"),
    ] {
        emb.add(&net::texts(set), &format!("embedding {what}"))?;
    }

    let mut units = net::units(&dia_train, &emb, 1.0);
    units.extend(net::units(&bank_fit, &emb, BANK_WEIGHT));
    units.extend(net::units(&esconv_fit, &emb, 1.0));
    units.extend(net::units(&epitome_fit, &emb, 1.0));
    let first = net::fit(&units, s, "fit, round 1")?;
    units.extend(net::likeliest_sentences(&dia_train, &emb, &first, 1.0));
    units.extend(net::likeliest_sentences(
        &bank_fit,
        &emb,
        &first,
        BANK_WEIGHT,
    ));
    let net = net::fit(&units, s, "fit, round 2")?;

    let score = |set: &[Example]| -> Vec<f64> {
        set.iter()
            .map(|e| net::reply_score(e, &emb, &net))
            .collect()
    };
    let mut honest: Vec<f64> = score(&esconv_dev);
    honest.extend(score(&epitome_dev));
    honest.sort_by(|a, b| b.total_cmp(a));
    let allowed = (TARGET_FALSE_POSITIVES * honest.len() as f64).floor() as usize;
    let threshold = honest
        .get(allowed)
        .map_or(MIN_THRESHOLD, |v| (v + 1e-4).max(MIN_THRESHOLD));
    let threshold = (threshold * 10_000.0).ceil() / 10_000.0;

    let flagged = |set: &[Example], unsafe_only: Option<bool>| -> (usize, usize) {
        let chosen: Vec<&Example> = set
            .iter()
            .filter(|e| unsafe_only.is_none_or(|u| e.kind.is_some() == u))
            .collect();
        let f = chosen
            .iter()
            .filter(|e| net::reply_score(e, &emb, &net) >= threshold)
            .count();
        (f, chosen.len())
    };
    let mut summary = serde_yaml::Mapping::new();
    let mut put = |k: &str, v: serde_yaml::Value| {
        summary.insert(k.into(), v);
    };
    put("units fit", (units.len() as u64).into());
    for (name, set) in [
        ("DiaSafety train", &dia_train),
        ("bank (fit)", &bank_fit),
        ("ESConv dev turns (fit)", &esconv_fit),
        ("EPITOME dev responses (fit)", &epitome_fit),
    ] {
        put(&format!("{name}: replies"), (set.len() as u64).into());
    }
    let (f, n) = flagged(&bank_dev, Some(true));
    put("bank (dev): unsafe flagged", rate(f, n).into());
    let (f, n) = flagged(&bank_dev, Some(false));
    put("bank (dev): safe flagged", rate(f, n).into());
    let (f, n) = flagged(&dia_val, Some(true));
    put("DiaSafety val: unsafe flagged", rate(f, n).into());
    let (f, n) = flagged(&dia_val, Some(false));
    put("DiaSafety val: safe flagged", rate(f, n).into());
    let (f, n) = flagged(&esconv_dev, None);
    put("ESConv dev turns (choices): flagged", rate(f, n).into());
    let (f, n) = flagged(&epitome_dev, None);
    put(
        "EPITOME dev responses (choices): flagged",
        rate(f, n).into(),
    );
    Ok(Fitted {
        net,
        threshold,
        summary,
    })
}

/// The sources `data/safety-head.yaml` names, with their terms.
pub fn sources() -> Vec<String> {
    [
        "DiaSafety (Sun et al., 'On the Safety of Conversational Models: Taxonomy, Dataset, and \
         Benchmark', Findings of ACL 2022), train part fit, val part for the threshold; \
         github.com/thu-coai/DiaSafety, Apache License 2.0",
        "ESConv (Liu et al., 'Towards Emotional Support Dialog Systems', ACL 2021), supporter turns \
         of codes/dataset/devWithStrategy_short.tsv as safe replies; \
         github.com/thu-coai/Emotional-Support-Conversation, CC BY-NC 4.0: these weights derive \
         from it and are for non-commercial research use",
        "EPITOME (Sharma et al., 'A Computational Approach to Understanding Empathy Expressed in \
         Text-Based Mental Health Support', EMNLP 2020), responses of the dev part as safe \
         replies; github.com/behavioral-data/Empathy-Mental-Health, the authors' academic-use \
         terms",
        "data/safety/bank.yaml, written for this project (MIT OR Apache-2.0)",
    ]
    .map(String::from)
    .to_vec()
}

/// Writes the fitted head as `data/safety-head.safetensors` and `data/safety-head.yaml` under
/// `root`, each through a temporary file so that a failed write leaves the old head whole.
pub fn write_head(root: &Path, fitted: &Fitted, s: &FitSettings) -> Result<()> {
    use crate::environment::sim::detect::safety::head::HeadMeta;
    let dir = root.join("data");
    let weights = "safety-head.safetensors";
    let mut fit = serde_yaml::to_value(s).map_err(|e| Error::Other(e.to_string()))?;
    if let serde_yaml::Value::Mapping(m) = &mut fit {
        m.extend(fitted.summary.clone());
    }
    let meta = HeadMeta {
        weights: weights.into(),
        threshold: fitted.threshold,
        hidden: fitted.net.hidden,
        sources: sources(),
        fit,
    };
    let yaml = format!(
        "# The safety screen's learned head (src/environment/sim/detect/safety/head.rs), written by\n\
         # `empathy-gym safety fit`: run it again on the same corpora to get the same weights.\n{}",
        serde_yaml::to_string(&meta).map_err(|e| Error::Other(e.to_string()))?
    );
    crate::fit::write_files(
        &dir,
        [
            (weights, fitted.net.to_safetensors()?),
            ("safety-head.yaml", yaml.into_bytes()),
        ],
    )
}
