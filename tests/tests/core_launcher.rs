//! `bsp::run(p, f)` knows the launcher: on threads when started plainly,
//! on the MPI world under `mpirun` (when built with the `mpi` feature), and
//! a clear configuration error where it cannot do what the program asks.
//! `Outcome` and `Runtime::run_all` mean the same on every transport.
//!
//! This file is its own test binary: its one test that fakes a launcher's
//! environment variable cannot disturb tests in other processes.

mod support;

use bsp::{ErrorKind, Runtime};
use support::{launched_by_mpirun, under_mpi, watchdog};

#[test]
fn run_follows_the_launcher_and_outcomes_mean_the_same_everywhere() {
    watchdog(120, || {
        if under_mpi() {
            on_the_mpi_world();
        } else if !launched_by_mpirun() {
            on_threads();
            #[cfg(not(feature = "mpi"))]
            refused_under_mpirun_without_mpi();
        }
    });
}

fn on_threads() {
    let out = bsp::run(3, |ctx| ctx.pid() * 10).unwrap();
    assert_eq!(out.pids(), 0..3);
    assert_eq!(
        (out.get(2), *out.local(), out.root()),
        (Some(&20), 0, Some(&0))
    );
    assert_eq!(out.all(), Some(&[0, 10, 20][..]));
    let all = Runtime::threads(3).run_all(|ctx| ctx.pid() as u32).unwrap();
    assert_eq!(all.all(), Some(&[0, 1, 2][..]));
    assert!(all.is_root() && *all.local() == 0);
}

fn on_the_mpi_world() {
    let p = Runtime::from_env().nprocs();
    let out = bsp::run(p, |ctx| (ctx.pid(), ctx.transport())).unwrap();
    let me = out.pids().start;
    assert_eq!(out.pids(), me..me + 1, "a rank holds its own result");
    assert_eq!(out.local().0, me);
    assert_ne!(
        out.local().1,
        bsp::Transport::Threads,
        "bsp::run runs on MPI"
    );
    assert_eq!(out.root().is_some(), me == 0);
    assert_eq!(out.is_root(), me == 0);
    let all = Runtime::from_env().run_all(|ctx| ctx.pid() as u64).unwrap();
    let want: Vec<u64> = (0..p as u64).collect();
    assert_eq!(all.all(), Some(&want[..]), "every rank has all");
    assert_eq!(
        (all.is_root(), *all.local()),
        (me == 0, me as u64),
        "one rank prints"
    );
    assert_eq!(all.get(p - 1), Some(&(p as u64 - 1)));
    let err = bsp::run(p + 1, |ctx| ctx.pid()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert!(
        err.to_string().contains(&format!("mpirun -np {}", p + 1)),
        "{err}"
    );
}

/// A binary without the MPI transport refuses to run under `mpirun`
/// instead of repeating the whole run on every rank.
#[cfg(not(feature = "mpi"))]
fn refused_under_mpirun_without_mpi() {
    std::env::set_var("OMPI_COMM_WORLD_SIZE", "2");
    let plain = bsp::run(2, |ctx| ctx.pid());
    let from_env = Runtime::from_env().run(|ctx| ctx.pid());
    let explicit = Runtime::threads(2).run(|ctx| ctx.pid());
    std::env::remove_var("OMPI_COMM_WORLD_SIZE");
    for refused in [plain, from_env] {
        let err = refused.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config);
        assert!(err.to_string().contains("--features mpi"), "{err}");
    }
    assert_eq!(
        explicit.unwrap().all(),
        Some(&[0, 1][..]),
        "threads asked for by name still run"
    );
}
