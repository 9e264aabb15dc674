//! Chat templates: ChatML (SmolLM2, Qwen2), Qwen3's ChatML with thinking, Llama 3 and 3.1, Gemma
//! and Mistral's `[INST]`, rendered in Rust rather than through a Jinja engine. The template family is recognised from the model's
//! own template text or its special tokens; ChatML's default system prompt is read out of that
//! text. tests/data/model-fixtures/templates.json holds the real templates' output that the
//! renderings are checked against.

use serde::{Deserialize, Serialize};

/// Who speaks a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions for the assistant.
    System,
    /// The human (here: the simulated user).
    User,
    /// The model.
    Assistant,
}

impl Role {
    /// The role's name inside the template.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Speaker.
    pub role: Role,
    /// Text.
    pub content: String,
}

impl ChatMessage {
    /// A message from `role`.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        ChatMessage {
            role,
            content: content.into(),
        }
    }
}

/// The supported template families.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChatTemplate {
    /// `<|im_start|>role\ncontent<|im_end|>\n`; `default_system` is inserted when the
    /// conversation has no system message (SmolLM2, Qwen2 do this in their Jinja templates).
    ChatMl {
        /// System prompt used when none is given.
        default_system: Option<String>,
    },
    /// `<|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|>` after `<|begin_of_text|>`.
    Llama3,
    /// Qwen3's ChatML: no default system prompt; the reasoning of assistant turns before the last
    /// user message dropped; with thinking off, the generation prompt ends with an empty
    /// `<think>\n\n</think>\n\n` block so that the model answers directly (the template's
    /// `enable_thinking=False`).
    Qwen3 {
        /// Let the model think first (`enable_thinking`, the template's default). Off here: a
        /// dialogue policy's whole reply reaches the user.
        thinking: bool,
    },
    /// Llama 3.1 and later: Llama 3 with a system turn that always opens with the knowledge
    /// cut-off and a date (the template's defaults), before the conversation's own system text.
    Llama31,
    /// Gemma: `<start_of_turn>user|model\ncontent<end_of_turn>\n` after `<bos>`, contents
    /// trimmed; a system message has no turn of its own but opens the first user turn, followed by
    /// a blank line (Gemma 3's template).
    Gemma,
    /// Mistral's `[INST]content[/INST]answer</s>` without spaces (Mistral Nemo's template, the
    /// tekken tokenizer's); a system message goes, followed by a blank line, into the last
    /// message when that is a user's, and nowhere else.
    Mistral,
}

const IM_START: &str = "<|im_start|>";
const IM_END: &str = "<|im_end|>";
const THINK_END: &str = "</think>";
const TURN_START: &str = "<start_of_turn>";
const TURN_END: &str = "<end_of_turn>";
/// What Llama 3.1's template writes first in its system turn (with its default date).
const LLAMA31_CUTOFF: &str = "Cutting Knowledge Date";
const LLAMA31_HEADER: &str = "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n";
/// What Qwen3's template writes after the generation prompt with thinking off.
const EMPTY_THINK: &str = "<think>\n\n</think>\n\n";

impl ChatTemplate {
    /// Recognises the family from a Jinja template text (`tokenizer.chat_template` or
    /// tokenizer_config.json's `chat_template`).
    pub fn from_jinja(src: &str) -> Option<Self> {
        if src.contains("<|start_header_id|>") && src.contains(LLAMA31_CUTOFF) {
            Some(ChatTemplate::Llama31)
        } else if src.contains("<|start_header_id|>") {
            Some(ChatTemplate::Llama3)
        } else if src.contains(TURN_START) {
            Some(ChatTemplate::Gemma)
        } else if src.contains("[INST]")
            && !src.contains("[INST] ")
            && !src.contains("[SYSTEM_PROMPT]")
        {
            // Older Mistral templates put spaces inside [INST] ... [/INST], newer ones have a
            // system-prompt token: neither renders like this one.
            Some(ChatTemplate::Mistral)
        } else if src.contains(IM_START) && src.contains(THINK_END) {
            Some(ChatTemplate::Qwen3 { thinking: false })
        } else if src.contains(IM_START) {
            Some(ChatTemplate::ChatMl {
                default_system: default_system(src),
            })
        } else {
            None
        }
    }

