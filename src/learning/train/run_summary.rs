//! The end-of-run summary a person reads: the first and the last quarter of the steps compared
//! (one step is too noisy to compare with another), the reward curve as a sparkline, and a
//! typical dialogue of the first step beside one of the last.

use super::metrics::StepMetrics;
use crate::environment::episode::{component_share, end_word, EpisodeRecord, Turn};
use crate::report::sparkline::sparkline;
use crate::report::Table;

/// Means over a run of steps.
#[derive(Debug, Clone, PartialEq)]
pub struct StepSpan {
    /// First and last step of the span.
    pub steps: (u64, u64),
    pub reward: f64,
    pub final_emotion: f64,
    pub reply_len: f64,
}

impl StepSpan {
    fn of(rows: &[StepMetrics]) -> Self {
        let mean = |f: fn(&StepMetrics) -> f64| rows.iter().map(f).sum::<f64>() / rows.len() as f64;
        StepSpan {
            steps: (rows[0].step, rows[rows.len() - 1].step),
            reward: mean(|m| m.reward_mean),
            final_emotion: mean(|m| m.final_emotion_mean),
            reply_len: mean(|m| m.reply_len_mean),
        }
    }

    fn label(&self) -> String {
        match self.steps {
            (a, b) if a == b => format!("step {a}"),
            (a, b) => format!("steps {a}-{b}"),
        }
    }
}

/// The first and the last quarter of `rows` (a quarter is at least one step, so with fewer than
/// four steps the first step is compared with the last); `None` for no rows.
pub fn quarters(rows: &[StepMetrics]) -> Option<(StepSpan, StepSpan)> {
    if rows.is_empty() {
        return None;
    }
    let q = (rows.len() / 4).max(1);
    Some((
        StepSpan::of(&rows[..q]),
        StepSpan::of(&rows[rows.len() - q..]),
    ))
}

/// The quarters as a table: metric, first quarter, last quarter, change.
pub fn quarter_table(first: &StepSpan, last: &StepSpan) -> Table {
    let mut t = Table::new([
        "metric".to_string(),
        first.label(),
        last.label(),
        "change".to_string(),
    ]);
    let rows: [(&str, f64, f64, usize); 3] = [
        ("mean reward", first.reward, last.reward, 3),
        (
            "mean final emotion",
            first.final_emotion,
            last.final_emotion,
            1,
        ),
        (
            "mean reply length (tokens)",
            first.reply_len,
            last.reply_len,
            1,
        ),
    ];
    for (name, a, b, d) in rows {
        t.push_row([
            name.to_string(),
            format!("{a:.d$}"),
            format!("{b:.d$}"),
            format!("{:+.d$}", b - a),
        ]);
    }
    t
}

/// The dialogue of `step` whose reward is the step's median (the lower middle one for an even
/// count; ties by log order): a typical dialogue, not the best.
pub fn typical_dialogue(episodes: &[EpisodeRecord], step: u64) -> Option<&EpisodeRecord> {
    let mut of_step: Vec<&EpisodeRecord> = episodes.iter().filter(|e| e.step == step).collect();
    of_step.sort_by(|a, b| a.reward.unwrap_or(0.0).total_cmp(&b.reward.unwrap_or(0.0)));
    of_step.get(of_step.len().saturating_sub(1) / 2).copied()
}

/// `text` broken into lines of at most `width` characters at spaces (a longer word is cut).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let mut word = word.to_string();
        while word.chars().count() > width {
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            let cut: String = word.chars().take(width).collect();
            word = word.chars().skip(width).collect();
            lines.push(cut);
        }
        let needed = line.chars().count() + usize::from(!line.is_empty()) + word.chars().count();
        if needed > width && !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// A dialogue as lines of at most `width` characters: a header, then each turn (the user with
/// the emotion after it, the policy), then the end.
pub fn dialogue_lines(title: &str, r: &EpisodeRecord, width: usize) -> Vec<String> {
    let mut out = wrap(
        &format!(
            "{title}: {}:{}, reward {:.3}",
            r.profile.scenario,
            r.profile.persona,
            r.reward.unwrap_or(0.0)
        ),
        width,
    );
    for turn in &r.turns {
        let (who, text) = match turn {
            Turn::User { text, emotion, .. } => (format!("user ({emotion}):"), text),
            Turn::Assistant { text, .. } => ("policy:".to_string(), text),
        };
        out.extend(wrap(&format!("{who} {text}"), width));
    }
    out.push(format!("end: {}", end_word(r.end)));
    out
}

