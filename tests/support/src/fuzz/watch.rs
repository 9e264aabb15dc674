//! What the fuzzer watches outside unwinding, for the campaign binary: the largest single
//! allocation request, any request over [`ALLOC_LIMIT`] (a loader sizing a buffer by a corrupted
//! number), a process abort (stack overflow, a failed allocation) and an input that never
//! finishes. In each of those cases the current input is saved beside the panicking ones, so
//! that the finding can be replayed.
//!
//! The runner publishes the input it is about to run ([`set_current`]) as a raw pointer and a
//! length; the allocator and the abort handler read it from there and write it with `libc`
//! calls only, because neither may allocate.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::CString;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

/// A single allocation request above this many bytes ends the process.
pub const ALLOC_LIMIT: usize = 2 << 30;

static INSTALLED: AtomicBool = AtomicBool::new(false);
static LARGEST: AtomicUsize = AtomicUsize::new(0);
static INPUT_PTR: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static INPUT_LEN: AtomicUsize = AtomicUsize::new(0);
/// Milliseconds since the Unix epoch when the current input started; 0 while none runs.
static INPUT_STARTED_MS: AtomicU64 = AtomicU64::new(0);
static OVERSIZED_BIN: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());
static OVERSIZED_TXT: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());
static ABORT_BIN: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());
/// Set once a finding is being written, so that the abort that follows is not saved twice.
static REPORTING: AtomicBool = AtomicBool::new(false);

/// The system allocator, recording the largest request and stopping at any over
/// [`ALLOC_LIMIT`]. Declared `#[global_allocator]` by the campaign binary.
pub struct WatchAlloc;

unsafe impl GlobalAlloc for WatchAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        System.alloc_zeroed(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        System.realloc(ptr, layout, new_size)
    }
}

#[inline]
fn note(size: usize) {
    if size > LARGEST.load(Ordering::Relaxed) {
        LARGEST.fetch_max(size, Ordering::Relaxed);
        INSTALLED.store(true, Ordering::Relaxed);
        if size > ALLOC_LIMIT {
            oversized(size);
        }
    }
}

/// Whether [`WatchAlloc`] serves this process (it has seen an allocation).
pub fn installed() -> bool {
    INSTALLED.load(Ordering::Relaxed)
}

/// The largest single request since the last [`reset_largest`]; None without [`WatchAlloc`].
pub fn largest() -> Option<usize> {
    installed().then(|| LARGEST.load(Ordering::Relaxed))
}

/// Starts a new largest-request measurement.
pub fn reset_largest() {
    LARGEST.store(0, Ordering::Relaxed);
}

/// Names the files a finding of target `name` is written to, under `crash_dir` (created).
pub fn arm(name: &str, crash_dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(crash_dir)?;
    let stem = super::crashes::free_stem(crash_dir, &format!("{name}-oversized"));
    let abort = super::crashes::free_stem(crash_dir, &format!("{name}-abort"));
    store_path(&OVERSIZED_BIN, &crash_dir.join(format!("{stem}.bin")));
    store_path(&OVERSIZED_TXT, &crash_dir.join(format!("{stem}.txt")));
    store_path(&ABORT_BIN, &crash_dir.join(format!("{abort}.bin")));
    Ok(())
}

/// Keeps `path` as a C string for the allocator and the abort handler (the old one is leaked:
/// a reader may hold it, and there are a few per process).
fn store_path(slot: &AtomicPtr<libc::c_char>, path: &Path) {
    if let Ok(c) = CString::new(path.to_string_lossy().into_owned()) {
        slot.store(c.into_raw(), Ordering::SeqCst);
    }
}

/// Publishes the input about to run; it must stay alive until [`clear_current`].
pub fn set_current(input: &[u8]) {
    INPUT_LEN.store(input.len(), Ordering::SeqCst);
    INPUT_PTR.store(input.as_ptr().cast_mut(), Ordering::SeqCst);
    INPUT_STARTED_MS.store(now_ms().max(1), Ordering::SeqCst);
}

/// The input has finished.
pub fn clear_current() {
    INPUT_STARTED_MS.store(0, Ordering::SeqCst);
    INPUT_PTR.store(std::ptr::null_mut(), Ordering::SeqCst);
    INPUT_LEN.store(0, Ordering::SeqCst);
}

