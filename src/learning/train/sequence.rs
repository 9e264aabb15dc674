//! A dialogue as ONE token sequence; the loss covers policy tokens only (docs/DESIGN.md
//! section 9).
//!
//! The sequence is built by concatenation, turn by turn, exactly as the policy saw it: the first
//! prompt (system + opening, chat template with generation prompt), then the sampled reply ids,
//! then the template text between that reply and the next one (end of turn, the user's message,
//! the next generation prompt), then the next sampled ids, and so on. Every prompt the policy was
//! sampled from is a prefix of this sequence, so the training log-probs are those of the tokens
//! actually sampled, in the context actually seen: no re-tokenization of decoded text, which is not
//! guaranteed to give back the sampled ids.
//!
//! Sampled tokens are "policy" tokens (trained on); everything else is context (masked out).

use std::ops::Range;

use crate::model::{ChatMessage, ChatTemplate, Role};

/// A placeholder for an assistant reply when rendering the text that follows it; it contains no
/// whitespace (Llama 3 trims contents) and cannot occur in real dialogue text.
const SENTINEL: &str = "\u{1}EMPATHY_GYM_REPLY\u{1}";

/// One dialogue's tokens and which of them the policy sampled.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TokenSequence {
    ids: Vec<u32>,
    sampled: Vec<bool>,
    replies: Vec<Range<usize>>,
}

impl TokenSequence {
    /// An empty sequence.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends tokens the policy did not sample (system, user, template tokens).
    pub fn push_context(&mut self, ids: &[u32]) {
        self.ids.extend_from_slice(ids);
        self.sampled.extend(std::iter::repeat_n(false, ids.len()));
    }

    /// Appends one reply the policy sampled (its stop token included, when it stopped).
    pub fn push_reply(&mut self, ids: &[u32]) {
        let start = self.ids.len();
        self.ids.extend_from_slice(ids);
        self.sampled.extend(std::iter::repeat_n(true, ids.len()));
        self.replies.push(start..self.ids.len());
    }

    /// All token ids.
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// Per token: true when the policy sampled it.
    pub fn sampled(&self) -> &[bool] {
        &self.sampled
    }

    /// The positions of each reply's sampled ids, in order.
    pub fn replies(&self) -> &[Range<usize>] {
        &self.replies
    }

    /// The sampled ids of reply `i` (0-based).
    pub fn reply_ids(&self, i: usize) -> Option<&[u32]> {
        self.replies.get(i).map(|r| &self.ids[r.clone()])
    }

    /// Number of policy (sampled) tokens.
    pub fn policy_tokens(&self) -> usize {
        self.sampled.iter().filter(|&&s| s).count()
    }

    /// The loss mask aligned with `token_logprobs`' output, whose column t is
    /// log p(ids[t+1] | ids[..=t]): column t is 1 when token t+1 was sampled. Length `len - 1`
    /// (empty for fewer than two tokens).
    pub fn target_mask(&self) -> Vec<f32> {
        self.sampled
            .iter()
            .skip(1)
            .map(|&s| if s { 1.0 } else { 0.0 })
            .collect()
    }
}

/// Masks of several sequences, right-padded with zeros to `width` columns, row after row (the
/// layout of a `[B, width]` tensor).
pub fn padded_masks(seqs: &[&TokenSequence], width: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(seqs.len() * width);
    for s in seqs {
        let m = s.target_mask();
        let n = m.len().min(width);
        out.extend_from_slice(&m[..n]);
        out.extend(std::iter::repeat_n(0.0, width - n));
    }
    out
}

/// Per-policy-token values of several sequences laid out as right-padded `[B, width]` rows: the
/// values of row i go, in order, to the columns where its target mask is 1; other columns are 0.
pub fn scatter_tokens(seqs: &[&TokenSequence], values: &[Vec<f32>], width: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; seqs.len() * width];
    for (row, (s, v)) in seqs.iter().zip(values).enumerate() {
        let cols = s
            .target_mask()
            .into_iter()
            .enumerate()
            .filter(|&(c, m)| m > 0.0 && c < width)
            .map(|(c, _)| c);
        for (c, &x) in cols.zip(v) {
            out[row * width + c] = x;
        }
    }
    out
}

/// The inverse of [`scatter_tokens`]: each row's values at its policy-token columns, in order.
pub fn gather_tokens(seqs: &[&TokenSequence], rows: &[f32], width: usize) -> Vec<Vec<f32>> {
    seqs.iter()
        .enumerate()
        .map(|(row, s)| {
            s.target_mask()
                .into_iter()
                .enumerate()
                .filter(|&(c, m)| m > 0.0 && c < width)
                .map(|(c, _)| rows[row * width + c])
                .collect()
        })
        .collect()
}

