//! An example as the one token sequence the policy would have produced it in, with the
//! supporter's tokens as targets and everything else masked out of the loss.
//!
//! The sequence is built as the trainer builds a rollout's (`train::sequence`): the chat template
//! up to the first generation prompt, then each supporter turn's own tokens followed by the
//! template's end-of-turn token (the policy samples that token to stop), then the template text
//! from there to the next generation prompt (the seeker's next message). So SFT teaches exactly
//! the tokens GRPO will later sample, in the context it will sample them in.

use crate::error::Result;
use crate::judge::input::Speaker;
use crate::learning::train::sequence::{text_after_reply, TokenSequence};
use crate::model::{ChatMessage, ChatTemplate, Role};

/// How an example is turned into tokens.
pub struct Tokenizing<'a> {
    /// The policy's chat template.
    pub template: &'a ChatTemplate,
    /// The system prompt the policy is trained and played with.
    pub system: &'a str,
    /// The text of the token that ends an assistant turn (`<|im_end|>` in ChatML).
    pub end_of_turn: &'a str,
    /// Longest sequence; later turns that do not fit are dropped.
    pub max_tokens: usize,
    /// Text to token ids, special tokens parsed, nothing added.
    pub encode: &'a dyn Fn(&str) -> Result<Vec<u32>>,
}

impl Tokenizing<'_> {
    /// The example's sequence, cut after the last supporter turn that fits in `max_tokens`;
    /// `None` when not even the first one fits.
    pub fn sequence(&self, messages: &[(Speaker, String)]) -> Result<Option<TokenSequence>> {
        let mut chat = vec![ChatMessage::new(Role::System, self.system)];
        chat.extend(messages.iter().map(|(who, text)| {
            let role = match who {
                Speaker::Seeker => Role::User,
                Speaker::Supporter => Role::Assistant,
            };
            ChatMessage::new(role, text.trim())
        }));
        let mut seq = TokenSequence::new();
        for (k, m) in chat.iter().enumerate() {
            if m.role != Role::Assistant {
                continue;
            }
            let mut next = seq.clone();
            let before = if next.replies().is_empty() {
                self.template.render(&chat[..k], true)
            } else {
                // The previous reply's ids end with the end-of-turn token already.
                text_after_reply(self.template, &chat[..k], Some(self.end_of_turn))
                    .unwrap_or_default()
            };
            next.push_context(&(self.encode)(&before)?);
            let mut reply = (self.encode)(&m.content)?;
            reply.extend((self.encode)(self.end_of_turn)?);
            next.push_reply(&reply);
            if next.ids().len() > self.max_tokens {
                break;
            }
            seq = next;
        }
        Ok((!seq.replies().is_empty()).then_some(seq))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One token per character, and one for each ChatML marker.
    fn encode(text: &str) -> Result<Vec<u32>> {
        let mut out = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix("<|im_start|>") {
                out.push(1000);
                rest = r;
            } else if let Some(r) = rest.strip_prefix("<|im_end|>") {
                out.push(1001);
                rest = r;
            } else {
                let c = rest.chars().next().unwrap();
                out.push(c as u32);
                rest = &rest[c.len_utf8()..];
            }
        }
        Ok(out)
    }

    fn tokenizing(max_tokens: usize) -> Tokenizing<'static> {
        static TEMPLATE: ChatTemplate = ChatTemplate::ChatMl {
            default_system: None,
        };
        Tokenizing {
            template: &TEMPLATE,
            system: "S",
            end_of_turn: "<|im_end|>",
            max_tokens,
            encode: &encode,
        }
    }

    fn text_of(ids: &[u32]) -> String {
        ids.iter()
            .map(|&i| match i {
                1000 => "<|im_start|>".to_string(),
                1001 => "<|im_end|>".to_string(),
                c => char::from_u32(c).unwrap().to_string(),
            })
            .collect()
    }

    fn dialogue() -> Vec<(Speaker, String)> {
        vec![
            (Speaker::Seeker, "hi".into()),
            (Speaker::Supporter, " yo ".into()),
            (Speaker::Seeker, "sad".into()),
            (Speaker::Supporter, "oh".into()),
        ]
    }

    #[test]
    fn only_the_supporter_turns_and_their_end_of_turn_are_targets() {
        let seq = tokenizing(1000).sequence(&dialogue()).unwrap().unwrap();
        assert_eq!(
            text_of(seq.ids()),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n\
             <|im_start|>assistant\nyo<|im_end|>\n<|im_start|>user\nsad<|im_end|>\n\
             <|im_start|>assistant\noh<|im_end|>"
        );
        let targets: String = seq
            .ids()
            .iter()
            .zip(seq.sampled())
            .filter(|(_, s)| **s)
            .map(|(i, _)| text_of(&[*i]))
            .collect();
        assert_eq!(targets, "yo<|im_end|>oh<|im_end|>");
        assert_eq!(seq.replies().len(), 2);
        // The loss mask's column t predicts token t+1: its ones sit one place before the targets.
        let mask = seq.target_mask();
        let first = seq.replies()[0].start;
        assert_eq!(mask[first - 2], 0.0);
        assert_eq!(mask[first - 1], 1.0);
        assert_eq!(mask.iter().sum::<f32>(), 6.0);
    }

    #[test]
    fn turns_that_do_not_fit_are_dropped_from_the_end() {
        let full = tokenizing(1000).sequence(&dialogue()).unwrap().unwrap();
        let first_end = full.replies()[0].end;
        let cut = tokenizing(first_end + 3)
            .sequence(&dialogue())
            .unwrap()
            .unwrap();
        assert_eq!(cut.replies().len(), 1);
        assert_eq!(cut.ids(), &full.ids()[..first_end]);
        assert!(tokenizing(first_end - 1)
            .sequence(&dialogue())
            .unwrap()
            .is_none());
    }
}
