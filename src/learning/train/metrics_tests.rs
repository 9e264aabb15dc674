//! Unit tests of the metrics CSV.

use std::io::Write;

use super::*;

fn row(step: u64) -> StepMetrics {
    StepMetrics {
        step,
        reward_mean: 0.45,
        reward_std: 0.1,
        frac_reward_zero_std: 0.25,
        final_emotion_mean: 45.0,
        success_rate: 0.125,
        failure_rate: 0.0,
        kl: None,
        clip_frac_low: 0.01,
        clip_frac_high: 0.02,
        entropy: Some(1.5),
        policy_tokens: 1200,
        reply_len_mean: 37.5,
        t_rollout_s: 12.25,
        t_simulate_s: 0.5,
        t_train_s: 3.0,
        t_logprob_s: 0.25,
        t_forward_s: 1.0,
        t_backward_s: 1.5,
        t_optimizer_s: 0.125,
        tokens_per_s: 97.96,
        lr: 1e-5,
        grad_norm: Some(0.75),
        skipped: false,
        adv_mean: 0.0,
        adv_std: 0.5,
        reply_len_delta: None,
        repeat_rate: 0.25,
        kl_sample: Some(0.002),
        value_loss: None,
        explained_var: Some(-0.5),
        value_clip_frac: None,
        extra_draws: 2,
        collapse: true,
        difficulty_level: Some(0.375),
        start_emotion: 43.0,
        hint_rate: 0.625,
        acceptance: 0.1875,
        early_advice_penalty: 8.75,
        generic_credit: 0.625,
        sim_failures: 3,
        unsafe_rate: 0.25,
    }
}

fn lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn row_text_is_pinned() {
    let r = row(3);
    assert_eq!(
        r.to_row(),
        "3,0.45,0.1,0.25,45,0.125,0,,0.01,0.02,1.5,1200,37.5,12.25,0.5,3,0.25,1,1.5,0.125,97.96,0.00001,0.75,0,0,0.5,,0.25,0.002,,-0.5,,2,1,0.375,43,0.625,0.1875,8.75,0.625,3,0.25"
    );
    assert_eq!(header().split(',').count(), 42);
    assert!(header().starts_with("step,reward_mean,reward_std,frac_reward_zero_std"));
    let back = StepMetrics::from_row(&r.to_row(), Path::new("m.csv"), 2).unwrap();
    assert_eq!(back, r);
}

#[test]
fn header_once_and_rows_flushed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("metrics.csv");
    let mut w = MetricsWriter::create(&path).unwrap();
    w.append(&row(1)).unwrap();
    // Readable before the writer is dropped: each row is flushed.
    assert_eq!(lines(&path).len(), 2);
    w.append(&row(2)).unwrap();
    drop(w);
    let mut w = MetricsWriter::resume(&path, 2).unwrap();
    w.append(&row(3)).unwrap();
    let l = lines(&path);
    assert_eq!(l.len(), 4);
    assert_eq!(l.iter().filter(|x| x.starts_with("step,")).count(), 1);
    let steps: Vec<u64> = read_metrics(&path)
        .unwrap()
        .iter()
        .map(|m| m.step)
        .collect();
    assert_eq!(steps, vec![1, 2, 3]);
}

#[test]
fn resume_drops_rows_after_the_checkpoint_and_half_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("metrics.csv");
    let mut w = MetricsWriter::create(&path).unwrap();
    for s in 1..=4 {
        w.append(&row(s)).unwrap();
    }
    drop(w);
    // A crash in the middle of writing row 5.
    let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(b"5,0.4,0.").unwrap();
    drop(f);
    // Resumed from the checkpoint of step 2: rows 3, 4 and the half row go.
    let mut w = MetricsWriter::resume(&path, 2).unwrap();
    let mut skipped = row(3);
    skipped.skipped = true;
    skipped.grad_norm = None;
    w.append(&skipped).unwrap();
    let got = read_metrics(&path).unwrap();
    assert_eq!(
        got.iter().map(|m| m.step).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert_eq!(got[2], skipped);
    // Resume with no file yet creates it.
    let fresh = dir.path().join("new.csv");
    MetricsWriter::resume(&fresh, 7).unwrap();
    assert_eq!(lines(&fresh), vec![header()]);
}

#[test]
fn foreign_header_and_bad_cells_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("metrics.csv");
    fs::write(&path, "step,reward\n1,0.5\n").unwrap();
    let msg = MetricsWriter::resume(&path, 1).err().unwrap().to_string();
    assert!(msg.contains("line 1") && msg.contains("header"), "{msg}");

    let mut text = format!("{}\n{}\n", header(), row(1).to_row());
    text.push_str(&row(2).to_row().replacen("0.45", "abc", 1));
    text.push('\n');
    fs::write(&path, text).unwrap();
    let msg = read_metrics(&path).unwrap_err().to_string();
    assert!(msg.contains("line 3, column reward_mean"), "{msg}");
}

#[test]
fn reports_read_files_of_earlier_versions_but_runs_do_not_resume_on_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("metrics.csv");
    for width in [24, 34, 41] {
        let older = |line: String| line.split(',').take(width).collect::<Vec<_>>().join(",");
        fs::write(
            &path,
            format!("{}\n{}\n", older(header()), older(row(1).to_row())),
        )
        .unwrap();
        let rows = read_metrics(&path).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].step, rows[0].reward_mean), (1, row(1).reward_mean));
        if width < 41 {
            assert!(rows[0].acceptance.is_nan() && rows[0].difficulty_level.is_none());
            assert_eq!(rows[0].sim_failures, 0);
        } else {
            assert_eq!(rows[0].sim_failures, 3);
        }
        assert!(
            rows[0].unsafe_rate.is_nan(),
            "not measured before the unsafe end"
        );
        // Before the stability columns (24): those are unmeasured too.
        assert_eq!(rows[0].adv_mean.is_nan(), width == 24, "width {width}");
        let msg = MetricsWriter::resume(&path, 1).err().unwrap().to_string();
        assert!(msg.contains("differs from this version's columns"), "{msg}");
    }
}