/// How long the current input has been running; None while none runs.
pub fn current_age() -> Option<std::time::Duration> {
    match INPUT_STARTED_MS.load(Ordering::SeqCst) {
        0 => None,
        t => Some(std::time::Duration::from_millis(now_ms().saturating_sub(t))),
    }
}

/// Writes the current input to `path` (for a watchdog that found it stuck: the input is still
/// running, so it is still alive). False when none runs or the write failed.
pub fn save_current(path: &Path) -> bool {
    match CString::new(path.to_string_lossy().into_owned()) {
        Ok(c) => unsafe { write_input(c.as_ptr()) },
        Err(_) => false,
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Saves the input, says so on stderr and in a text file with a backtrace, and aborts.
#[cold]
fn oversized(size: usize) {
    if REPORTING.swap(true, Ordering::SeqCst) {
        unsafe { libc::abort() };
    }
    let bin = OVERSIZED_BIN.load(Ordering::SeqCst);
    let txt = OVERSIZED_TXT.load(Ordering::SeqCst);
    unsafe {
        let saved = !bin.is_null() && write_input(bin);
        let mut line = Line::new();
        line.push(b"fuzz: a single allocation request of ");
        line.push_num(size as u64);
        line.push(b" bytes (over 2 GiB); ");
        if saved {
            line.push(b"input saved to ");
            line.push_cstr(bin);
        } else {
            line.push(b"no input was running");
        }
        line.push(b"\n");
        libc::write(2, line.buf.as_ptr().cast(), line.len);
        if !txt.is_null() {
            let fd = libc::open(txt, libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC, 0o644);
            if fd >= 0 {
                libc::write(fd, line.buf.as_ptr().cast(), line.len);
                // The request has not been served: allocating the backtrace is safe now.
                let bt = std::backtrace::Backtrace::force_capture().to_string();
                libc::write(fd, bt.as_ptr().cast(), bt.len());
                libc::close(fd);
                let mut more = Line::new();
                more.push(b"fuzz: backtrace in ");
                more.push_cstr(txt);
                more.push(b"\n");
                libc::write(2, more.buf.as_ptr().cast(), more.len);
            }
        }
        libc::abort();
    }
}

/// Writes the current input to the C path `path` with libc calls only.
unsafe fn write_input(path: *const libc::c_char) -> bool {
    let ptr = INPUT_PTR.load(Ordering::SeqCst);
    let len = INPUT_LEN.load(Ordering::SeqCst);
    if ptr.is_null() {
        return false;
    }
    let fd = libc::open(path, libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC, 0o644);
    if fd < 0 {
        return false;
    }
    let mut done = 0;
    while done < len {
        let n = libc::write(fd, ptr.add(done).cast(), len - done);
        if n <= 0 {
            break;
        }
        done += n as usize;
    }
    libc::close(fd);
    done == len
}

/// Saves the current input when the process aborts (a stack overflow, a failed allocation),
/// then lets the abort go on.
pub fn install_abort_handler() {
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_abort as *const () as usize;
        action.sa_flags = libc::SA_RESETHAND | libc::SA_ONSTACK;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGABRT, &action, std::ptr::null_mut());
    }
}

extern "C" fn on_abort(_signal: libc::c_int) {
    if REPORTING.swap(true, Ordering::SeqCst) {
        return;
    }
    let bin = ABORT_BIN.load(Ordering::SeqCst);
    unsafe {
        let mut line = Line::new();
        if !bin.is_null() && write_input(bin) {
            line.push(b"fuzz: the process aborted during an input; input saved to ");
            line.push_cstr(bin);
        } else {
            line.push(b"fuzz: the process aborted while no input was running");
        }
        line.push(b"\n");
        libc::write(2, line.buf.as_ptr().cast(), line.len);
    }
}

/// A message built on the stack (no allocation).
struct Line {
    buf: [u8; 1024],
    len: usize,
}

impl Line {
    fn new() -> Self {
        Line {
            buf: [0; 1024],
            len: 0,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        let n = bytes.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&bytes[..n]);
        self.len += n;
    }

    fn push_num(&mut self, mut v: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.push(&digits[i..]);
    }

    unsafe fn push_cstr(&mut self, s: *const libc::c_char) {
        self.push(std::ffi::CStr::from_ptr(s).to_bytes());
    }
}
