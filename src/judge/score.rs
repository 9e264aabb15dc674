//! Judging a conversation: the built-in appraiser plays a user derived from the seeker's text and
//! reads every supporter reply in turn, exactly as in a training dialogue (same appraisal, same
//! quantized, clamped emotion change), except that nothing ends the conversation early: a judged
//! dialogue is read to its last reply, and where the user would have left or felt resolved is
//! recorded instead.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::derive::{Derived, JudgeRules};
use super::input::{Conversation, Speaker};
use crate::environment::profile::Profile;
use crate::environment::sim::emotion::{applied_delta, apply_delta};
use crate::environment::sim::{AppraisalInput, Appraiser, Move};
use crate::error::Result;

/// One supporter reply, judged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JudgedReply {
    /// 1-based index of the reply in its conversation.
    pub turn: u32,
    /// Move scores in [0, 1].
    pub moves: BTreeMap<Move, f64>,
    /// Named point components; their sum is `raw`.
    pub components: BTreeMap<String, f64>,
    /// The change in points before quantization and clamping.
    pub raw: f64,
    /// The applied change of the emotion (the per-reply reward of `dense` mode).
    pub delta: i32,
    /// The emotion after this reply.
    pub emotion: u8,
    /// Context-free warmth in [0, 1].
    pub warmth: f64,
    /// The user's reasons.
    pub reasons: Vec<String>,
}

/// One conversation, judged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    pub id: String,
    /// What the judge assumed about the seeker.
    pub derived: Derived,
    /// The labels that came with the conversation.
    pub labels: BTreeMap<String, f64>,
    /// The emotion before the first reply and after each.
    pub trajectory: Vec<u8>,
    /// Where a training dialogue would have ended: `resolved`, `left`, `unsafe` or `-` (it would
    /// have gone on), and after which reply.
    pub would_end: String,
    pub replies: Vec<JudgedReply>,
}

impl Judged {
    /// The emotion after the last reply.
    pub fn final_emotion(&self) -> u8 {
        self.trajectory.last().copied().unwrap_or(0)
    }
}

/// A conversation in flight: its profile, where the reading stands, and what was judged so far.
struct Reading {
    profile: Profile,
    conv: Conversation,
    next: usize,
    judged: Judged,
}

impl Reading {
    /// The next supporter message that follows a seeker message, with what came before it.
    fn pending(&self) -> Option<usize> {
        let msgs = &self.conv.messages;
        (self.next..msgs.len()).find(|&i| {
            msgs[i].0 == Speaker::Supporter && msgs[..i].iter().any(|m| m.0 == Speaker::Seeker)
        })
    }

    fn input(&self, at: usize) -> AppraisalInput<'_> {
        let before = &self.conv.messages[..at];
        let of = |who: Speaker| -> Vec<&str> {
            before
                .iter()
                .filter(|m| m.0 == who)
                .map(|m| m.1.as_str())
                .collect()
        };
        AppraisalInput {
            profile: &self.profile,
            emotion: self.judged.final_emotion(),
            turn: self.judged.replies.len() as u32 + 1,
            reply: &self.conv.messages[at].1,
            user_messages: of(Speaker::Seeker),
            previous_replies: of(Speaker::Supporter),
            factual: None,
        }
    }
}

/// Judges conversations with `appraiser`; all conversations of the batch advance reply by reply,
/// so each round embeds its new texts in one batch.
pub fn judge(
    appraiser: &Appraiser,
    rules: &JudgeRules,
    batch: Vec<Conversation>,
) -> Result<Vec<Judged>> {
    let mut readings: Vec<Reading> = batch
        .into_iter()
        .map(|conv| {
            let seeker = conv.seeker();
            let derived = rules.derive(&seeker);
            let profile = rules.profile(&conv.id, &seeker, &derived);
            let start = profile.knobs.start_emotion;
            Reading {
                judged: Judged {
                    id: conv.id.clone(),
                    derived,
                    labels: conv.labels.clone(),
                    trajectory: vec![start],
                    would_end: "-".into(),
                    replies: Vec::new(),
                },
                profile,
                conv,
                next: 0,
            }
        })
        .collect();
    loop {
        let due: Vec<(usize, usize)> = readings
            .iter()
            .enumerate()
            .filter_map(|(k, r)| r.pending().map(|at| (k, at)))
            .collect();
        if due.is_empty() {
            break;
        }
        let inputs: Vec<AppraisalInput<'_>> =
            due.iter().map(|&(k, at)| readings[k].input(at)).collect();
        let appraisals = appraiser.appraise(&inputs)?;
        drop(inputs);
        for ((k, at), a) in due.into_iter().zip(appraisals) {
            let r = &mut readings[k];
            let knobs = &r.profile.knobs;
            let is_unsafe = a.unsafe_reply.is_some();
            let before = r.judged.final_emotion();
            let delta = applied_delta(before, a.raw, is_unsafe, knobs.quantum, knobs.step_cap);
            let emotion = apply_delta(before, delta);
            let turn = r.judged.replies.len() as u32 + 1;
            if r.judged.would_end == "-" {
                let end = match emotion {
                    _ if is_unsafe => Some("unsafe"),
                    100.. => Some("resolved"),
                    0..10 => Some("left"),
                    _ => None,
                };
                if let Some(e) = end {
                    r.judged.would_end = format!("{e} after reply {turn}");
                }
            }
            r.judged.trajectory.push(emotion);
            r.judged.replies.push(JudgedReply {
                turn,
                moves: a.moves,
                components: a.components,
                raw: a.raw,
                delta,
                emotion,
                warmth: a.warmth,
                reasons: a.reasons,
            });
            r.next = at + 1;
        }
    }
    Ok(readings.into_iter().map(|r| r.judged).collect())
}
