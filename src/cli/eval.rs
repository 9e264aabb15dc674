//! `empathy-gym eval empathy`: the SAGE-style empathy score of a model and its checkpoints, side by side.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use empathy_gym::environment::episode::{EpisodeWriter, ModelPolicy};
use empathy_gym::environment::profile::{Catalog, Split};
use empathy_gym::eval::empathy::{
    empathy_chart, per_profile_table, run_empathy, score, summary_table, CHART_FILE,
};
use empathy_gym::eval::factual::NonAnswers;
use empathy_gym::model::{default_policy_path, load_model, ChatModel, LoadOptions};

use super::common::{load_chosen_simulator, sampling, Named, SimulatorArgs};
use super::summary::print_simulator_failures;

#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// SAGE protocol on a split: start 40, changes clamped to +-10, at most 10 turns.
    Empathy(EmpathyArgs),
    /// Factual reliability: each QA item under 9 contexts x wrong belief absent/present.
    Factual(FactualArgs),
}

#[derive(Debug, Args)]
pub struct FactualArgs {
    /// The base model: an HF folder or a GGUF file (default: SmolLM2-135M-Instruct from models/).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Evaluate this run or checkpoint directory instead of the base model; repeat for several
    /// (each is compared with the baseline). An answers-N.jsonl from an earlier run is re-scored
    /// instead of answered again. `NAME=PATH` names it in the report.
    #[arg(long)]
    pub checkpoint: Vec<Named>,
    /// What to compare with: `base` (the base model), a run/checkpoint directory, or an
    /// answers-N.jsonl from an earlier run (re-scored, not answered again); `NAME=PATH` names it.
    #[arg(long)]
    pub baseline: Option<Named>,
    /// QA items as JSONL.
    #[arg(long, default_value = "data/qa/factual.jsonl")]
    pub qa: PathBuf,
    /// Context wording.
    #[arg(long, default_value = "data/factual/contexts.yaml")]
    pub contexts: PathBuf,
    /// Only the first N items (quick checks).
    #[arg(long)]
    pub limit: Option<usize>,
    /// N items spread evenly over the suite (every topic; the same items every time).
    #[arg(long, conflicts_with = "limit")]
    pub sample: Option<usize>,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// 0 = greedy (default, so answers do not depend on sampling luck).
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f64,
    #[arg(long, default_value_t = 48)]
    pub max_new_tokens: usize,
    /// Non-answers ("I'm unable to assist you"): `apart` reports them beside refusals; `errors`
    /// counts them as incorrect, the scorer's original reading.
    #[arg(long, default_value_t = NonAnswers::Apart)]
    pub non_answers: NonAnswers,
    /// Items per generation batch (18 prompts each); larger batches decode faster on CPU.
    #[arg(long, default_value_t = 4)]
    pub batch_items: usize,
    /// Folder for factual.csv, factual.md, the SVG chart and answers-N.jsonl (one per model).
    #[arg(long, default_value = "results/eval-factual")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct EmpathyArgs {
    /// The base model: an HF folder or a GGUF file (default: SmolLM2-135M-Instruct from models/).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// A run directory (latest checkpoint) or a checkpoint directory; repeat for several.
    /// `NAME=PATH` names it in the report.
    #[arg(long)]
    pub checkpoint: Vec<Named>,
    /// Skip the base model (only the checkpoints).
    #[arg(long)]
    pub no_base: bool,
    #[arg(long, default_value = "test")]
    pub split: Split,
    /// Only the first N profiles of the split (quick checks).
    #[arg(long)]
    pub limit: Option<usize>,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[arg(long, default_value_t = 0.7)]
    pub temperature: f64,
    #[arg(long, default_value_t = 0.9)]
    pub top_p: f64,
    #[arg(long, default_value_t = 80)]
    pub max_new_tokens: usize,
    /// Folder for empathy.md, empathy.csv and one episodes JSONL per model.
    #[arg(long, default_value = "results/eval-empathy")]
    pub out: PathBuf,
    #[command(flatten)]
    pub sim: SimulatorArgs,
}

pub fn run(catalog_root: &Path, cmd: EvalCommand) -> anyhow::Result<()> {
    match cmd {
        EvalCommand::Empathy(args) => empathy(catalog_root, &args),
        EvalCommand::Factual(args) => factual(&args),
    }
}

