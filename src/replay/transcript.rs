//! Plain-text transcripts with the emotion curve, for `replay show`.

use crate::environment::episode::{end_word, EpisodeRecord, Turn};

/// A one-line curve of emotions 0-100 with block characters.
pub fn sparkline(values: &[u8]) -> String {
    let values: Vec<f64> = values.iter().map(|&v| f64::from(v)).collect();
    crate::report::sparkline::sparkline_in(&values, 0.0, 100.0)
}

/// A readable transcript: header, turns with emotion and delta, reasons, and the end.
pub fn render_transcript(line: usize, r: &EpisodeRecord) -> String {
    let mut out = format!(
        "── line {line} · {}:{} · {} · seed {} · {} reward {:.3} · end {}\n",
        r.profile.scenario,
        r.profile.persona,
        r.profile.difficulty,
        r.simulator.seed,
        r.reward_mode,
        r.reward.unwrap_or(0.0),
        end_word(r.end)
    );
    let emotions = r.emotions();
    out.push_str(&format!(
        "   emotion {} [{}]\n",
        sparkline(&emotions),
        emotions
            .iter()
            .map(u8::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    ));
    for t in &r.turns {
        match t {
            Turn::User {
                text,
                emotion,
                delta,
                appraisal,
            } => {
                let d = delta.map_or(String::new(), |d| format!(" ({d:+})"));
                out.push_str(&format!("   user [{emotion:>3}{d}]: {text}\n"));
                if let Some(a) = appraisal.as_ref().filter(|a| !a.reasons.is_empty()) {
                    out.push_str(&format!("          why: {}\n", a.reasons.join("; ")));
                }
            }
            Turn::Assistant { text, think } => {
                if let Some(th) = think {
                    out.push_str(&format!("   policy (thinking): {th}\n"));
                }
                out.push_str(&format!("   policy: {text}\n"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn sparkline_spans_the_range() {
        // 0 -> index 0, 50 -> (350+50)/100 = 4, 100 -> 7
        assert_eq!(super::sparkline(&[0, 50, 100]), "▁▅█");
    }
}
