//! The test harness shared by the integration tests: one test body, every
//! transport.
//!
//! A test body takes a [`Runtime`] and checks what the processors it can see
//! return. [`runtimes`] gives the runtimes to run it on: threads with each
//! requested p and both routers normally; the MPI world with both routers
//! when the test binary runs as ranks of an `mpirun` job (built with
//! `--features mpi`; p is then fixed by `-np`). Under MPI, a process sees
//! only its own rank's result, so bodies check results per pid
//! ([`run_local`], [`check`]), and the ranks agree on every verdict
//! ([`all_ok`], [`agree`]) so that a failure on one rank fails the test on
//! all of them instead of leaving the others waiting in the next run.
//! [`on_runtimes`] puts these together: one body on every runtime, under a
//! [`watchdog`], each verdict agreed.
//!
//! Under `mpirun`, run test binaries with `--test-threads=1` (every rank must
//! run the same tests in the same order) and use [`proptest_config`]
//! (identical cases on every rank).
//!
//! Inputs: [`Rng`] (deterministic, the same on every rank), [`fit`],
//! [`affine`] (a non-commutative operator) and [`affine_input`]; for sorts,
//! [`assert_sorted_part`].
//!
//! [`mpirun`] spawns a program under `mpirun` with a time limit, for tests
//! of whole-job behaviour (failures, cross-transport determinism).

#![allow(dead_code)]

use std::fmt::Debug;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bsp::{Ctx, Router, Runtime};

/// Whether this process is a rank of an `mpirun` job, built with the `mpi`
/// feature (so that [`runtimes`] returns the MPI world).
pub fn under_mpi() -> bool {
    cfg!(feature = "mpi") && launched_by_mpirun()
}

pub use bsp::launched_by_mpirun;

/// The runtimes to run a test body on, with both routers: threads with
/// each p in `ps`, or, under `mpirun`, the MPI world (whose p is `-np`).
/// Both take their other settings from the environment, so that a test
/// rerun with `BSP_BARRIER` or `BSP_STATS_MEMORY` set runs with it.
pub fn runtimes(ps: &[usize]) -> Vec<Runtime> {
    let bases: Vec<Runtime> = if under_mpi() {
        mpi_world().into_iter().collect()
    } else {
        ps.iter()
            .map(|&p| Runtime::from_env().with_procs(p))
            .collect()
    };
    bases
        .into_iter()
        .flat_map(|rt| {
            [
                rt.clone().with_router(Router::TwoPhase),
                rt.with_router(Router::Direct),
            ]
        })
        .collect()
}

#[cfg(feature = "mpi")]
fn mpi_world() -> Option<Runtime> {
    // The world, with the settings of the environment (as on threads).
    Some(Runtime::from_env())
}

#[cfg(not(feature = "mpi"))]
fn mpi_world() -> Option<Runtime> {
    None
}

/// Runs `f` on `rt` and returns `(pid, result)` for every processor this
/// process sees: all of them on threads, the local rank under MPI.
///
/// # Panics
///
/// If the run fails (on threads; under MPI a failure ends the job).
pub fn run_local<R, F>(rt: &Runtime, f: F) -> Vec<(usize, R)>
where
    R: Send,
    F: Fn(&mut Ctx) -> R + Sync,
{
    rt.run(f)
        .unwrap_or_else(|e| panic!("run on {} failed: {e}", describe(rt)))
        .into_iter_with_pids()
        .collect()
}

/// `p = …, router = …, transport = …`, for assertion messages.
pub fn describe(rt: &Runtime) -> String {
    format!(
        "p = {}, router = {}, transport = {}",
        rt.nprocs(),
        rt.router(),
        rt.transport().name()
    )
}

/// Whether `ok` holds on every processor of `rt` (under MPI: on every rank;
/// on threads: here). Collective under MPI: every rank must call it.
pub fn all_ok(rt: &Runtime, ok: bool) -> bool {
    if !under_mpi() {
        return ok;
    }
    let votes = rt
        .run(|ctx| {
            let p = ctx.nprocs();
            let v = ctx.coarray::<u8>(p);
            for t in 0..p {
                ctx.put(t, &v, ctx.pid(), &[u8::from(ok)]);
            }
            ctx.sync();
            ctx.local(&v).iter().all(|&b| b == 1)
        })
        .expect("vote");
    *votes.local()
}

/// Runs `verify` (assertions on the results this process sees) and makes
/// every MPI rank agree on the verdict: panics with `verify`'s own message
/// where it failed, and with a note on the ranks where it passed while
/// another failed. Collective under MPI (every rank must call it); on
/// threads it just runs `verify`.
pub fn agree(rt: &Runtime, verify: impl FnOnce()) {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(verify));
    let ok = all_ok(rt, outcome.is_ok());
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
    assert!(ok, "{}: another MPI rank saw a wrong result", describe(rt));
}

