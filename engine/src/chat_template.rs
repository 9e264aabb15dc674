//! Chat templates: ChatML (SmolLM2, Qwen2) and Llama 3, rendered in Rust rather than through a
//! Jinja engine. The template family is recognised from the model's own template text or its
//! special tokens; ChatML's default system prompt is read out of that text.

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
}

const IM_START: &str = "<|im_start|>";
const IM_END: &str = "<|im_end|>";

impl ChatTemplate {
    /// Recognises the family from a Jinja template text (`tokenizer.chat_template` or
    /// tokenizer_config.json's `chat_template`).
    pub fn from_jinja(src: &str) -> Option<Self> {
        if src.contains("<|start_header_id|>") {
            Some(ChatTemplate::Llama3)
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
            ChatTemplate::Llama3 => {
                out.push_str("<|begin_of_text|>");
                for m in messages {
                    out.push_str(&format!(
                        "<|start_header_id|>{}<|end_header_id|>\n\n{}<|eot_id|>",
                        m.role.as_str(),
                        m.content.trim()
                    ));
                }
                if add_generation_prompt {
                    out.push_str("<|start_header_id|>assistant<|end_header_id|>\n\n");
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
            ChatTemplate::Llama3 => "{{ '<|begin_of_text|>' }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}".to_string(),
        }
    }

    /// Tokens that end an assistant turn in this family.
    pub fn stop_strings(&self) -> &'static [&'static str] {
        match self {
            ChatTemplate::ChatMl { .. } => &[IM_END, "<|endoftext|>"],
            ChatTemplate::Llama3 => &["<|eot_id|>", "<|end_of_text|>", "<|eom_id|>"],
        }
    }
}

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
