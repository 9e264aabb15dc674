//! Fitting and measuring perception (`empathy-gym perception fit`; `sim::perceive`). What is fit
//! and what is reported is fixed here:
//! - EPITOME: the dev part (`judge::epitome::Part`) is fit, four fifths of its posts; the other
//!   fifth is reported as `dev (choices)`; the test part is reported once per version, never fit.
//! - ESConv's `devWithStrategy_short.tsv`, by the FNV-1a hash of a dialogue's first message: three
//!   fifths of its dialogues are fit, one fifth is for choices, one fifth is held apart and
//!   reported, never fit nor chosen on.
//!
//! The settings (hidden width, epochs, weight decay) are chosen from a grid by the mean AUC over
//! every head on the two choice parts; only the chosen network is measured on the reported parts.
//!
//! A reply labels EPITOME's three heads (level 1 or 2: present) or ESConv's eight (its strategy:
//! yes, every other strategy: no), never both; the loss reads only the heads a reply labels.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use crate::environment::sim::detect::safety::head::context_sentences;
use crate::environment::sim::detect::safety::head::{features, INPUT};
use crate::environment::sim::embed::Embedder;
use crate::environment::sim::mlp::Mlp;
use crate::environment::sim::moves::Move;
use crate::environment::sim::perceive::{self, PerceptionMeta, Pool, EPITOME_HEADS, HEADS};
use crate::error::{Error, Result};
use crate::fit::corpora::{self, EsconvTurn};
use crate::fit::embedded::Embedded;
use crate::fit::train::{best_of_grid, Chosen, FitSettings};
use crate::fit::Corpora;
use crate::judge::epitome::{self, Item, Mechanism, Part};
use crate::report::stats::{auc_ci, BootstrapConfig, Estimate};
use crate::seed::fnv1a64;

/// One reply to fit on or measure: its context and text, and a label per head (`None`: the reply
/// says nothing of that head).
#[derive(Clone, Debug, PartialEq)]
pub struct Labelled {
    pub context: String,
    pub reply: String,
    pub labels: [Option<bool>; HEADS.len()],
}

/// The parts of the corpora, as fit and reported.
pub struct Parts {
    pub epitome_fit: Vec<Labelled>,
    pub epitome_choices: Vec<Labelled>,
    pub epitome_test: Vec<Labelled>,
    pub esconv_fit: Vec<Labelled>,
    pub esconv_choices: Vec<Labelled>,
    pub esconv_held: Vec<Labelled>,
}

fn from_epitome(item: &Item) -> Labelled {
    let mut labels = [None; HEADS.len()];
    for (k, m) in [
        Mechanism::EmotionalReactions,
        Mechanism::Interpretations,
        Mechanism::Explorations,
    ]
    .into_iter()
    .enumerate()
    {
        labels[k] = item.levels.get(&m).map(|l| *l >= 1);
    }
    Labelled {
        context: item.post.trim().to_string(),
        reply: item.response.trim().to_string(),
        labels,
    }
}

fn from_esconv(t: &EsconvTurn) -> Option<Labelled> {
    let head = perceive::strategy_head(&t.strategy)?;
    let mut labels = [None; HEADS.len()];
    for (k, l) in labels.iter_mut().enumerate().skip(EPITOME_HEADS) {
        *l = Some(k == head);
    }
    Some(Labelled {
        context: t.example.context.clone(),
        reply: t.example.reply.clone(),
        labels,
    })
}

/// Reads the user's copies and splits them (see the module's header).
pub fn parts(corpora: &Corpora) -> Result<Parts> {
    let items = epitome::load(&corpora.epitome)?;
    let mut p = Parts {
        epitome_fit: Vec::new(),
        epitome_choices: Vec::new(),
        epitome_test: Vec::new(),
        esconv_fit: Vec::new(),
        esconv_choices: Vec::new(),
        esconv_held: Vec::new(),
    };
    for item in items.iter().filter(|i| !i.response.trim().is_empty()) {
        let l = from_epitome(item);
        match item.part() {
            Part::Test => p.epitome_test.push(l),
            Part::Dev if fnv1a64(item.sp_id.as_bytes()).is_multiple_of(5) => {
                p.epitome_choices.push(l)
            }
            Part::Dev => p.epitome_fit.push(l),
        }
    }
    for t in corpora::esconv_dev(&corpora.esconv)? {
        if let Some(l) = from_esconv(&t) {
            match fnv1a64(t.dialogue.as_bytes()) % 5 {
                0 => p.esconv_held.push(l),
                1 => p.esconv_choices.push(l),
                _ => p.esconv_fit.push(l),
            }
        }
    }
    Ok(p)
}