/// The template text that follows the last assistant reply of `messages` up to where the next
/// reply starts: the end-of-turn marker, the later messages (the user's answer) and the
/// generation prompt. `messages` must contain an assistant message; its content is irrelevant.
/// When the reply ended with the stop token `stop_text` and the text starts with it, that prefix
/// is removed (the sampled ids already hold it).
pub fn text_after_reply(
    template: &ChatTemplate,
    messages: &[ChatMessage],
    stop_text: Option<&str>,
) -> Option<String> {
    let last = messages.iter().rposition(|m| m.role == Role::Assistant)?;
    let mut msgs = messages.to_vec();
    msgs[last].content = SENTINEL.to_string();
    let text = template.render(&msgs, true);
    let at = text.rfind(SENTINEL)? + SENTINEL.len();
    let tail = &text[at..];
    Some(match stop_text {
        Some(stop) if !stop.is_empty() => tail.strip_prefix(stop).unwrap_or(tail).to_string(),
        _ => tail.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dialogue() -> TokenSequence {
        // prompt [1, 5, 6], reply [7, 8, 2] (2 = stop), tail [9, 1], reply [10, 2].
        let mut s = TokenSequence::new();
        s.push_context(&[1, 5, 6]);
        s.push_reply(&[7, 8, 2]);
        s.push_context(&[9, 1]);
        s.push_reply(&[10, 2]);
        s
    }

    #[test]
    fn ids_masks_and_replies_follow_the_pushes() {
        let s = dialogue();
        assert_eq!(s.ids(), &[1, 5, 6, 7, 8, 2, 9, 1, 10, 2]);
        assert_eq!(s.policy_tokens(), 5);
        assert_eq!(s.replies(), &[3..6, 8..10]);
        assert_eq!(s.reply_ids(0), Some(&[7, 8, 2][..]));
        assert_eq!(s.reply_ids(1), Some(&[10, 2][..]));
        assert_eq!(s.reply_ids(2), None);
        // Column t predicts token t+1: tokens 3,4,5 and 8,9 were sampled, so columns 2,3,4 and
        // 7,8 are ones; the first prompt token is never a target.
        assert_eq!(
            s.target_mask(),
            vec![0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0]
        );
    }

    #[test]
    fn padded_masks_right_pad_each_row() {
        let mut short = TokenSequence::new();
        short.push_context(&[1]);
        short.push_reply(&[4, 2]);
        let long = dialogue();
        let m = padded_masks(&[&short, &long], 9);
        assert_eq!(&m[..9], &[1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(&m[9..], &long.target_mask()[..]);
        assert!(TokenSequence::new().target_mask().is_empty());
    }

    #[test]
    fn per_token_values_scatter_to_policy_columns_and_back() {
        // dialogue(): policy columns 2, 3, 4, 7, 8 of 9; short: columns 0, 1.
        let mut short = TokenSequence::new();
        short.push_context(&[1]);
        short.push_reply(&[4, 2]);
        let long = dialogue();
        let vals = vec![vec![1.0, 2.0], vec![3.0, 4.0, 5.0, 6.0, 7.0]];
        let flat = scatter_tokens(&[&short, &long], &vals, 9);
        assert_eq!(&flat[..9], &[1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(&flat[9..], &[0.0, 0.0, 3.0, 4.0, 5.0, 0.0, 0.0, 6.0, 7.0]);
        assert_eq!(gather_tokens(&[&short, &long], &flat, 9), vals);
    }

    #[test]
    fn chatml_tail_is_end_of_turn_user_and_generation_prompt() {
        let t = ChatTemplate::ChatMl {
            default_system: None,
        };
        let msgs = [
            ChatMessage::new(Role::System, "S"),
            ChatMessage::new(Role::User, "Hi"),
            ChatMessage::new(Role::Assistant, "whatever was said"),
            ChatMessage::new(Role::User, "I lost my job."),
        ];
        let full = text_after_reply(&t, &msgs, None).unwrap();
        assert_eq!(
            full,
            "<|im_end|>\n<|im_start|>user\nI lost my job.<|im_end|>\n<|im_start|>assistant\n"
        );
        // The reply stopped on <|im_end|>: the sampled ids hold it already.
        let rest = text_after_reply(&t, &msgs, Some("<|im_end|>")).unwrap();
        assert_eq!(
            rest,
            "\n<|im_start|>user\nI lost my job.<|im_end|>\n<|im_start|>assistant\n"
        );
        // Another stop token (<|endoftext|>) leaves the template's end of turn in place.
        let other = text_after_reply(&t, &msgs, Some("<|endoftext|>")).unwrap();
        assert_eq!(other, full);
        assert_eq!(text_after_reply(&t, &msgs[..2], None), None);
    }

    #[test]
    fn llama3_tail() {
        let msgs = [
            ChatMessage::new(Role::User, "Hi"),
            ChatMessage::new(Role::Assistant, "  hello "),
            ChatMessage::new(Role::User, " again "),
        ];
        let tail = text_after_reply(&ChatTemplate::Llama3, &msgs, Some("<|eot_id|>")).unwrap();
        assert_eq!(
            tail,
            "<|start_header_id|>user<|end_header_id|>\n\nagain<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
        );
    }
}
