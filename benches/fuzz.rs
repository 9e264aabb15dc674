//! The fuzz campaign (tests/support/src/fuzz): each target runs for `--seconds` or
//! `--max-inputs`, whichever comes first, in a process of its own, so that an abort (an
//! allocation request over 2 GiB, a stack overflow) ends that target only and is reported as
//! such. Inputs that panicked, aborted, hung or broke a promise are saved under `OUT/crashes/`.
//!
//! Run: `scripts/fuzz.sh` (logs to target/fuzz/fuzz.log), or
//! `cargo bench --bench fuzz -- --target all|NAME[,NAME...] [--seconds 600] [--max-inputs 1000000]
//! [--seed N] [--out target/fuzz] [--hang-seconds 120]`; `--list` prints the targets, `--summary`
//! prints the table of the reports under `--out` for the `--target`s without running anything,
//! `--replay FILE` runs one saved input through the one `--target` and says what happened (the
//! panic's own message and, with RUST_BACKTRACE=1, its backtrace: for checking a fix),
//! `--selftest-alloc` asks for 3 GiB under a made-up input to show the allocation watch at work
//! (the process aborts, the input is saved as `OUT/crashes/selftest-oversized.bin`).
//! Prints a progress line per target every 10 s, a final line per target (inputs, seconds,
//! inputs/s, panics, largest allocation in MiB), and a summary; exits non-zero when any target
//! found something or could not run.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use empathy_test_support::fuzz::{self, watch, Budget, FuzzContext, Report, TARGETS};

// The system allocator, watched: the largest request is reported, one over 2 GiB ends the
// target with its input saved.
#[global_allocator]
static ALLOC: watch::WatchAlloc = watch::WatchAlloc;

/// How often a running target prints its progress.
const PROGRESS: Duration = Duration::from_secs(10);

/// Exit codes of a target's process.
const FOUND: u8 = 1;
const FAILED: u8 = 2;
const HUNG: i32 = 3;

#[derive(Clone, Debug)]
struct Args {
    targets: Vec<String>,
    seconds: f64,
    max_inputs: u64,
    seed: u64,
    out: PathBuf,
    hang_seconds: u64,
    /// Run the one target in this process (the parent passes it to each target's process).
    child: bool,
    list: bool,
    summary: bool,
    selftest_alloc: bool,
    replay: Option<PathBuf>,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut a = Args {
        targets: vec!["all".into()],
        seconds: 600.0,
        max_inputs: 1_000_000,
        seed: 0,
        out: PathBuf::from("target/fuzz"),
        hang_seconds: 120,
        child: false,
        list: false,
        summary: false,
        selftest_alloc: false,
        replay: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .ok_or_else(|| anyhow::anyhow!("{name} needs a value"))
        };
        match arg.as_str() {
            "--target" => {
                a.targets = value("--target")?
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect()
            }
            "--seconds" => a.seconds = value("--seconds")?.parse()?,
            "--max-inputs" => a.max_inputs = value("--max-inputs")?.parse()?,
            "--seed" => a.seed = value("--seed")?.parse()?,
            "--out" => a.out = PathBuf::from(value("--out")?),
            "--hang-seconds" => a.hang_seconds = value("--hang-seconds")?.parse()?,
            "--child" => a.child = true,
            "--list" => a.list = true,
            "--summary" => a.summary = true,
            "--selftest-alloc" => a.selftest_alloc = true,
            "--replay" => a.replay = Some(PathBuf::from(value("--replay")?)),
            // cargo bench passes --bench to every bench binary.
            "--bench" => {}
            other => anyhow::bail!("unknown argument {other}; see benches/fuzz.rs"),
        }
    }
    if a.targets.iter().any(|t| t == "all") {
        a.targets = TARGETS.iter().map(|(n, _)| n.to_string()).collect();
    }
    Ok(a)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("fuzz: {e:#}");
            return ExitCode::from(FAILED);
        }
    };
    if args.list {
        for (name, _) in TARGETS {
            println!("{name}");
        }
        return ExitCode::SUCCESS;
    }
    if args.selftest_alloc {
        watch::install_abort_handler();
        let input = b"selftest input".to_vec();
        if let Err(e) = watch::arm("selftest", &args.out.join("crashes")) {
            eprintln!("fuzz: {e}");
            return ExitCode::from(FAILED);
        }
        watch::set_current(&input);
        let big: Vec<u8> = Vec::with_capacity(std::hint::black_box(3 << 30));
        println!(
            "fuzz: the allocation watch let {} bytes through",
            big.capacity()
        );
        return ExitCode::from(FAILED);
    }
    if let Some(file) = &args.replay {
        return match args.targets.as_slice() {
            [name] => replay(name, file, &args),
            _ => {
                eprintln!("fuzz: --replay takes exactly one target");
                ExitCode::from(FAILED)
            }
        };
    }
    if args.summary {
        let rows = args.targets.iter().map(|n| (n.clone(), None)).collect();
        return summary(&args, rows);
    }
    if args.child {
        return match args.targets.as_slice() {
            [name] => run_here(name, &args),
            _ => {
                eprintln!("fuzz: --child takes exactly one target");
                ExitCode::from(FAILED)
            }
        };
    }
    run_all(&args)
}

