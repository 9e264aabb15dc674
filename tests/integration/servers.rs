//! A server command run for a test: started on port 0, its address read from the first line of
//! stdout, stopped with SIGTERM (the graceful path) or killed when the test panics.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStdout, Command, Stdio};

use super::common::{models, root};

pub struct Server {
    child: Option<Child>,
    stdout: Option<BufReader<ChildStdout>>,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
}

impl Server {
    /// Runs `empathy-gym ARGS --port 0` and waits for its "listening on" line.
    pub fn start(args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_empathy-gym"))
            .args(args)
            .args(["--port", "0", "--catalog"])
            .arg(root())
            .env("EMPATHY_GYM_MODELS", models())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the server");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("read the first line");
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| {
                let _ = child.kill();
                panic!("no address on the server's first line: {line:?}")
            })
            .to_string();
        Server {
            child: Some(child),
            stdout: Some(stdout),
            url,
        }
    }

    /// Sends SIGTERM, waits, and returns (success, the rest of stdout).
    pub fn stop(mut self) -> (bool, String) {
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
        (status.success(), rest)
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

/// One HTTP request with reqwest: (status, body text).
pub fn http(method: &str, url: &str, body: Option<Vec<u8>>) -> (u16, String) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let client = reqwest::Client::new();
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut req = client.request(method, url);
        if let Some(b) = body {
            req = req.header("content-type", "application/json").body(b);
        }
        let resp = req.send().await.expect("send");
        let status = resp.status().as_u16();
        (status, resp.text().await.expect("body"))
    })
}
