//! `sft` on a tiny random Llama written on the fly and a dialogue file the test writes: the logged
//! loss is the mean negative log-likelihood of exactly the supporter tokens (checked against the
//! model's own log-probs at positions found from the rendered text), it falls, a run stopped and
//! resumed ends bit for bit where an uninterrupted run ends, and the command leaves a run that
//! `export` merges into a model GRPO can start from.

use std::path::{Path, PathBuf};

use anyhow::Result;
use candle_core::Device;
use empathy_gym::learning::sft::{read_corpus, read_rows, SftParts, SftTrainer, SFT_FILE};
use empathy_gym::learning::train::{device, export_run, load_policy, TrainConfig};
use empathy_gym::model::{load_model, AdapterMode, LoadOptions, Pass};

use crate::common::output_of;
use crate::train::tiny_model_dir;

/// Three dialogues in ESConv's JSON shape; the first opens with a supporter's greeting.
const DIALOGUES: &str = r#"[
 {"dialog": [
   {"speaker": "supporter", "content": "Hello there"},
   {"speaker": "seeker", "content": "I lost my job today"},
   {"speaker": "supporter", "content": "That sounds really hard"},
   {"speaker": "seeker", "content": "It is"},
   {"speaker": "supporter", "content": "What happened?"}]},
 {"dialog": [
   {"speaker": "seeker", "content": "My sister stopped calling me"},
   {"speaker": "supporter", "content": "You miss her"}]},
 {"dialog": [
   {"speaker": "seeker", "content": "Exams are next week"},
   {"speaker": "supporter", "content": "How are you holding up?"},
   {"speaker": "seeker", "content": "Badly"}]}
]"#;

fn write_dialogues(dir: &Path) -> Result<PathBuf> {
    let path = dir.join("dialogues.json");
    std::fs::write(&path, DIALOGUES)?;
    Ok(path)
}

/// A config over the fixture: every example in every batch, nothing held out unless asked.
fn config(model: &Path, data: &Path, results: &Path, extra: &str) -> Result<TrainConfig> {
    let text = format!(
        "run: s\nresults_dir: {}\nmodel:\n  path: {}\noptim:\n  lr: 0.01\n\
         sft:\n  dialogues: [{}]\n  batch: 3\n  micro_batch: 2\n  validation_share: 0\n  \
         steps: 4\n  turns_per_example: 2\ncheckpoint:\n  every: 2\n{extra}",
        results.display(),
        model.display(),
        data.display()
    );
    Ok(TrainConfig::from_yaml(&text, Path::new("sft.yaml"), &[])?)
}

fn trainer(cfg: TrainConfig, resume: bool) -> Result<SftTrainer> {
    let corpus = read_corpus(&cfg.file.sft, cfg.file.seed, Path::new("sft.yaml"))?;
    let model = load_policy(&cfg, &device(&cfg)?)?;
    let parts = SftParts {
        cfg,
        model,
        corpus,
        progress: false,
    };
    Ok(if resume {
        SftTrainer::resume(parts)?
    } else {
        SftTrainer::start(parts)?
    })
}

/// The fixture's examples as (seeker, supporter) turns, in windows of two supporter turns.
const EXAMPLES: [&[(&str, &str)]; 3] = [
    &[
        ("I lost my job today", "That sounds really hard"),
        ("It is", "What happened?"),
    ],
    &[("My sister stopped calling me", "You miss her")],
    &[("Exams are next week", "How are you holding up?")],
];

#[test]
fn the_loss_is_the_mean_log_likelihood_of_the_supporter_tokens_and_falls() -> Result<()> {
    let model_dir = tiny_model_dir()?;
    let tmp = tempfile::tempdir()?;
    let data = write_dialogues(tmp.path())?;
    let cfg = config(model_dir.path(), &data, tmp.path(), "")?;
    let mut t = trainer(cfg, false)?;
    assert_eq!(t.sizes(), (3, 0, 0));
    // Independently: render each example, find each supporter turn's tokens (its text and the
    // <|im_end|> after it) by tokenizing the prefix before it, and average -log p over them.
    let m = t.model();
    let (mut sum, mut count) = (0.0f64, 0usize);
    for turns in EXAMPLES {
        let mut text = format!(
            "<|im_start|>system\n{}<|im_end|>\n",
            empathy_gym::environment::episode::model_policy::DEFAULT_SYSTEM
        );
        let mut targets = Vec::new();
        for (seeker, supporter) in turns {
            text.push_str(&format!(
                "<|im_start|>user\n{seeker}<|im_end|>\n<|im_start|>assistant\n"
            ));
            let start = m.encode(&text)?.len();
            text.push_str(&format!("{supporter}<|im_end|>"));
            targets.extend(start..m.encode(&text)?.len());
            text.push('\n');
        }
        let ids = m.encode(text.trim_end())?;
        let lp = m
            .token_logprobs(&[ids], AdapterMode::Off, Pass::Infer)?
            .squeeze(0)?
            .to_vec1::<f32>()?;
        // Column c of the log-probs predicts token c + 1.
        sum -= targets.iter().map(|&k| lp[k - 1] as f64).sum::<f64>();
        count += targets.len();
    }
    let row = t.step()?;
    assert_eq!(row.tokens, count);
    let (first, expected) = (row.loss.unwrap(), sum / count as f64);
    assert!(
        (first - expected).abs() < 1e-4 * expected,
        "logged {first} against {expected} by hand"
    );
    let mut last = first;
    for _ in 0..5 {
        last = t.step()?.loss.unwrap();
    }
    assert!(
        last < 0.8 * first,
        "six steps on three examples: {first} -> {last}"
    );
    Ok(())
}

