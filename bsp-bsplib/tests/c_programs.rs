//! The C API, from C: compiles each program of `tests/c/` with the system
//! C compiler against the shared library that this build produced, runs it
//! on threads (and, with the `mpi` feature where `mpirun` exists, as MPI
//! ranks), and checks the outcome its first line declares:
//!
//! ```c
//! /* bsplib-test: p=3 expect=success */
//! /* bsplib-test: p=2 expect=abort "processor 1, superstep 1: bsp_put: ..." */
//! /* bsplib-test: p=2 status=3 expect=abort "..." */
//! ```
//!
//! A success exits 0 without a `FAILED` line; an abort exits non-zero
//! (with `status=N`: exactly N, on threads and from `mpirun` alike) with
//! one `bsp: ` line on standard error that contains the quoted text.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a test program declares.
struct Case {
    name: String,
    source: PathBuf,
    procs: usize,
    /// `None`: success; `Some(text)`: an abort whose line contains `text`.
    abort: Option<String>,
    /// The exit status an abort must end with, where the test says.
    status: Option<i32>,
}

fn cases() -> Vec<Case> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c");
    let mut cases: Vec<Case> = std::fs::read_dir(&dir)
        .expect("tests/c")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .map(|source| {
            let text = std::fs::read_to_string(&source).expect("source");
            let head = text.lines().next().unwrap_or_default();
            let spec = head
                .strip_prefix("/* bsplib-test: ")
                .and_then(|s| s.strip_suffix(" */"))
                .unwrap_or_else(|| panic!("{}: no bsplib-test line", source.display()));
            let number = |key: &str| {
                spec.split_whitespace()
                    .find_map(|w| w.strip_prefix(key))
                    .map(|n| n.parse().unwrap_or_else(|_| panic!("{spec}: {key}")))
            };
            let procs = number("p=").expect("p=");
            let status = number("status=").map(|s: usize| s as i32);
            let abort = spec
                .split_once("expect=abort \"")
                .map(|(_, rest)| rest.trim_end_matches('"').to_owned());
            assert!(abort.is_some() || spec.contains("expect=success"), "{spec}");
            let name = source.file_stem().unwrap().to_string_lossy().into_owned();
            Case {
                name,
                source,
                procs,
                abort,
                status,
            }
        })
        .collect();
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    cases
}

/// The directory of the library this test was built with: beside the
/// test executable (`target/<profile>/deps`, where cargo puts a
/// dependency's C libraries), or `target/<profile>` where a build of the
/// package itself put them.
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    let deps = exe.parent().expect("deps dir");
    let has_library = |dir: &Path| {
        ["libbsp_bsplib.so", "libbsp_bsplib.a"]
            .iter()
            .any(|name| dir.join(name).exists())
    };
    if has_library(deps) {
        return deps.to_path_buf();
    }
    deps.parent().expect("target dir").to_path_buf()
}

/// Runs `cmd` with a time limit; returns the exit status (`None` when
/// killed at the limit) and standard output and error together.
fn run(mut cmd: Command, limit: Duration) -> (Option<std::process::ExitStatus>, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = reader.join().unwrap() + &err_reader.join().unwrap();
    (status, text)
}

/// The verdict on one run of `case`: `Ok` or why not.
fn judge(
    case: &Case,
    mpi: bool,
    status: Option<std::process::ExitStatus>,
    out: &str,
) -> Result<(), String> {
    let Some(status) = status else {
        return Err("timed out (a hang)".to_owned());
    };
    match &case.abort {
        None if status.success() && !out.contains("FAILED") => Ok(()),
        None => Err(format!("expected success, got {status}")),
        Some(text) => {
            let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("bsp: ")).collect();
            if status.success() {
                Err(format!("expected an abort with {text:?}, but it succeeded"))
            } else if case.status.is_some_and(|want| status.code() != Some(want)) {
                Err(format!(
                    "expected exit status {}, got {status}",
                    case.status.unwrap_or(0)
                ))
            } else if lines.is_empty() || (!mpi && lines.len() > 1) {
                // One line on threads; under MPI each rank that finds a
                // failure prints it (BSPlib lets any of the processors
                // that abort print).
                Err(format!("expected one `bsp: ` line, got {}", lines.len()))
            } else if let Some(line) = lines.iter().find(|l| !l.contains(text.as_str())) {
                Err(format!("expected {text:?} in the error line {line:?}"))
            } else {
                Ok(())
            }
        }
    }
}

fn compile(case: &Case, out_dir: &Path) -> PathBuf {
    let lib = library_dir();
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let exe = out_dir.join(&case.name);
    let output = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-std=c99", "-Wall", "-Werror", "-O1"])
        .arg("-I")
        .arg(&include)
        .arg(&case.source)
        .arg("-o")
        .arg(&exe)
        .arg("-L")
        .arg(&lib)
        .arg("-lbsp_bsplib")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-lm")
        .output()
        .expect("a C compiler (cc) on the PATH");
    assert!(
        output.status.success(),
        "{} does not compile:\n{}",
        case.name,
        String::from_utf8_lossy(&output.stderr)
    );
    exe
}

/// Whether to also run the programs as MPI ranks: built with `mpi`, with
/// an `mpirun` on the PATH, and not itself inside an MPI job.
fn with_mpirun() -> bool {
    cfg!(feature = "mpi")
        && !bsp_core::launched_by_mpirun()
        && Command::new("mpirun")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

#[test]
fn c_programs_behave_as_they_declare() {
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bsplib-c");
    std::fs::create_dir_all(&out_dir).expect("out dir");
    let limit = Duration::from_secs(60);
    let mut failures = Vec::new();
    for case in cases() {
        let exe = compile(&case, &out_dir);
        let mut cmd = Command::new(&exe);
        cmd.env("BSP_PROCS", case.procs.to_string())
            .env("BSPLIB_TEST_P", case.procs.to_string());
        let (status, out) = run(cmd, limit);
        if let Err(why) = judge(&case, false, status, &out) {
            failures.push(format!("{} (threads): {why}\n{out}", case.name));
        }
        if with_mpirun() {
            let mut cmd = Command::new("mpirun");
            // mpirun refuses to run as root without this.
            if std::env::var("USER").is_ok_and(|u| u == "root")
                || Command::new("id")
                    .arg("-u")
                    .output()
                    .is_ok_and(|o| o.stdout.starts_with(b"0"))
            {
                cmd.arg("--allow-run-as-root");
            }
            cmd.args(["--oversubscribe", "-x", "BSPLIB_TEST_P", "-np"])
                .arg(case.procs.to_string())
                .arg(&exe)
                .env("BSPLIB_TEST_P", case.procs.to_string());
            let (status, out) = run(cmd, limit);
            if let Err(why) = judge(&case, true, status, &out) {
                failures.push(format!("{} (mpirun): {why}\n{out}", case.name));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