    /// Guesses the family from the vocabulary when no template text exists.
    pub fn from_special_tokens(has: impl Fn(&str) -> bool) -> Option<Self> {
        if has("<|start_header_id|>") && has("<|eot_id|>") {
            Some(ChatTemplate::Llama3)
        } else if has(TURN_START) && has(TURN_END) {
            Some(ChatTemplate::Gemma)
        } else if has(IM_START) && has(IM_END) {
            Some(ChatTemplate::ChatMl {
                default_system: None,
            })
        } else {
            None
        }
    }

    /// The prompt text; with `add_generation_prompt` it ends where the assistant starts writing.
    pub fn render(&self, messages: &[ChatMessage], add_generation_prompt: bool) -> String {
        let mut out = String::new();
        match self {
            ChatTemplate::ChatMl { default_system } => {
                if let (Some(sys), Some(first)) = (default_system, messages.first()) {
                    if first.role != Role::System {
                        out.push_str(&format!("{IM_START}system\n{sys}{IM_END}\n"));
                    }
                }
                for m in messages {
                    out.push_str(&format!(
                        "{IM_START}{}\n{}{IM_END}\n",
                        m.role.as_str(),
                        m.content
                    ));
                }
                if add_generation_prompt {
                    out.push_str(&format!("{IM_START}assistant\n"));
                }
            }
            ChatTemplate::Qwen3 { thinking } => {
                render_qwen3(&mut out, messages);
                if add_generation_prompt {
                    out.push_str(&format!("{IM_START}assistant\n"));
                    if !thinking {
                        out.push_str(EMPTY_THINK);
                    }
                }
            }
            ChatTemplate::Llama3 | ChatTemplate::Llama31 => {
                out.push_str("<|begin_of_text|>");
                let header = |out: &mut String, role: &str, text: &str| {
                    out.push_str(&format!(
                        "<|start_header_id|>{role}<|end_header_id|>\n\n{text}<|eot_id|>"
                    ));
                };
                let mut rest = messages;
                if *self == ChatTemplate::Llama31 {
                    let system = match messages.first() {
                        Some(m) if m.role == Role::System => {
                            rest = &messages[1..];
                            m.content.trim()
                        }
                        _ => "",
                    };
                    header(&mut out, "system", &format!("{LLAMA31_HEADER}{system}"));
                }
                for m in rest {
                    header(&mut out, m.role.as_str(), m.content.trim());
                }
                if add_generation_prompt {
                    out.push_str("<|start_header_id|>assistant<|end_header_id|>\n\n");
                }
            }
            ChatTemplate::Gemma => {
                out.push_str("<bos>");
                let (prefix, rest) = match messages.first() {
                    Some(m) if m.role == Role::System => {
                        (format!("{}\n\n", m.content), &messages[1..])
                    }
                    _ => (String::new(), messages),
                };
                for (i, m) in rest.iter().enumerate() {
                    let role = match m.role {
                        Role::Assistant => "model",
                        other => other.as_str(),
                    };
                    let first = if i == 0 { prefix.as_str() } else { "" };
                    out.push_str(&format!(
                        "{TURN_START}{role}\n{first}{}{TURN_END}\n",
                        m.content.trim()
                    ));
                }
                if add_generation_prompt {
                    out.push_str(&format!("{TURN_START}model\n"));
                }
            }
            // The template adds nothing for a generation prompt: [/INST] already ends the turn.
            ChatTemplate::Mistral => {
                out.push_str("<s>");
                let (system, rest) = match messages.first() {
                    Some(m) if m.role == Role::System => (Some(m.content.as_str()), &messages[1..]),
                    _ => (None, messages),
                };
                for (i, m) in rest.iter().enumerate() {
                    match (m.role, system) {
                        (Role::Assistant, _) => out.push_str(&format!("{}</s>", m.content)),
                        (_, Some(sys)) if i + 1 == rest.len() => {
                            out.push_str(&format!("[INST]{sys}\n\n{}[/INST]", m.content))
                        }
                        _ => out.push_str(&format!("[INST]{}[/INST]", m.content)),
                    }
                }
            }
        }
        out
    }