/// Runs one target in this process; the report goes to stdout and `OUT/reports/NAME.json`.
fn run_here(name: &str, args: &Args) -> ExitCode {
    watch::install_abort_handler();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ctx = FuzzContext::new(repo, args.out.join("work"));
    let mut target = match fuzz::build(name, &ctx) {
        Ok(t) => t,
        Err(e) => {
            println!("[fuzz] {name}: cannot set up the target: {e:#}");
            return ExitCode::from(FAILED);
        }
    };
    start_watchdog(name, args);
    let budget = Budget {
        max_inputs: args.max_inputs,
        max_seconds: args.seconds,
    };
    println!(
        "[fuzz] {name}: {} seeds, up to {} s or {} inputs, seed {}",
        target.seeds.len(),
        args.seconds,
        args.max_inputs,
        args.seed
    );
    let report = fuzz::run_reporting(
        &mut target,
        budget,
        args.seed,
        &args.out,
        PROGRESS,
        &mut |r: &Report| println!("[fuzz] ... {}", r.line()),
    );
    println!("[fuzz] done {}", report.line());
    for (message, n) in report.top_rejections(5) {
        println!("[fuzz]   rejected x{n}: {message}");
    }
    for s in &report.rejected_seeds {
        println!("[fuzz]   note: a seed was rejected unchanged: {s}");
    }
    for g in report.distinct.values() {
        let saved: Vec<String> = g.inputs.iter().map(|p| p.display().to_string()).collect();
        println!(
            "[fuzz]   FOUND x{}: {} (inputs: {})",
            g.count,
            g.message,
            saved.join(", ")
        );
    }
    if let Some(p) = &report.slow_input {
        println!(
            "[fuzz]   slowest input {:.1} s saved to {}",
            report.slowest,
            p.display()
        );
    }
    if let Err(e) = write_report(&args.out, &report) {
        println!("[fuzz] {name}: cannot write its report: {e:#}");
    }
    if report.panics + report.broken > 0 {
        ExitCode::from(FOUND)
    } else {
        ExitCode::SUCCESS
    }
}

/// Runs the input in `file` through target `name` once, with the usual panic hook.
fn replay(name: &str, file: &Path, args: &Args) -> ExitCode {
    watch::install_abort_handler();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ctx = FuzzContext::new(repo, args.out.join("work"));
    let built = fuzz::build(name, &ctx);
    let input = std::fs::read(file);
    let (mut target, input) = match (built, input) {
        (Ok(t), Ok(i)) => (t, i),
        (Err(e), _) => {
            println!("[fuzz] {name}: cannot set up the target: {e:#}");
            return ExitCode::from(FAILED);
        }
        (_, Err(e)) => {
            println!("[fuzz] cannot read {}: {e}", file.display());
            return ExitCode::from(FAILED);
        }
    };
    let _ = watch::arm(name, &args.out.join("crashes"));
    watch::set_current(&input);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (target.check)(&input)));
    watch::clear_current();
    match result {
        Ok(Ok(())) => {
            println!("[fuzz] {name}: {} accepted", file.display());
            ExitCode::SUCCESS
        }
        Ok(Err(e)) => {
            println!("[fuzz] {name}: {} rejected: {e:#}", file.display());
            ExitCode::SUCCESS
        }
        Err(_) => {
            println!("[fuzz] {name}: {} PANICKED (message above)", file.display());
            ExitCode::from(FOUND)
        }
    }
}

/// Saves the current input and ends the process when one input runs longer than
/// `--hang-seconds`.
fn start_watchdog(name: &str, args: &Args) {
    let limit = Duration::from_secs(args.hang_seconds);
    let path = args.out.join("crashes").join(format!("{name}-hang.bin"));
    let name = name.to_string();
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_secs(1));
        if watch::current_age().is_some_and(|age| age > limit) {
            let saved = watch::save_current(&path);
            println!(
                "[fuzz] {name}: one input has run for over {} s; {}",
                limit.as_secs(),
                if saved {
                    format!("input saved to {}", path.display())
                } else {
                    "the input could not be saved".to_string()
                }
            );
            std::process::exit(HUNG);
        }
    });
}

