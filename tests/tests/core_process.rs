//! Failure behaviour that concerns the whole process on the threads
//! transport: the sync time limit from `BSP_SYNC_TIMEOUT`, a processor stuck
//! for good in its own code, the panic hook's silence, and a processor
//! thread that cannot be started. Each scenario runs in a child process
//! (this test binary again, with `BSP_TEST_SCENARIO` set) under a time
//! limit, so that one that ends or hangs the process fails a test instead.

mod support;

use std::time::Duration;

use bsp::Runtime;

const SCENARIO_ENV: &str = "BSP_TEST_SCENARIO";
const LIMIT: Duration = Duration::from_secs(60);

/// The child side: runs the scenario named by `BSP_TEST_SCENARIO` and prints
/// what `run` returned. Without the variable (a plain `cargo test`) it does
/// nothing.
#[test]
fn scenario() {
    let Ok(name) = std::env::var(SCENARIO_ENV) else {
        return;
    };
    let rt = Runtime::from_env();
    let outcome = match name.as_str() {
        // Processor 1 never comes back to bsp.
        "stuck" => rt.run(|ctx| {
            ctx.sync();
            if ctx.pid() == 1 {
                loop {
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
            ctx.sync();
        }),
        // Processor 2 is late once; the limit comes from the environment.
        "late" => rt.run(|ctx| {
            if ctx.pid() == 2 {
                std::thread::sleep(Duration::from_millis(1200));
            }
            ctx.sync();
        }),
        "panic" => rt.run(|ctx| {
            ctx.sync();
            if ctx.pid() == 1 {
                panic!("processor one fails");
            }
            ctx.sync();
        }),
        // Messages left unread at two syncs on one queue: dropped each
        // time, said once. A runtime of `threads` reads no variable.
        "unread" => {
            let settings = Runtime::threads(3);
            println!(
                "threads: {:?} {:?} {:?}; from_env: {:?} {:?} {:?}",
                settings.router(),
                settings.sync_timeout(),
                settings.stats_memory(),
                rt.router(),
                rt.sync_timeout(),
                rt.stats_memory()
            );
            rt.run(|ctx| {
                let q = ctx.queue::<u8>();
                for _ in 0..3 {
                    ctx.send(0, &q, &1);
                    ctx.sync();
                }
                let want = if ctx.pid() == 0 { ctx.nprocs() } else { 0 };
                assert_eq!(ctx.receive(&q).len(), want, "the last sync's only");
            })
        }
        other => panic!("unknown scenario {other:?}"),
    };
    match outcome {
        Ok(_) => println!("scenario result: ok"),
        Err(e) => println!("scenario result: {:?}: {e}", e.kind()),
    }
}

/// Whether to skip: these scenarios are about the threads transport, and
/// a child of an MPI rank would inherit the launcher's environment.
fn skip() -> bool {
    if support::launched_by_mpirun() {
        eprintln!("note: threads-only process scenarios skipped under mpirun");
        return true;
    }
    false
}

fn child(name: &str, env: &[(&str, &str)]) -> support::MpiRun {
    let mut all = vec![(SCENARIO_ENV, name)];
    all.extend_from_slice(env);
    let run = support::rerun_test("scenario", &all, LIMIT);
    assert!(
        run.status.is_some(),
        "scenario {name} hung (killed after {LIMIT:?})\nstderr:\n{}",
        run.stderr
    );
    run
}

#[test]
fn unread_messages_are_dropped_at_the_sync_and_said_once_per_queue() {
    if skip() {
        return;
    }
    let env = [
        ("BSP_PROCS", "2"),
        ("BSP_ROUTER", "direct"),
        ("BSP_SYNC_TIMEOUT", "30"),
        ("BSP_STATS_MEMORY", "1K"),
    ];
    let run = child("unread", &env);
    assert!(
        run.stdout.contains("scenario result: ok")
            && run
                .stdout
                .contains("threads: Auto None 4194304; from_env: Direct Some(30s) 1024"),
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    // Processor 0 receives; a build with debug assertions (`cargo test`)
    // says it once, a release build (`cargo test --release`) not at all.
    let said = run.stderr.matches("unread message(s) on queue #0").count();
    let told = run.stderr.contains(
        "bsp: processor 0, superstep 1: 2 unread message(s) on queue #0 (queue<u8>) \
         dropped at sync",
    );
    let expected = cfg!(debug_assertions);
    assert!(
        said == usize::from(expected) && told == expected,
        "stderr:\n{}",
        run.stderr
    );
}

#[test]
fn the_environment_sets_the_sync_time_limit() {
    if skip() {
        return;
    }
    let run = child("late", &[("BSP_PROCS", "4"), ("BSP_SYNC_TIMEOUT", "0.25")]);
    assert!(
        run.stdout
            .contains("scenario result: Timeout: processor 2, superstep 0: sync timeout"),
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    assert!(
        run.stdout.contains("processor 2 has not arrived"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_malformed_time_limit_is_a_configuration_error() {
    if skip() {
        return;
    }
    let run = child("late", &[("BSP_PROCS", "3"), ("BSP_SYNC_TIMEOUT", "soon")]);
    assert!(
        run.stdout.contains("scenario result: Config")
            && run.stdout.contains("BSP_SYNC_TIMEOUT=\"soon\""),
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
}

#[test]
fn a_processor_stuck_for_good_ends_the_process_with_the_error() {
    if skip() {
        return;
    }
    let run = child("stuck", &[("BSP_PROCS", "3"), ("BSP_SYNC_TIMEOUT", "0.3")]);
    let status = run.status.expect("checked by child()");
    assert_eq!(status.code(), Some(1), "stderr:\n{}", run.stderr);
    assert!(
        run.stderr
            .contains("bsp: processor 1, superstep 1: sync timeout"),
        "stderr:\n{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("processors [1] are still in their own code"),
        "stderr:\n{}",
        run.stderr
    );
    // The report names the program: its closure and where it started.
    assert!(
        run.stderr.contains("(the run of ") && run.stderr.contains("core_process.rs:"),
        "stderr:\n{}",
        run.stderr
    );
    // The limit (0.3 s) plus the grace period (5 s), not much more.
    assert!(run.elapsed < Duration::from_secs(30), "{:?}", run.elapsed);
}

#[test]
fn a_panic_prints_nothing_before_the_error() {
    if skip() {
        return;
    }
    let run = child("panic", &[("BSP_PROCS", "3"), ("RUST_BACKTRACE", "1")]);
    assert!(
        run.stdout.contains(
            "scenario result: Panic: processor 1, superstep 1: panicked: processor one fails (at tests/tests/core_process.rs:"
        ),
        "stdout:\n{}",
        run.stdout
    );
    assert!(
        !run.stderr.contains("panicked at") && !run.stderr.contains("stack backtrace"),
        "the panic hook printed:\n{}",
        run.stderr
    );
}

#[test]
fn processor_threads_beyond_the_address_space_limit_are_refused() {
    if skip() {
        return;
    }
    // Under a 1.5 GB address-space limit, 1500 threads with 2 MiB stacks
    // cannot all start: the run is refused before the first one does (a
    // thread that starts but cannot map its signal stack would abort the
    // process).
    if !std::path::Path::new("/bin/sh").exists() {
        return;
    }
    let exe = std::env::current_exe().expect("test binary path");
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg("ulimit -v 1500000 && exec \"$0\" --exact scenario --nocapture --test-threads=1")
        .arg(exe)
        .env(SCENARIO_ENV, "late")
        .env("BSP_PROCS", "1500");
    let run = support::run_with_limit(cmd, LIMIT);
    assert!(run.status.is_some(), "hung\nstderr:\n{}", run.stderr);
    assert!(
        run.stdout.contains("scenario result: Config")
            && run
                .stdout
                .contains("cannot start p = 1500 processor threads")
            && run.stdout.contains("ulimit -v"),
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
}
