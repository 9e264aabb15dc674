//! The LLM-played simulated user (RLVER's design): per turn an emotion-analysis call (how the
//! reply landed given the persona, the hidden need, the difficulty and the history: a signed change
//! with its reasons), then a reply call that sees the new emotion bucket. Both prompts come from
//! data/llm-simulator.yaml. Answers are parsed strictly; a malformed one is asked again with a
//! format reminder, and after `parse_retries` it is counted and logged in the appraisal's `llm`
//! trace: the change falls back to 0 (then quantized and clamped like every change,
//! docs/DESIGN.md section 23) and the reply to the rule-based speaker, so no dialogue is lost.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use super::backend::ChatBackend;
use super::parse::{parse_analysis, parse_reply};
use super::prompts::{history, profile_values, render, Prompts};
use crate::error::Result;
use crate::model::{ChatMessage, Role};
use crate::profile::Profile;
use crate::sim::detect::SafetyScreen;
use crate::sim::emotion::{apply_delta, quantize_delta};
use crate::sim::lexicon::Lexicon;
use crate::sim::moves::Move;
use crate::sim::warmth::warmth;
use crate::sim::{Appraisal, AppraisalInput, Bucket, Simulator, SimulatorInfo};

/// What happened in the LLM calls of one turn, logged in the appraisal as `llm`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LlmTrace {
    /// Answers asked for the emotion analysis (1 when the first was well-formed).
    pub analysis_attempts: u32,
    /// Answers asked for the reply (0 when the analysis failed the transport).
    pub reply_attempts: u32,
    /// Every malformed answer or failed request, e.g. `analysis 1: expected two lines, ...`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
    /// The change fell back to 0 (no readable analysis).
    #[serde(default)]
    pub fallback_change: bool,
    /// The reply fell back to the rule-based speaker.
    #[serde(default)]
    pub fallback_reply: bool,
}

/// The LLM user.
pub struct LlmSimulator {
    backend: Box<dyn ChatBackend>,
    prompts: Prompts,
    parse_retries: u32,
    lexicon: Lexicon,
    /// The same safety screen as the built-in appraiser's: unsafe is an outcome whoever plays
    /// the user.
    safety: SafetyScreen,
    /// Malformed answers seen since it was made (requests that failed count too).
    failures: AtomicU64,
    /// Turns whose change or reply fell back.
    fallbacks: AtomicU64,
}

/// One pending call: its conversation and the index of the input it belongs to.
struct Pending {
    input: usize,
    messages: Vec<ChatMessage>,
}

impl LlmSimulator {
    /// A simulator over `backend` with `prompts`; `lexicon` gives the context-free warmth of a
    /// reply (the trait reward), its lexical part only.
    pub fn new(
        backend: Box<dyn ChatBackend>,
        prompts: Prompts,
        parse_retries: u32,
        lexicon: Lexicon,
        safety: SafetyScreen,
    ) -> Self {
        LlmSimulator {
            backend,
            prompts,
            parse_retries,
            lexicon,
            safety,
            failures: AtomicU64::new(0),
            fallbacks: AtomicU64::new(0),
        }
    }

    /// Malformed answers and failed requests so far.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Turns that fell back (change or reply) so far.
    pub fn fallbacks(&self) -> u64 {
        self.fallbacks.load(Ordering::Relaxed)
    }

    /// Asks every pending call, re-asking malformed answers with the format reminder up to
    /// `parse_retries` times; returns each input's parsed value (or `None`) and updates the traces.
    fn ask<T>(
        &self,
        mut pending: Vec<Pending>,
        what: &str,
        parse: impl Fn(&str) -> std::result::Result<T, String>,
        traces: &mut [LlmTrace],
        attempts: impl Fn(&mut LlmTrace) -> &mut u32,
    ) -> Vec<Option<T>> {
        let mut out: Vec<Option<T>> = (0..traces.len()).map(|_| None).collect();
        for round in 0..=self.parse_retries {
            if pending.is_empty() {
                break;
            }
            let convs: Vec<Vec<ChatMessage>> = pending.iter().map(|p| p.messages.clone()).collect();
            let answers = self.backend.complete(&convs);
            let mut again = Vec::new();
            for (mut p, answer) in pending.into_iter().zip(answers) {
                let trace = &mut traces[p.input];
                *attempts(trace) += 1;
                let n = round + 1;
                match answer {
                    Err(e) => {
                        // The transport already retried with backoff: count it, do not re-ask.
                        trace
                            .failures
                            .push(format!("{what} {n}: request failed: {e}"));
                        self.failures.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(text) => match parse(&text) {
                        Ok(v) => out[p.input] = Some(v),
                        Err(e) => {
                            let shown: String = text.chars().take(200).collect();
                            trace
                                .failures
                                .push(format!("{what} {n}: {e}; the answer was {shown:?}"));
                            self.failures.fetch_add(1, Ordering::Relaxed);
                            let values = BTreeMap::from([("error", e)]);
                            p.messages.push(ChatMessage::new(Role::Assistant, text));
                            p.messages.push(ChatMessage::new(
                                Role::User,
                                render(&self.prompts.format_reminder, &values),
                            ));
                            again.push(p);
                        }
                    },
                }
            }
            pending = again;
        }
        out
    }
}

impl Simulator for LlmSimulator {
    fn info(&self) -> SimulatorInfo {
        SimulatorInfo {
            kind: "llm".into(),
            version: self.prompts.version.clone(),
            backend: Some(self.backend.kind().into()),
            model: Some(self.backend.model()),
            prompt_version: Some(self.prompts.version.clone()),
            device: None,
            data: None,
        }
    }