fn write_report(out: &Path, r: &Report) -> anyhow::Result<()> {
    let dir = out.join("reports");
    std::fs::create_dir_all(&dir)?;
    let json = serde_json::json!({
        "target": r.target,
        "inputs": r.inputs,
        "seconds": r.seconds,
        "inputs_per_s": r.rate(),
        "accepted": r.accepted,
        "rejected": r.rejected,
        "panics": r.panics,
        "broken": r.broken,
        "distinct": r.distinct.len(),
        "largest_alloc_bytes": r.largest_alloc,
    });
    std::fs::write(
        dir.join(format!("{}.json", r.target)),
        serde_json::to_string_pretty(&json)?,
    )?;
    Ok(())
}

/// Runs every target in a process of its own, one after the other, then prints the summary.
fn run_all(args: &Args) -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("fuzz: cannot find this program: {e}");
            return ExitCode::from(FAILED);
        }
    };
    let mut rows = Vec::new();
    println!("[fuzz] seed {}", args.seed);
    for name in &args.targets {
        let _ = std::fs::remove_file(args.out.join("reports").join(format!("{name}.json")));
        let status = Command::new(&exe)
            .args(["--child", "--target", name])
            .args(["--seconds", &args.seconds.to_string()])
            .args(["--max-inputs", &args.max_inputs.to_string()])
            .args(["--seed", &args.seed.to_string()])
            .args(["--hang-seconds", &args.hang_seconds.to_string()])
            .arg("--out")
            .arg(&args.out)
            .status();
        let outcome = match status {
            Ok(s) if s.success() => "ok".to_string(),
            Ok(s) => match (s.code(), std::os::unix::process::ExitStatusExt::signal(&s)) {
                (Some(c), _) if c == i32::from(FOUND) => "FOUND".to_string(),
                (Some(HUNG), _) => "HUNG".to_string(),
                (Some(c), _) => format!("FAILED (exit {c})"),
                (None, Some(sig)) => format!("ABORTED (signal {sig})"),
                (None, None) => "FAILED".to_string(),
            },
            Err(e) => format!("FAILED ({e})"),
        };
        rows.push((name.clone(), Some(outcome)));
    }
    summary(args, rows)
}

/// Prints the table of the targets' reports; `status` is the process's outcome where known,
/// else it follows from the report. Fails unless every target is `ok`.
fn summary(args: &Args, rows: Vec<(String, Option<String>)>) -> ExitCode {
    println!(
        "[fuzz] summary (findings under {}/crashes):",
        args.out.display()
    );
    println!(
        "[fuzz] {:<17} {:>9} {:>8} {:>9} {:>7} {:>7} {:>12}  status",
        "target", "inputs", "seconds", "inputs/s", "panics", "broken", "largest MiB"
    );
    let mut all_ok = true;
    for (name, status) in rows {
        let report = read_report(&args.out, &name);
        let v = report.clone().unwrap_or_default();
        let num = |k: &str| v.get(k).map_or("-".to_string(), |x| x.to_string());
        let float = |k: &str| {
            v.get(k)
                .and_then(serde_json::Value::as_f64)
                .map_or("-".to_string(), |x| format!("{x:.0}"))
        };
        let mib = v
            .get("largest_alloc_bytes")
            .and_then(serde_json::Value::as_f64)
            .map_or("-".to_string(), |b| {
                format!("{:.1}", b / f64::from(1 << 20))
            });
        let found = |k: &str| v.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
        let status = status.unwrap_or_else(|| match report {
            None => "NO REPORT (aborted, hung or not run)".to_string(),
            Some(_) if found("panics") + found("broken") > 0 => "FOUND".to_string(),
            Some(_) => "ok".to_string(),
        });
        all_ok &= status == "ok";
        println!(
            "[fuzz] {:<17} {:>9} {:>8} {:>9} {:>7} {:>7} {:>12}  {status}",
            name,
            num("inputs"),
            float("seconds"),
            float("inputs_per_s"),
            num("panics"),
            num("broken"),
            mib
        );
    }
    if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(FOUND)
    }
}

fn read_report(out: &Path, name: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
    let text = std::fs::read_to_string(out.join("reports").join(format!("{name}.json"))).ok()?;
    serde_json::from_str(&text).ok()
}