/// Runs `f` on `rt` and checks every visible processor's result against
/// `oracle(p, pid)`. Under MPI the ranks agree on the verdict, so all of
/// them fail together.
///
/// # Panics
///
/// With the first mismatch (or, on another rank's mismatch, a note saying so).
pub fn check<R, F, O>(rt: &Runtime, f: F, oracle: O)
where
    R: PartialEq + Debug + Send,
    F: Fn(&mut Ctx) -> R + Sync,
    O: Fn(usize, usize) -> R,
{
    let p = rt.nprocs();
    let results = run_local(rt, f);
    agree(rt, || {
        for (pid, got) in results {
            let want = oracle(p, pid);
            assert!(
                got == want,
                "{}: processor {pid} returned {got:?}, expected {want:?}",
                describe(rt)
            );
        }
    });
}

/// Runs `body` on every runtime of [`runtimes`]`(ps)`, under a
/// [`watchdog`] of `secs` seconds, with every MPI rank agreeing on each
/// runtime's verdict ([`agree`]).
pub fn on_runtimes(secs: u64, ps: &[usize], body: impl Fn(&Runtime) + Send + 'static) {
    let ps = ps.to_vec();
    watchdog(secs, move || {
        for rt in runtimes(&ps) {
            agree(&rt, || body(&rt));
        }
    });
}

/// A proptest configuration that generates the same cases on every MPI
/// rank: a fixed seed, no failure persistence, no forking.
pub fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x00b5_9d1e),
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    }
}

/// Whether an `mpirun` is on the PATH.
pub fn mpirun_available() -> bool {
    Command::new("mpirun")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The outcome of [`mpirun`]: `None` for the status when it timed out.
pub struct MpiRun {
    /// The exit status, `None` if the job was killed at the time limit.
    pub status: Option<std::process::ExitStatus>,
    /// Everything the job wrote to standard output.
    pub stdout: String,
    /// Everything the job wrote to standard error.
    pub stderr: String,
    /// Wall-clock time until exit or kill.
    pub elapsed: Duration,
}

/// Runs `program args` under `mpirun -np np` with extra environment
/// variables, killing the job after `timeout`. Returns `None` (after
/// printing a note) when `mpirun` is not installed, or when this process is
/// itself an MPI rank (no nested launches).
pub fn mpirun(
    np: usize,
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    timeout: Duration,
) -> Option<MpiRun> {
    if launched_by_mpirun() {
        eprintln!("note: already running under mpirun; skipping a nested mpirun");
        return None;
    }
    if !mpirun_available() {
        eprintln!("note: mpirun not found; skipping an MPI test (install openmpi-bin)");
        return None;
    }
    let mut cmd = Command::new("mpirun");
    cmd.args(["--oversubscribe", "-np", &np.to_string()]);
    // OpenMPI refuses to run as root without this flag.
    if is_root() {
        cmd.arg("--allow-run-as-root");
    }
    for (k, v) in env {
        cmd.arg("-x").arg(k).env(k, v);
    }
    cmd.arg(program).args(args);
    Some(run_with_limit(cmd, timeout))
}

/// Runs `cmd` with its output captured, killing it (SIGTERM, then SIGKILL
/// after 5 s) when it runs past `timeout`.
pub fn run_with_limit(mut cmd: Command, timeout: Duration) -> MpiRun {
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the child process");
    // Drain the pipes on threads so a chatty child cannot block on them.
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out, &mut s).ok();
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err, &mut s).ok();
        s
    });
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            break Some(status);
        }
        if start.elapsed() > timeout {
            // SIGTERM lets mpirun take its ranks down with it; SIGKILL
            // would orphan them.
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let grace = Instant::now();
            while grace.elapsed() < Duration::from_secs(5) {
                if child.try_wait().ok().flatten().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let elapsed = start.elapsed();
    MpiRun {
        status,
        stdout: out_t.join().unwrap_or_default(),
        stderr: err_t.join().unwrap_or_default(),
        elapsed,
    }
}

/// Runs test `name` of this test binary again, alone, in a child process
/// with extra environment variables (`env`, each removed first from the
/// child's environment when its value is empty), under `timeout`: for
/// scenarios that end the process or need their own environment.
pub fn rerun_test(name: &str, env: &[(&str, &str)], timeout: Duration) -> MpiRun {
    let exe = std::env::current_exe().expect("test binary path");
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", name, "--nocapture", "--test-threads=1"]);
    for (k, v) in env {
        if v.is_empty() {
            cmd.env_remove(k);
        } else {
            cmd.env(k, v);
        }
    }
    run_with_limit(cmd, timeout)
}

fn is_root() -> bool {
    std::env::var("USER").is_ok_and(|u| u == "root")
        || Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

/// Runs `f` on its own thread and fails the test if it takes longer than
/// `secs` seconds, so that a regression that hangs fails instead of
/// stalling CI. On threads the test panics with a message naming it (the
/// hung thread is left behind). As a rank of an MPI job the process prints
/// the message and aborts, which ends the job: a rank stuck in a
/// collective cannot be recovered, and the others would wait for it.
pub fn watchdog<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    // The test harness names each test's thread after the test.
    let test = std::thread::current()
        .name()
        .unwrap_or("the test body")
        .to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name(test.clone())
        .spawn(move || {
            let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
        })
        .expect("spawn the test body's thread");
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(Ok(value)) => value,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(_) => {
            let msg = format!("watchdog: {test} did not finish within {secs} s (a hang?)");
            if under_mpi() {
                // Straight to the stream: the test harness captures
                // `eprintln!`, and would not print it after an abort.
                let _ = writeln!(std::io::stderr().lock(), "{msg}; aborting the MPI job");
                std::process::abort();
            }
            panic!("{msg}")
        }
    }
}