/// Two blocks of lines side by side, the left padded to `width`, separated by " │ ".
pub fn side_by_side(left: &[String], right: &[String], width: usize) -> String {
    let mut out = String::new();
    for i in 0..left.len().max(right.len()) {
        let l = left.get(i).map_or("", String::as_str);
        let r = right.get(i).map_or("", String::as_str);
        let pad = width.saturating_sub(l.chars().count());
        out.push_str(format!("{l}{} │ {r}", " ".repeat(pad)).trim_end());
        out.push('\n');
    }
    out
}

/// Columns of each dialogue in the side-by-side view.
const DIALOGUE_WIDTH: usize = 46;

/// The whole summary: the quarter table, the reward sparkline, and the typical dialogues of the
/// first and last step side by side (when the log has them).
pub fn end_summary(rows: &[StepMetrics], episodes: &[EpisodeRecord]) -> String {
    let Some((first, last)) = quarters(rows) else {
        return String::new();
    };
    let rewards: Vec<f64> = rows.iter().map(|m| m.reward_mean).collect();
    let mut out = format!(
        "{}\nmean reward per step, steps {}-{}: {}  (from {:.3} to {:.3})\n",
        quarter_table(&first, &last).to_markdown(),
        first.steps.0,
        last.steps.1,
        sparkline(&rewards),
        rewards[0],
        rewards[rewards.len() - 1]
    );
    let (a, b) = (first.steps.0, last.steps.1);
    let in_span = |s: &StepSpan| {
        component_share(
            episodes
                .iter()
                .filter(|e| (s.steps.0..=s.steps.1).contains(&e.step)),
            "cut_off",
        )
    };
    if let (Some(x), Some(y)) = (in_span(&first), in_span(&last)) {
        out.push_str(&format!(
            "replies cut off mid-sentence: {:.0}% in {}, {:.0}% in {}\n",
            100.0 * x,
            first.label(),
            100.0 * y,
            last.label()
        ));
    }
    if let (Some(early), Some(late)) =
        (typical_dialogue(episodes, a), typical_dialogue(episodes, b))
    {
        out.push_str(&format!(
            "\na typical dialogue (the median reward) of the first and of the last step:\n\n{}",
            side_by_side(
                &dialogue_lines(&format!("step {a}"), early, DIALOGUE_WIDTH),
                &dialogue_lines(&format!("step {b}"), late, DIALOGUE_WIDTH),
                DIALOGUE_WIDTH
            )
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(step: u64, reward: f64, emotion: f64, len: f64) -> StepMetrics {
        StepMetrics {
            step,
            reward_mean: reward,
            final_emotion_mean: emotion,
            reply_len_mean: len,
            ..StepMetrics::default()
        }
    }

    #[test]
    fn quarters_average_the_first_and_last_quarter_of_steps() {
        // 8 steps: quarters of 2. First: rewards 0.30, 0.32 -> 0.31; last: 0.36, 0.40 -> 0.38.
        let rewards = [0.30, 0.32, 0.2, 0.5, 0.1, 0.9, 0.36, 0.40];
        let rows: Vec<_> = (1..=8)
            .map(|s| row(s, rewards[s as usize - 1], 10.0 * s as f64, 20.0))
            .collect();
        let (first, last) = quarters(&rows).unwrap();
        assert_eq!(first.steps, (1, 2));
        assert_eq!(last.steps, (7, 8));
        assert!((first.reward - 0.31).abs() < 1e-12);
        assert!((last.reward - 0.38).abs() < 1e-12);
        assert!((first.final_emotion - 15.0).abs() < 1e-12);
        assert!((last.final_emotion - 75.0).abs() < 1e-12);
        let md = quarter_table(&first, &last).to_markdown();
        assert!(
            md.contains("| mean reward | 0.310 | 0.380 | +0.070 |"),
            "{md}"
        );
        assert!(md.contains("steps 1-2") && md.contains("steps 7-8"), "{md}");
        // Fewer than four steps: the first against the last.
        let (f, l) = quarters(&rows[..3]).unwrap();
        assert_eq!((f.steps, l.steps), ((1, 1), (3, 3)));
        assert!(quarters(&[]).is_none());
    }

    #[test]
    fn wrap_breaks_at_spaces_and_cuts_long_words() {
        assert_eq!(wrap("aa bb cc", 5), ["aa bb", "cc"]);
        assert_eq!(wrap("abcdefg h", 3), ["abc", "def", "g h"]);
        assert_eq!(wrap("", 4), [""]);
    }

    #[test]
    fn side_by_side_pads_the_left_column() {
        let l = vec!["ab".to_string(), "c".to_string()];
        let r = vec!["x".to_string()];
        assert_eq!(side_by_side(&l, &r, 3), "ab  │ x\nc   │\n");
    }
}
