//! `serve-model` over loopback with a tiny random model: /v1/models, a non-streaming completion
//! and the same request streamed as SSE (the chunks add up to the same text), concurrent requests
//! answered exactly as one at a time (they are batched), and 4xx with a message for bad requests.

use serde_json::{json, Value};

use super::servers::{http, http_typed, Server};

fn post(url: &str, body: Value) -> (u16, String) {
    http(
        "POST",
        &format!("{url}/v1/chat/completions"),
        Some(body.to_string().into_bytes()),
    )
}

fn chat(text: &str, extra: Value) -> Value {
    let mut body = json!({
        "model": "anything",
        "messages": [{"role": "user", "content": text}],
        "temperature": 0,
        "max_tokens": 8,
        "seed": 3,
    });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

#[test]
fn serve_model_answers_openai_clients_streaming_or_not_and_batches_consistently() {
    let server = Server::tiny_model(&["--name", "tiny", "--max-tokens", "64"]);
    let url = server.url.clone();

    let (s, b) = http("GET", &format!("{url}/v1/models"), None);
    assert_eq!(s, 200, "{b}");
    let models: Value = serde_json::from_str(&b).unwrap();
    assert_eq!(models["data"][0]["id"], "tiny");

    let (s, b) = post(&url, chat("hello there", json!({})));
    assert_eq!(s, 200, "{b}");
    let c: Value = serde_json::from_str(&b).unwrap();
    assert_eq!(c["object"], "chat.completion");
    assert_eq!(c["model"], "tiny");
    let text = c["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let finish = c["choices"][0]["finish_reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(finish == "stop" || finish == "length");
    let usage = &c["usage"];
    assert!(usage["prompt_tokens"].as_u64().unwrap() > 0);
    assert!(usage["completion_tokens"].as_u64().unwrap() <= 8);

    // The same request streamed: role chunk, content chunks, finish chunk, [DONE].
    let (s, b) = post(&url, chat("hello there", json!({"stream": true})));
    assert_eq!(s, 200, "{b}");
    let data: Vec<&str> = b.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
    assert_eq!(data.last(), Some(&"[DONE]"), "{b}");
    let chunks: Vec<Value> = data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert!(chunks
        .iter()
        .all(|c| c["object"] == "chat.completion.chunk"));
    let streamed: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(streamed, text, "the stream carries the same reply");
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        finish.as_str()
    );

    // Concurrent requests (batched by the generator) get what they get alone.
    let prompts: Vec<String> = (0..6).map(|i| format!("message number {i}")).collect();
    let alone: Vec<String> = prompts
        .iter()
        .map(|p| {
            let (s, b) = post(&url, chat(p, json!({})));
            assert_eq!(s, 200, "{b}");
            serde_json::from_str::<Value>(&b).unwrap()["choices"][0]["message"]["content"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let together: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = prompts
            .iter()
            .map(|p| {
                let url = url.clone();
                scope.spawn(move || {
                    let (s, b) = post(&url, chat(p, json!({})));
                    assert_eq!(s, 200, "{b}");
                    serde_json::from_str::<Value>(&b).unwrap()["choices"][0]["message"]["content"]
                        .as_str()
                        .unwrap()
                        .to_string()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(together, alone);

    // Bad requests: 4xx with a message.
    let bad = [
        (post(&url, json!({"messages": "nope"})), 400, "not a valid"),
        (post(&url, json!({"messages": []})), 400, "empty"),
        (
            post(
                &url,
                json!({"messages": [{"role": "tool", "content": "x"}]}),
            ),
            400,
            "messages[0].role",
        ),
        (
            post(&url, chat("x", json!({"max_tokens": 100000}))),
            400,
            "--max-tokens",
        ),
        (post(&url, chat("x", json!({"n": 2}))), 400, "n: 1"),
        (
            post(&url, chat("x", json!({"temperature": 9}))),
            400,
            "temperature",
        ),
        (
            post(&url, chat(&"long ".repeat(200), json!({"max_tokens": 64}))),
            400,
            "context",
        ),
        (
            http("GET", &format!("{url}/v2/nothing"), None),
            404,
            "no such endpoint",
        ),
        // JSON sent as text, as a web page may send it across sites without a preflight.
        (
            http_typed(
                "POST",
                &format!("{url}/v1/chat/completions"),
                Some(("text/plain", chat("x", json!({})).to_string().into_bytes())),
            ),
            415,
            "Content-Type: application/json",
        ),
    ];
    for ((s, b), want, needle) in bad {
        assert_eq!(s, want, "{b}");
        let msg: Value = serde_json::from_str(&b).unwrap();
        assert!(
            msg["error"].as_str().unwrap().contains(needle),
            "{needle}: {b}"
        );
    }
    let stopped = server.stop();
    assert!(stopped.ok, "{}", stopped.stderr);
    assert!(stopped.rest.contains("requests in"), "{}", stopped.rest);
}

/// The families beside Llama serve too: the tiny Qwen3, Mistral and Gemma 3 reference models
/// answer a chat completion (what they say is random; that they answer is the point).
#[test]
fn serve_model_serves_qwen3_mistral_and_gemma3_models() {
    let dir = super::common::temp_dir();
    for family in ["qwen3", "mistral", "gemma3"] {
        let folder = crate::model::families::family_folder(family, dir.path()).unwrap();
        let server = Server::start(&["serve-model", "--model", folder.to_str().unwrap()]);
        let (s, b) = post(&server.url, chat("hello there", json!({})));
        assert_eq!(s, 200, "{family}: {b}");
        let v: Value = serde_json::from_str(&b).unwrap();
        assert!(
            v["usage"]["completion_tokens"].as_u64().unwrap() > 0,
            "{family}: {b}"
        );
    }
}
