//! A server command run for a test: started on port 0, its address read from the first line of
//! stdout, stopped with SIGTERM (the graceful path) or killed when the test panics. Its stderr is
//! kept (and echoed, so a failing test still shows it).

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::thread::JoinHandle;

use super::common::{models, root, temp_dir};
use super::model_fixtures::{write_hf, TinySpec};

pub struct Server {
    child: Option<Child>,
    stdout: Option<BufReader<ChildStdout>>,
    stderr: Option<JoinHandle<String>>,
    /// The first line of stdout ("... listening on http://...").
    pub first_line: String,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// A folder that lives as long as the server (the tiny model of [`Server::tiny_model`]).
    _dir: Option<tempfile::TempDir>,
}

/// How a server ended after SIGTERM.
pub struct Stopped {
    /// Exited with status 0.
    pub ok: bool,
    /// Stdout after the first line (the shutdown summary).
    pub rest: String,
    /// All of stderr.
    pub stderr: String,
}

impl Server {
    /// Runs `empathy-gym ARGS --port 0` and waits for its "listening on" line.
    pub fn start(args: &[&str]) -> Server {
        Self::start_with_env(args, &[])
    }

    /// [`Server::start`] with extra environment variables.
    pub fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_empathy-gym"))
            .args(args)
            .args(["--port", "0", "--catalog"])
            .arg(root())
            .env("EMPATHY_GYM_MODELS", models())
            .env_remove("EMPATHY_GYM_API_KEY")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the server");
        let mut err = BufReader::new(child.stderr.take().expect("piped stderr"));
        let stderr = std::thread::spawn(move || {
            let (mut all, mut line) = (String::new(), String::new());
            while err.read_line(&mut line).unwrap_or(0) > 0 {
                eprint!("{line}");
                all.push_str(&line);
                line.clear();
            }
            all
        });
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut first_line = String::new();
        stdout
            .read_line(&mut first_line)
            .expect("read the first line");
        let url = first_line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| {
                let _ = child.kill();
                panic!("no address on the server's first line: {first_line:?}")
            })
            .to_string();
        Server {
            child: Some(child),
            stdout: Some(stdout),
            stderr: Some(stderr),
            first_line,
            url,
            _dir: None,
        }
    }

    /// `serve-model` on a tiny random Llama written for it, with `args` after `--model`.
    pub fn tiny_model(args: &[&str]) -> Server {
        let dir = temp_dir();
        let model = dir.path().join("tiny");
        write_hf(&model, &TinySpec::llama()).expect("write the tiny model");
        let mut all = vec![
            "serve-model",
            "--model",
            model.to_str().expect("a UTF-8 path"),
        ];
        all.extend_from_slice(args);
        let mut server = Self::start(&all);
        server._dir = Some(dir);
        server
    }

    /// Sends SIGTERM and waits for the server to end.
    pub fn stop(mut self) -> Stopped {
        let mut child = self.child.take().expect("running");
        // SAFETY: signalling a child process this test started, by its id.
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
        }
        let mut rest = String::new();
        if let Some(mut out) = self.stdout.take() {
            out.read_to_string(&mut rest).expect("read stdout");
        }
        let status = child.wait().expect("wait for the server");
        let stderr = self
            .stderr
            .take()
            .map(|t| t.join().expect("the stderr reader"))
            .unwrap_or_default();
        Stopped {
            ok: status.success(),
            rest,
            stderr,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// One HTTP request with reqwest: (status, body text). A body goes as `application/json`.
pub fn http(method: &str, url: &str, body: Option<Vec<u8>>) -> (u16, String) {
    let typed = body.map(|b| ("application/json", b));
    http_typed(method, url, typed)
}

/// One HTTP request whose body goes with the given content type (`""`: no Content-Type header).
pub fn http_typed(method: &str, url: &str, body: Option<(&str, Vec<u8>)>) -> (u16, String) {
    let r = request(method, url, body, &[]);
    (r.status, r.body)
}

/// An answer with its headers.
pub struct Reply {
    pub status: u16,
    pub body: String,
    pub headers: reqwest::header::HeaderMap,
}

/// One HTTP request with extra headers; a body goes with its content type (`""`: none).
pub fn request(
    method: &str,
    url: &str,
    body: Option<(&str, Vec<u8>)>,
    headers: &[(&str, &str)],
) -> Reply {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let client = reqwest::Client::new();
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut req = client.request(method, url);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some((kind, b)) = body {
            if !kind.is_empty() {
                req = req.header("content-type", kind);
            }
            req = req.body(b);
        }
        let resp = req.send().await.expect("send");
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        Reply {
            status,
            headers,
            body: resp.text().await.expect("body"),
        }
    })
}