#[test]
fn a_stopped_and_resumed_sft_ends_where_an_uninterrupted_one_ends() -> Result<()> {
    let model_dir = tiny_model_dir()?;
    let tmp = tempfile::tempdir()?;
    let data = write_dialogues(tmp.path())?;
    // With LoRA dropout, so the masks' seeds are restored too.
    let extra = "lora:\n  dropout: 0.1\n";
    let straight = tmp.path().join("straight");
    let cfg = config(model_dir.path(), &data, &straight, extra)?;
    let mut a = trainer(cfg.clone(), false)?;
    a.run(None)?;
    let stopped = tmp.path().join("stopped");
    let cfg_b = config(model_dir.path(), &data, &stopped, extra)?;
    trainer(cfg_b.clone(), false)?.run(Some(3))?;
    // A crash after step 3's row and before its checkpoint: `latest` still names step 2.
    std::fs::write(stopped.join("s/checkpoints/latest"), "step-2\n")?;
    let mut b = trainer(cfg_b, true)?;
    assert_eq!(b.steps_done(), 2);
    b.run(None)?;
    for ((name, x), (_, y)) in a.model().trainable().iter().zip(b.model().trainable()) {
        let (x, y) = (
            x.as_tensor().flatten_all()?.to_vec1::<f32>()?,
            y.as_tensor().flatten_all()?.to_vec1::<f32>()?,
        );
        assert_eq!(x, y, "{name} differs after resume");
    }
    let rows = |dir: &Path| -> Result<Vec<(u64, Option<f64>, usize)>> {
        Ok(read_rows(&dir.join("s").join(SFT_FILE))?
            .into_iter()
            .map(|r| (r.step, r.loss, r.tokens))
            .collect())
    };
    assert_eq!(rows(&straight)?, rows(&stopped)?);
    assert_eq!(rows(&stopped)?.len(), 4, "step 3's first row was dropped");
    Ok(())
}

#[test]
fn the_command_leaves_a_run_that_export_merges_for_grpo() -> Result<()> {
    let model_dir = tiny_model_dir()?;
    let tmp = tempfile::tempdir()?;
    let data = write_dialogues(tmp.path())?;
    let cfg_path = tmp.path().join("sft.yaml");
    std::fs::write(
        &cfg_path,
        format!(
            "run: s\nresults_dir: {}\nmodel:\n  path: {}\nsft:\n  dialogues: [{}]\n  steps: 2\n  \
             batch: 2\n  validation_share: 0.5\n",
            tmp.path().display(),
            model_dir.path().display(),
            data.display()
        ),
    )?;
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_empathy-gym"))
            .args(args)
            .output()
    };
    let o = run(&["sft", "--config", cfg_path.to_str().unwrap(), "--quiet"])?;
    let out = output_of(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("loss on the training batch"), "{out}");
    assert!(out.contains("empathy-gym export"), "{out}");
    // Row 0 holds the held-out loss before any update; the last row, the one after.
    let rows = read_rows(&tmp.path().join("s").join(SFT_FILE))?;
    assert_eq!((rows[0].step, rows[0].loss), (0, None));
    assert!(rows[0].validation_loss.is_some() && rows[2].validation_loss.is_some());
    assert!(out.contains("loss on the held-out dialogues"), "{out}");
    let merged = tmp.path().join("merged");
    export_run(&tmp.path().join("s"), &merged)?;
    let m = load_model(&merged, &Device::Cpu, &LoadOptions::default())?;
    assert!(!m.encode("hello")?.is_empty());
    // No data: the error names the file and the field.
    std::fs::write(
        &cfg_path,
        format!("run: t\nresults_dir: {}\n", tmp.path().display()),
    )?;
    let o = run(&["sft", "--config", cfg_path.to_str().unwrap(), "--quiet"])?;
    let out = output_of(&o);
    assert!(!o.status.success());
    assert!(
        out.contains("sft.yaml") && out.contains("sft.dialogues"),
        "{out}"
    );
    Ok(())
}