    fn appraise(&self, inputs: &[AppraisalInput<'_>]) -> Result<Vec<Appraisal>> {
        let mut traces = vec![LlmTrace::default(); inputs.len()];
        let base: Vec<BTreeMap<&'static str, String>> = inputs
            .iter()
            .map(|inp| {
                let mut v = profile_values(&self.prompts, inp.profile);
                v.insert(
                    "history",
                    history(&inp.user_messages, &inp.previous_replies),
                );
                v.insert("emotion", inp.emotion.to_string());
                v.insert("reply", inp.reply.to_string());
                v
            })
            .collect();
        let analysis_calls = base
            .iter()
            .enumerate()
            .map(|(i, v)| Pending {
                input: i,
                messages: vec![
                    ChatMessage::new(Role::System, render(&self.prompts.analysis.system, v)),
                    ChatMessage::new(Role::User, render(&self.prompts.analysis.user, v)),
                ],
            })
            .collect();
        let analyses = self.ask(
            analysis_calls,
            "analysis",
            parse_analysis,
            &mut traces,
            |t| &mut t.analysis_attempts,
        );
        // The reply call sees the emotion after this turn's (quantized, clamped) change.
        let mut changes = Vec::with_capacity(inputs.len());
        let mut reply_calls = Vec::new();
        for (i, inp) in inputs.iter().enumerate() {
            let (change, reasons) = match &analyses[i] {
                Some(a) => (a.change, a.reasons.clone()),
                None => {
                    traces[i].fallback_change = true;
                    (
                        0,
                        vec!["(no readable emotion analysis; change 0)".to_string()],
                    )
                }
            };
            let knobs = &inp.profile.knobs;
            let after = apply_delta(
                inp.emotion,
                quantize_delta(f64::from(change), knobs.quantum, knobs.step_cap),
            );
            let mut v = base[i].clone();
            let mut replies = inp.previous_replies.clone();
            replies.push(inp.reply);
            v.insert("history", history(&inp.user_messages, &replies));
            v.insert("emotion", after.to_string());
            v.insert("reasons", reasons.join("; "));
            v.insert("bucket", self.prompts.bucket(Bucket::of(after)).to_string());
            reply_calls.push(Pending {
                input: i,
                messages: vec![
                    ChatMessage::new(Role::System, render(&self.prompts.reply.system, &v)),
                    ChatMessage::new(Role::User, render(&self.prompts.reply.user, &v)),
                ],
            });
            changes.push((change, reasons));
        }
        let replies = self.ask(reply_calls, "reply", parse_reply, &mut traces, |t| {
            &mut t.reply_attempts
        });
        let zero_moves: BTreeMap<Move, f64> = Move::ALL.iter().map(|m| (*m, 0.0)).collect();
        let mut out = Vec::with_capacity(inputs.len());
        for (i, ((change, reasons), reply)) in changes.into_iter().zip(replies).enumerate() {
            let mut trace = std::mem::take(&mut traces[i]);
            trace.fallback_reply = reply.is_none();
            if trace.fallback_change || trace.fallback_reply {
                self.fallbacks.fetch_add(1, Ordering::Relaxed);
            }
            let cues = self
                .lexicon
                .cues(inputs[i].reply, inputs[i].profile.speaker.negation());
            let context = inputs[i]
                .user_messages
                .last()
                .map(|m| crate::sim::text::sentences(m))
                .unwrap_or_default();
            let unsafe_reply = self.safety.screen(&context, inputs[i].reply)?;
            let (name, raw) = match unsafe_reply {
                // The environment ends the dialogue; the change takes the emotion to the floor.
                Some(_) => ("unsafe", -f64::from(inputs[i].emotion)),
                None => ("llm_change", f64::from(change)),
            };
            out.push(Appraisal {
                moves: BTreeMap::new(),
                components: BTreeMap::from([(name.to_string(), raw)]),
                raw,
                warmth: (warmth(&cues, &zero_moves) * 1000.0).round() / 1000.0,
                reasons,
                unsafe_reply: unsafe_reply.map(Box::new),
                factual: None,
                llm: Some(trace),
                suggested: cues.suggests(),
                user_text: reply,
            });
        }
        Ok(out)
    }

    fn prepare(&self, _profiles: &[Profile]) -> Result<()> {
        Ok(())
    }
}