    /// A Jinja template equivalent to `render`, for tokenizer_config.json on export (HF
    /// transformers and vLLM read it; `from_jinja` recognises it again).
    pub fn to_jinja(&self) -> String {
        match self {
            ChatTemplate::ChatMl { default_system } => {
                let sys = default_system.as_ref().map(|s| {
                    format!("{{% if loop.first and messages[0]['role'] != 'system' %}}{{{{ '{IM_START}system\\n{}{IM_END}\\n' }}}}{{% endif %}}", s.replace('\n', "\\n"))
                });
                format!(
                    "{{% for message in messages %}}{}{{{{ '{IM_START}' + message['role'] + '\\n' + message['content'] + '{IM_END}' + '\\n' }}}}{{% endfor %}}{{% if add_generation_prompt %}}{{{{ '{IM_START}assistant\\n' }}}}{{% endif %}}",
                    sys.unwrap_or_default()
                )
            }
            ChatTemplate::Qwen3 { .. } => QWEN3_JINJA.to_string(),
            ChatTemplate::Llama31 => LLAMA31_JINJA.to_string(),
            ChatTemplate::Gemma => GEMMA_JINJA.to_string(),
            ChatTemplate::Mistral => MISTRAL_JINJA.to_string(),
            ChatTemplate::Llama3 => "{{ '<|begin_of_text|>' }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}".to_string(),
        }
    }

    /// Tokens that end an assistant turn in this family.
    pub fn stop_strings(&self) -> &'static [&'static str] {
        match self {
            ChatTemplate::ChatMl { .. } | ChatTemplate::Qwen3 { .. } => &[IM_END, "<|endoftext|>"],
            ChatTemplate::Llama3 | ChatTemplate::Llama31 => {
                &["<|eot_id|>", "<|end_of_text|>", "<|eom_id|>"]
            }
            ChatTemplate::Gemma => &[TURN_END, "<eos>"],
            ChatTemplate::Mistral => &["</s>"],
        }
    }
}

/// Qwen3's template without tools: a first system message as is, then every message as ChatML.
/// An assistant message's `<think>` block is dropped, except in the assistant turns after the
/// last user message, which keep it (empty when there was none).
fn render_qwen3(out: &mut String, messages: &[ChatMessage]) {
    let last_query = messages.iter().rposition(|m| m.role == Role::User);
    for (i, m) in messages.iter().enumerate() {
        let role = m.role.as_str();
        if m.role != Role::Assistant {
            out.push_str(&format!("{IM_START}{role}\n{}{IM_END}\n", m.content));
            continue;
        }
        // As the template's split('</think>'): the reasoning before the first, the answer
        // after the last.
        let (reasoning, content) = match (
            m.content.split_once(THINK_END),
            m.content.rsplit_once(THINK_END),
        ) {
            (Some((before, _)), Some((_, after))) => {
                let before = before.trim_end_matches('\n');
                let inner = before.rsplit_once("<think>").map_or(before, |(_, r)| r);
                (
                    inner.trim_start_matches('\n'),
                    after.trim_start_matches('\n'),
                )
            }
            _ => ("", m.content.as_str()),
        };
        let after_query = last_query.is_none_or(|q| i > q);
        if after_query && (i + 1 == messages.len() || !reasoning.is_empty()) {
            out.push_str(&format!(
                "{IM_START}{role}\n<think>\n{}\n</think>\n\n{}{IM_END}\n",
                reasoning.trim_matches('\n'),
                content.trim_start_matches('\n')
            ));
        } else {
            out.push_str(&format!("{IM_START}{role}\n{content}{IM_END}\n"));
        }
    }
}

/// A Jinja template equivalent to [`render_qwen3`] with thinking off by default, written on
/// export (it holds `</think>`, so [`ChatTemplate::from_jinja`] finds Qwen3 in it again).
const QWEN3_JINJA: &str = "{%- set ns = namespace(last_query=-1) %}{%- for message in messages %}{%- if message['role'] == 'user' %}{%- set ns.last_query = loop.index0 %}{%- endif %}{%- endfor %}{%- for message in messages %}{%- set content = message['content'] %}{%- if message['role'] != 'assistant' %}{{- '<|im_start|>' + message['role'] + '\\n' + content + '<|im_end|>\\n' }}{%- else %}{%- set reasoning = '' %}{%- if '</think>' in content %}{%- set reasoning = content.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}{%- set content = content.split('</think>')[-1].lstrip('\\n') %}{%- endif %}{%- if loop.index0 > ns.last_query and (loop.last or reasoning) %}{{- '<|im_start|>assistant\\n<think>\\n' + reasoning.strip('\\n') + '\\n</think>\\n\\n' + content.lstrip('\\n') + '<|im_end|>\\n' }}{%- else %}{{- '<|im_start|>assistant\\n' + content + '<|im_end|>\\n' }}{%- endif %}{%- endif %}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- if enable_thinking is not defined or enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}{%- endif %}";