/// SplitMix64: a tiny deterministic generator for test plans and inputs,
/// the same on every MPI rank.
#[derive(Clone)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` below 2³²); 0 when `n` is 0.
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 32) * n as u64) >> 32) as usize
    }
}

/// Composition of affine maps x ↦ a·x + b over wrapping u32: `f` then `g`.
/// Associative, not commutative: results depend on the pid order.
pub fn affine(f: [u32; 2], g: [u32; 2]) -> [u32; 2] {
    [
        f[0].wrapping_mul(g[0]),
        g[0].wrapping_mul(f[1]).wrapping_add(g[1]),
    ]
}

/// Processor `q`'s input vector of `m` affine maps for seed `seed`.
pub fn affine_input(seed: u64, q: usize, m: usize) -> Vec<[u32; 2]> {
    let mut rng = Rng(seed ^ (q as u64).wrapping_mul(0x1234_5678_9abc));
    (0..m)
        .map(|_| [rng.next_u64() as u32 | 1, rng.next_u64() as u32])
        .collect()
}

/// Checks processor `q`'s output `got` of a sort that keeps every
/// processor's element count (congruence) against `sorted`, the
/// sequential stable sort of `parts.concat()`: it must be the slice of
/// `sorted` at the offset and of the length of `q`'s input `parts[q]`.
/// `what` (the sort's options) goes into the message.
pub fn assert_sorted_part<T: PartialEq + Debug>(
    rt: &Runtime,
    q: usize,
    got: &[T],
    parts: &[Vec<T>],
    sorted: &[T],
    what: impl Debug,
) {
    let start: usize = parts[..q].iter().map(Vec::len).sum();
    let want = &sorted[start..start + parts[q].len()];
    assert_eq!(
        got.len(),
        want.len(),
        "{}: processor {q} changed its element count",
        describe(rt)
    );
    assert_eq!(got, want, "{}: processor {q}, {what:?}", describe(rt));
}

/// The runtimes of [`runtimes`] that use `router` only (threads with each
/// p in `ps`, or the MPI world), for tests that draw the router as a
/// parameter instead of running every case on both.
pub fn runtimes_with(ps: &[usize], router: Router) -> Vec<Runtime> {
    runtimes(ps)
        .into_iter()
        .filter(|rt| rt.router() == router)
        .collect()
}

/// Per-processor parameters drawn for one p, fitted to `p` processors:
/// `v` repeated cyclically or cut to length `p` (unchanged when `v` has
/// length `p`, as on threads; under MPI, `p` is `-np`). `v` must not be
/// empty unless `p` is 0.
pub fn fit<T: Clone>(v: &[T], p: usize) -> Vec<T> {
    (0..p).map(|i| v[i % v.len()].clone()).collect()
}

/// When `BSP_TEST_VERBOSE` is set, prints `test: describe(rt)` to standard
/// error (past the test harness's capture) the first time `test` runs on
/// `rt`'s transport in this process, to show which transport a test binary
/// really ran on.
pub fn announce(test: &str, rt: &Runtime) {
    use std::collections::HashSet;
    use std::sync::Mutex;
    static SEEN: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    if std::env::var_os("BSP_TEST_VERBOSE").is_none() {
        return;
    }
    let key = format!("{test} on {}", rt.transport().name());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if seen.get_or_insert_with(HashSet::new).insert(key) {
        // Straight to the stream: the test harness captures `eprintln!`.
        let _ = writeln!(std::io::stderr().lock(), "{test}: {}", describe(rt));
    }
}