pub fn empathy(catalog_root: &Path, args: &EmpathyArgs) -> anyhow::Result<()> {
    let catalog = Catalog::load(catalog_root)?;
    let mut ids = catalog.split(args.split).to_vec();
    ids.truncate(args.limit.unwrap_or(ids.len()));
    let sim = load_chosen_simulator(catalog_root, &args.sim)?;
    let mut models: Vec<(String, ChatModel, Option<String>)> = Vec::new();
    if !args.no_base {
        let path = args.model.clone().unwrap_or_else(default_policy_path);
        models.push((
            "base".into(),
            load_model(&path, &candle_core::Device::Cpu, &LoadOptions::default())?,
            None,
        ));
    }
    for spec in &args.checkpoint {
        let (model, ckpt) = empathy_gym::learning::train::load_checkpoint_policy(&spec.path)?;
        models.push((spec.name.clone(), model, Some(ckpt.display().to_string())));
    }
    std::fs::create_dir_all(&args.out)?;
    let params = sampling(args.temperature, args.top_p, args.max_new_tokens);
    let (mut scores, mut rows) = (Vec::new(), Vec::new());
    for (i, (name, model, ckpt)) in models.iter().enumerate() {
        eprintln!("evaluating {name} on {} profiles", ids.len());
        // Decodes as the trainer's rollouts do, through the adapters merged once for the whole
        // evaluation (`Llama::merge_adapters`; a model without adapters merges nothing).
        let _merged = model.model.merge_adapters()?;
        let mut policy = ModelPolicy::new(model, params.clone(), args.seed);
        policy.checkpoint = ckpt.clone();
        let records = run_empathy(sim.as_ref(), &catalog, &mut policy, &ids, args.seed, true)?;
        let mut w = EpisodeWriter::create(&args.out.join(format!("episodes-{i}.jsonl")))?;
        for r in &records {
            w.write(r)?;
            rows.push((name.clone(), r.clone()));
        }
        print_simulator_failures(&records);
        scores.push(score(name, &records));
    }
    let summary = summary_table(&scores);
    std::fs::write(args.out.join("empathy.md"), summary.to_markdown())?;
    per_profile_table(&rows).write_csv(&args.out.join("empathy.csv"))?;
    std::fs::write(args.out.join(CHART_FILE), empathy_chart(&rows).to_svg())?;
    println!("{}", summary.to_markdown());
    println!(
        "written to {} (empathy.md, empathy.csv, {CHART_FILE}, episodes-N.jsonl in model order)",
        args.out.display()
    );
    Ok(())
}

/// Loads `base` (the base model) or a run/checkpoint directory.
fn load_named(spec: &Path, base: &Option<PathBuf>) -> anyhow::Result<ChatModel> {
    if spec == Path::new("base") {
        let path = base.clone().unwrap_or_else(default_policy_path);
        return Ok(load_model(
            &path,
            &candle_core::Device::Cpu,
            &LoadOptions::default(),
        )?);
    }
    Ok(empathy_gym::learning::train::load_checkpoint_policy(spec)?.0)
}

pub fn factual(args: &FactualArgs) -> anyhow::Result<()> {
    use empathy_gym::eval::factual::{
        build_report, load_answers, load_qa, model_answerer::ModelAnswerer, rescore,
        run_factual_records, spread, write_answers,
    };
    use empathy_gym::eval::factual::{ConditionGrid, Contexts, ModelOutcomes, ReportConfig};
    let mut items = load_qa(&args.qa)?;
    items.truncate(args.limit.unwrap_or(items.len()));
    if let Some(n) = args.sample {
        items = spread(items, n);
    }
    let grid = ConditionGrid::new(Contexts::load(&args.contexts)?, args.seed);
    let params = sampling(args.temperature, 1.0, args.max_new_tokens);
    let mut specs: Vec<Named> = Vec::new();
    specs.extend(args.baseline.clone());
    if args.checkpoint.is_empty() {
        specs.push("base".parse().map_err(anyhow::Error::msg)?);
    }
    specs.extend(args.checkpoint.iter().cloned());
    let mut seen = std::collections::HashSet::new();
    specs.retain(|s| seen.insert(s.name.clone()));
    refuse_overwriting_inputs(&specs, &args.out)?;
    std::fs::create_dir_all(&args.out)?;
    let mut models = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        eprintln!(
            "factual suite: {}, {} items x 18 conditions",
            spec.name,
            items.len()
        );
        let started = std::time::Instant::now();
        let records = if is_recorded(spec) {
            rescore(&grid, &items, load_answers(&spec.path)?, &spec.path)?
        } else {
            let model = load_named(&spec.path, &args.model)?;
            let _merged = model.model.merge_adapters()?;
            let mut answerer = ModelAnswerer::new(&model, params.clone(), args.seed);
            run_factual_records(&grid, &items, &mut answerer, args.batch_items, true)?
        };
        eprintln!(
            "  {} prompts in {:.1} min",
            records.len(),
            started.elapsed().as_secs_f64() / 60.0
        );
        write_answers(&args.out.join(format!("answers-{i}.jsonl")), &records)?;
        models.push(ModelOutcomes {
            name: spec.name.clone(),
            outcomes: records.into_iter().map(|r| r.outcome).collect(),
        });
    }
    let cfg = ReportConfig {
        baseline: Some(specs[0].name.clone()),
        non_answers: args.non_answers,
        ..Default::default()
    };
    let report = build_report(&grid.all_prompts(&items), &models, &cfg)?;
    let files = report.write(&args.out)?;
    println!("{}", report.to_markdown());
    for f in files {
        println!("wrote {}", f.display());
    }
    println!("answers-N.jsonl: every prompt, reply and outcome, in model order");
    Ok(())
}

/// Whether two paths name the same existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// An answers-N.jsonl written by an earlier `eval factual` (re-scored, not answered again).
fn is_recorded(spec: &Named) -> bool {
    spec.path.extension().is_some_and(|e| e == "jsonl")
}

/// Model i writes `out/answers-{i}.jsonl`: refuse before anything runs if that is an input file.
fn refuse_overwriting_inputs(specs: &[Named], out: &Path) -> anyhow::Result<()> {
    for i in 0..specs.len() {
        let target = out.join(format!("answers-{i}.jsonl"));
        if let Some(input) = specs
            .iter()
            .find(|o| is_recorded(o) && same_file(&o.path, &target))
        {
            return Err(empathy_gym::Error::input(
                out,
                "--out",
                format!(
                    "answers-{i}.jsonl would overwrite {}, which is read as input; choose another --out",
                    input.path.display()
                ),
            )
            .into());
        }
    }
    Ok(())
}