fn embed_all(emb: &mut Embedded<'_>, set: &[Labelled], what: &str) -> Result<()> {
    let mut texts: Vec<&str> = Vec::new();
    for l in set {
        texts.push(&l.reply);
        texts.extend(context_sentences(&l.context));
    }
    emb.add(&texts, what)
}

fn input(emb: &Embedded<'_>, l: &Labelled) -> Vec<f32> {
    features(emb.get(&l.reply), &emb.context(&l.context))
}

/// Each head's AUC on a set (heads the set does not label are absent).
pub fn aucs(net: &Mlp, emb: &Embedded<'_>, set: &[Labelled]) -> BTreeMap<&'static str, Estimate> {
    let probs: Vec<[f64; HEADS.len()]> = set
        .iter()
        .map(|l| perceive::probabilities(net, &input(emb, l)))
        .collect();
    let mut out = BTreeMap::new();
    for (k, head) in HEADS.iter().enumerate() {
        let (scores, positive): (Vec<f64>, Vec<bool>) = set
            .iter()
            .zip(&probs)
            .filter_map(|(l, p)| l.labels[k].map(|y| (p[k], y)))
            .unzip();
        if positive.iter().any(|&y| y) && positive.iter().any(|&y| !y) {
            out.insert(
                *head,
                auc_ci(&scores, &positive, &BootstrapConfig::default()),
            );
        }
    }
    out
}

/// One way to read a move for [`move_aucs`]: its heads, each at the fit's base rate or at even
/// odds, pooled.
#[derive(Clone, Debug, PartialEq)]
pub struct MoveReading {
    pub heads: Vec<usize>,
    pub even_odds: bool,
    pub pool: Pool,
}

impl MoveReading {
    /// Every reading of a move that names `heads`: each pool at each base rate, then each head
    /// alone (one reading when it names one head: the base rate and the pool change no ranking).
    pub fn all(heads: &[usize]) -> Vec<Self> {
        if heads.len() < 2 {
            return vec![Self {
                heads: heads.to_vec(),
                even_odds: false,
                pool: Pool::Max,
            }];
        }
        let mut out = Vec::new();
        for even_odds in [false, true] {
            for pool in [Pool::Max, Pool::MeanLogOdds] {
                out.push(Self {
                    heads: heads.to_vec(),
                    even_odds,
                    pool,
                });
            }
        }
        out.extend(heads.iter().map(|&k| Self {
            heads: vec![k],
            even_odds: false,
            pool: Pool::Max,
        }));
        out
    }

    /// The reading in the words of `data/appraiser.yaml`.
    pub fn describe(&self) -> String {
        match self.heads.as_slice() {
            [k] => format!("{} alone", HEADS[*k]),
            _ => format!(
                "pool: {}, even_odds: {}",
                self.pool.as_str(),
                self.even_odds
            ),
        }
    }

    fn score(&self, z: &[f64], priors: &[f64; HEADS.len()]) -> f64 {
        let at = if self.even_odds {
            *priors
        } else {
            [0.5; HEADS.len()]
        };
        perceive::pooled(&perceive::read_log_odds(z, &at), &self.heads, self.pool)
    }
}

/// The AUC of `reading` on `set` against the move's label there: positive when any of its heads
/// the reply labels is; `None` when the set labels none of them or only one class.
pub fn move_auc(
    net: &Mlp,
    priors: &[f64; HEADS.len()],
    emb: &Embedded<'_>,
    set: &[Labelled],
    reading: &MoveReading,
    label_heads: &[usize],
) -> Option<Estimate> {
    let (scores, positive): (Vec<f64>, Vec<bool>) = set
        .iter()
        .filter_map(|l| {
            let labels: Vec<bool> = label_heads.iter().filter_map(|&k| l.labels[k]).collect();
            if labels.is_empty() {
                return None;
            }
            let z = net.logits(&input(emb, l));
            Some((reading.score(&z, priors), labels.contains(&true)))
        })
        .unzip();
    (positive.contains(&true) && positive.contains(&false))
        .then(|| auc_ci(&scores, &positive, &BootstrapConfig::default()))
}

/// What the fit gives.
pub struct Fitted {
    pub net: Mlp,
    pub settings: FitSettings,
    /// Each setting of the grid and its mean AUC on the choice parts.
    pub grid: Vec<(FitSettings, f64)>,
    /// Per head, the share of the fit part's replies it labels that are positive.
    pub priors: Vec<f64>,
    /// The chosen network, measured.
    pub measured: Measured,
}

/// A network measured (see [`measure`]).
pub struct Measured {
    /// Per part, its size and each head's AUC.
    pub report: Vec<(&'static str, usize, BTreeMap<&'static str, Estimate>)>,
    /// Per move the appraiser reads from the heads, each reading's AUC on [`MOVE_SETS`].
    pub moves: Vec<(Move, MoveReading, Vec<Option<Estimate>>)>,
}

/// The parts the readings of a move are compared on: the choice parts, so a reading can be chosen
/// without looking at the reported ones.
pub const MOVE_SETS: [&str; 2] = ["EPITOME dev (choices)", "ESConv dev (choices)"];

/// Per head, the share of positives among the replies of `set` that label it.
pub fn priors(set: &[&Labelled]) -> Vec<f64> {
    (0..HEADS.len())
        .map(|k| {
            let labels: Vec<bool> = set.iter().filter_map(|l| l.labels[k]).collect();
            let positive = labels.iter().filter(|y| **y).count();
            // A head nothing labels carries no base rate: one half leaves it as read.
            if labels.is_empty() {
                0.5
            } else {
                super::r3(positive as f64 / labels.len() as f64)
            }
        })
        .collect()
}

fn mean_auc(aucs: &[BTreeMap<&'static str, Estimate>]) -> f64 {
    let v: Vec<f64> = aucs
        .iter()
        .flat_map(|m| m.values().map(|e| e.value))
        .collect();
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

impl Parts {
    /// The parts with their names, as the report's columns.
    fn named(&self) -> [(&'static str, &Vec<Labelled>); 6] {
        [
            ("EPITOME dev (fit)", &self.epitome_fit),
            ("EPITOME dev (choices)", &self.epitome_choices),
            ("EPITOME test", &self.epitome_test),
            ("ESConv dev (fit)", &self.esconv_fit),
            ("ESConv dev (choices)", &self.esconv_choices),
            ("ESConv dev (held apart)", &self.esconv_held),
        ]
    }
}

/// Reads and splits the corpora and embeds every part.
fn prepare<'a>(corpora: &Corpora, embedder: &'a Embedder) -> Result<(Parts, Embedded<'a>)> {
    let p = parts(corpora)?;
    if p.epitome_fit.is_empty() || p.esconv_fit.is_empty() {
        return Err(Error::Other(
            "no EPITOME dev pairs or no ESConv strategy turns: check the folders".into(),
        ));
    }
    let mut emb = Embedded::new(embedder);
    for (what, set) in p.named() {
        embed_all(&mut emb, set, what)?;
    }
    Ok((p, emb))
}

/// A network measured: each head on every part, and the readings of each move of `moves` (its
/// heads' indices) on the choice parts, its heads at even odds by `priors`.
fn measure(
    net: &Mlp,
    priors: &[f64],
    p: &Parts,
    emb: &Embedded<'_>,
    moves: &BTreeMap<Move, Vec<usize>>,
) -> Measured {
    let report = p
        .named()
        .iter()
        .map(|(what, set)| (*what, set.len(), aucs(net, emb, set)))
        .collect();
    let at: [f64; HEADS.len()] = std::array::from_fn(|k| priors[k]);
    let mut rows = Vec::new();
    for (m, heads) in moves {
        for r in MoveReading::all(heads) {
            let cells = p
                .named()
                .iter()
                .filter(|(what, _)| MOVE_SETS.contains(what))
                .map(|(_, set)| move_auc(net, &at, emb, set, &r, heads))
                .collect();
            rows.push((*m, r, cells));
        }
    }
    Measured {
        report,
        moves: rows,
    }
}

/// Measures the heads of `data/perception.yaml` as they ship, without fitting (see [`measure`]).
pub fn measure_shipped(
    corpora: &Corpora,
    embedder: &Embedder,
    heads: &perceive::Perception,
    moves: &BTreeMap<Move, Vec<usize>>,
) -> Result<Measured> {
    let (p, emb) = prepare(corpora, embedder)?;
    let priors = heads
        .meta
        .priors
        .clone()
        .unwrap_or_else(|| vec![0.5; HEADS.len()]);
    Ok(measure(heads.net(), &priors, &p, &emb, moves))
}

/// Fits a network per setting of `grid` on the fit parts, keeps the one with the best mean AUC
/// on the choice parts (the first on a tie), and measures it (see [`measure`]).
pub fn fit(
    corpora: &Corpora,
    embedder: &Embedder,
    grid: &[FitSettings],
    moves: &BTreeMap<Move, Vec<usize>>,
) -> Result<Fitted> {
    if grid.is_empty() {
        return Err(Error::Other("no settings to fit".into()));
    }
    let (p, emb) = prepare(corpora, embedder)?;
    let train: Vec<&Labelled> = p.epitome_fit.iter().chain(&p.esconv_fit).collect();
    let mut x = Vec::with_capacity(train.len() * INPUT);
    let (mut y, mut mask) = (Vec::new(), Vec::new());
    for l in &train {
        x.extend(input(&emb, l));
        for label in l.labels {
            y.push(if label == Some(true) { 1.0 } else { 0.0 });
            mask.push(if label.is_some() { 1.0 } else { 0.0 });
        }
    }
    let choice_auc = |net: &Mlp| {
        mean_auc(&[
            aucs(net, &emb, &p.epitome_choices),
            aucs(net, &emb, &p.esconv_choices),
        ])
    };
    let Chosen {
        net,
        settings,
        grid: scores,
    } = best_of_grid(
        &x,
        [INPUT, HEADS.len()],
        (&y, &mask),
        grid,
        "perception",
        choice_auc,
    )?
    .expect("a non-empty grid");
    let priors = priors(&train);
    let measured = measure(&net, &priors, &p, &emb, moves);
    Ok(Fitted {
        net,
        settings,
        grid: scores,
        priors,
        measured,
    })
}

/// The sources and their terms, as `data/perception.yaml` records them.
pub fn sources() -> Vec<String> {
    [
        "EPITOME (Sharma et al., 'A Computational Approach to Understanding Empathy Expressed in \
         Text-Based Mental Health Support', EMNLP 2020), the three mechanisms' levels on the dev \
         part; github.com/behavioral-data/Empathy-Mental-Health, the authors' academic-use terms",
        "ESConv (Liu et al., 'Towards Emotional Support Dialog Systems', ACL 2021), the supporter \
         strategies of codes/dataset/devWithStrategy_short.tsv; \
         github.com/thu-coai/Emotional-Support-Conversation, CC BY-NC 4.0: these weights derive \
         from it and are for non-commercial research use",
    ]
    .map(String::from)
    .to_vec()
}

/// The report as markdown: one row per head, one column per set.
pub fn report_markdown(f: &Measured) -> String {
    let mut md = String::from("| head |");
    for (what, n, _) in &f.report {
        let _ = write!(md, " {what} (n {n}) |");
    }
    md.push_str("\n| --- |");
    md.push_str(&" ---: |".repeat(f.report.len()));
    md.push('\n');
    for head in HEADS {
        let _ = write!(md, "| {head} |");
        for (_, _, aucs) in &f.report {
            match aucs.get(head) {
                Some(e) => {
                    let _ = write!(md, " {:.3} [{:.3}, {:.3}] |", e.value, e.low, e.high);
                }
                None => md.push_str(" |"),
            }
        }
        md.push('\n');
    }
    md
}

/// The readings of each move as markdown: one row per reading, one column per choice part; the
/// reading `configured` names (per move, how `data/appraiser.yaml` reads it) is marked.
pub fn moves_markdown(f: &Measured, configured: &dyn Fn(Move, &MoveReading) -> bool) -> String {
    let mut md = String::from("| move | reading |");
    for what in MOVE_SETS {
        let _ = write!(md, " {what} |");
    }
    md.push_str("\n| --- | --- |");
    md.push_str(&" ---: |".repeat(MOVE_SETS.len()));
    md.push('\n');
    for (m, r, cells) in &f.moves {
        let mark = if configured(*m, r) { " (as read)" } else { "" };
        let _ = write!(md, "| {} | {}{mark} |", m.as_str(), r.describe());
        for c in cells {
            match c {
                Some(e) => {
                    let _ = write!(md, " {:.3} [{:.3}, {:.3}] |", e.value, e.low, e.high);
                }
                None => md.push_str(" |"),
            }
        }
        md.push('\n');
    }
    md
}

/// Writes `data/perception.safetensors` and `data/perception.yaml` under `root`, each through a
/// temporary file so that a failed write leaves the old ones whole.
pub fn write(root: &Path, f: &Fitted) -> Result<()> {
    let s = &f.settings;
    let data = root.join("data");
    let mut summary = serde_yaml::Mapping::new();
    for (what, _, aucs) in &f.measured.report {
        let mut m = serde_yaml::Mapping::new();
        for (head, e) in aucs {
            m.insert((*head).into(), super::r3(e.value).into());
        }
        summary.insert((*what).into(), m.into());
    }
    let mut fit = super::fit_record(s, &f.grid, "choices_mean_auc")?;
    fit.insert("auc".into(), summary.into());
    let meta = PerceptionMeta {
        weights: "perception.safetensors".into(),
        hidden: s.hidden,
        heads: HEADS.iter().map(|h| h.to_string()).collect(),
        sources: sources(),
        priors: Some(f.priors.clone()),
        fit: fit.into(),
    };
    let yaml = serde_yaml::to_string(&meta).map_err(|e| Error::Other(e.to_string()))?;
    let header = "# Perception's learned heads, written by `empathy-gym perception fit` \
                  (docs/VALIDATION.md, \"Perception\"). Do not edit: fit again.\n";
    super::write_files(
        &data,
        [
            ("perception.safetensors", f.net.to_safetensors()?),
            ("perception.yaml", format!("{header}{yaml}").into_bytes()),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priors_count_only_the_replies_that_label_a_head() {
        let mut a = [None; HEADS.len()];
        a[0] = Some(true);
        a[3] = Some(false);
        let mut b = a;
        b[0] = Some(false);
        let mut c = [None; HEADS.len()];
        c[3] = Some(true);
        let set: Vec<Labelled> = [a, b, b, c]
            .into_iter()
            .map(|labels| Labelled {
                context: String::new(),
                reply: String::new(),
                labels,
            })
            .collect();
        let p = priors(&set.iter().collect::<Vec<_>>());
        // Head 0: 1 of 3 labelled; head 3: 1 of 4; head 1: none labelled, so even.
        assert_eq!((p[0], p[3], p[1]), (0.333, 0.25, 0.5));
    }

    #[test]
    fn a_move_of_two_heads_is_read_six_ways_and_one_of_one_head() {
        let two = MoveReading::all(&[0, 5]);
        let words: Vec<String> = two.iter().map(MoveReading::describe).collect();
        assert_eq!(
            words,
            [
                "pool: max, even_odds: false",
                "pool: mean_log_odds, even_odds: false",
                "pool: max, even_odds: true",
                "pool: mean_log_odds, even_odds: true",
                "emotional_reactions alone",
                "reflection_of_feelings alone",
            ]
        );
        assert_eq!(MoveReading::all(&[7]).len(), 1);
        // Logits 0 and 1 at base rates 0.2 and 0.5: at even odds ln 4 joins the first.
        let mut priors = [0.5; HEADS.len()];
        priors[0] = 0.2;
        let mut z = vec![0.0; HEADS.len()];
        z[5] = 1.0;
        let sig = crate::environment::sim::mlp::sigmoid;
        assert!((two[0].score(&z, &priors) - sig(1.0)).abs() < 1e-12);
        assert!((two[2].score(&z, &priors) - sig(4f64.ln())).abs() < 1e-12);
        assert!((two[3].score(&z, &priors) - sig((4f64.ln() + 1.0) / 2.0)).abs() < 1e-12);
    }

    #[test]
    fn a_strategy_labels_only_esconvs_heads() {
        let t = EsconvTurn {
            example: corpora::Example {
                context: "I lost my job.".into(),
                reply: "What happened?".into(),
                kind: None,
                source: "esconv-dev".into(),
                hidden: false,
            },
            strategy: "Questions".into(),
            dialogue: "Hi".into(),
        };
        let l = from_esconv(&t).unwrap();
        assert_eq!(&l.labels[..EPITOME_HEADS], &[None, None, None]);
        assert_eq!(l.labels[3], Some(true));
        assert!(l.labels[4..].iter().all(|x| *x == Some(false)));
        let unknown = EsconvTurn {
            strategy: "Humming".into(),
            ..t
        };
        assert_eq!(from_esconv(&unknown), None);
    }
}