/// Jinja equivalents of the renderings above, written on export; each holds what
/// [`ChatTemplate::from_jinja`] recognises its family by.
const LLAMA31_JINJA: &str = "{{- '<|begin_of_text|>' }}{%- if messages[0]['role'] == 'system' %}{%- set system = messages[0]['content'] | trim %}{%- set messages = messages[1:] %}{%- else %}{%- set system = '' %}{%- endif %}{{- '<|start_header_id|>system<|end_header_id|>\\n\\nCutting Knowledge Date: December 2023\\nToday Date: 26 Jul 2024\\n\\n' + system + '<|eot_id|>' }}{%- for message in messages %}{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}";
const GEMMA_JINJA: &str = "{{- bos_token }}{%- if messages[0]['role'] == 'system' %}{%- set prefix = messages[0]['content'] + '\\n\\n' %}{%- set messages = messages[1:] %}{%- else %}{%- set prefix = '' %}{%- endif %}{%- for message in messages %}{%- set role = 'model' if message['role'] == 'assistant' else message['role'] %}{{- '<start_of_turn>' + role + '\\n' + (prefix if loop.first else '') + message['content'] | trim + '<end_of_turn>\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<start_of_turn>model\\n' }}{%- endif %}";
const MISTRAL_JINJA: &str = "{{- bos_token }}{%- if messages[0]['role'] == 'system' %}{%- set system = messages[0]['content'] %}{%- set messages = messages[1:] %}{%- endif %}{%- for message in messages %}{%- if message['role'] == 'assistant' %}{{- message['content'] + eos_token }}{%- elif loop.last and system is defined %}{{- '[INST]' + system + '\\n\\n' + message['content'] + '[/INST]' }}{%- else %}{{- '[INST]' + message['content'] + '[/INST]' }}{%- endif %}{%- endfor %}";

/// The literal system prompt a ChatML Jinja template writes when the conversation has none:
/// the text after `<|im_start|>system` + newline (real or escaped) up to `<|im_end|>`, when it is
/// one constant string (not `+ message['content']`).
pub fn default_system(src: &str) -> Option<String> {
    let head = format!("{IM_START}system");
    let mut rest = src;
    while let Some(i) = rest.find(&head) {
        rest = &rest[i + head.len()..];
        let body = rest.strip_prefix('\n').or_else(|| rest.strip_prefix("\\n"));
        if let Some(body) = body {
            if let Some(end) = body.find(IM_END) {
                let text = &body[..end];
                if !text.is_empty() && !text.contains(['\'', '"', '{', '}']) {
                    return Some(text.replace("\\n", "\n"));
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMOL: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

    #[test]
    fn smollm2_default_system_is_found_and_inserted() {
        let t = ChatTemplate::from_jinja(SMOL).unwrap();
        let sys = "You are a helpful AI assistant named SmolLM, trained by Hugging Face";
        assert_eq!(
            t,
            ChatTemplate::ChatMl {
                default_system: Some(sys.into())
            }
        );
        let text = t.render(&[ChatMessage::new(Role::User, "Hi")], true);
        assert_eq!(text, format!("<|im_start|>system\n{sys}<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"));
        let own = t.render(
            &[
                ChatMessage::new(Role::System, "Be kind."),
                ChatMessage::new(Role::User, "Hi"),
            ],
            false,
        );
        assert_eq!(
            own,
            "<|im_start|>system\nBe kind.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        );
    }

    #[test]
    fn concatenated_system_is_not_a_default() {
        let src = "{{ '<|im_start|>system\\n' + message['content'] + '<|im_end|>' }}";
        assert_eq!(default_system(src), None);
        let qwen = "{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}";
        assert_eq!(
            default_system(qwen).as_deref(),
            Some("You are a helpful assistant.")
        );
    }

    #[test]
    fn jinja_round_trips_family_and_default_system() {
        let t = ChatTemplate::from_jinja(SMOL).unwrap();
        let src = t.to_jinja();
        assert!(
            src.contains("<|im_start|>system\\nYou are a helpful AI assistant named SmolLM"),
            "{src}"
        );
        assert_eq!(ChatTemplate::from_jinja(&src), Some(t));
        assert_eq!(
            ChatTemplate::from_jinja(&ChatTemplate::Llama3.to_jinja()),
            Some(ChatTemplate::Llama3)
        );
    }

    #[test]
    fn llama3_layout() {
        let t = ChatTemplate::from_jinja("{{ '<|start_header_id|>' }}").unwrap();
        let text = t.render(&[ChatMessage::new(Role::User, " Hi ")], true);
        assert_eq!(text, "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
    }
}
