//! Checkpoint and restart: a run killed in the middle resumes from its last
//! complete checkpoint and ends with the bytes of a run never interrupted;
//! a torn newest checkpoint is skipped; a checkpoint of another run is a
//! clear error. On threads the child process aborts; under MPI (built with
//! `--features mpi`) one rank of the job kills itself with SIGKILL.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use bsp::{Ctx, ErrorKind, Runtime};

/// Set in a child process: the iteration at which processor 1 aborts the
/// whole process.
const KILL_ENV: &str = "BSP_TEST_KILL_AT";
/// Set in a child process: the checkpoint directory and p of the program.
const DIR_ENV: &str = "BSP_TEST_CHECKPOINT_DIR";
const PROCS_ENV: &str = "BSP_TEST_PROCS";

const ITERATIONS: u64 = 20;
const EVERY: u64 = 3;

/// The program: a ring of coarrays smoothed by puts from the neighbours,
/// a kept queue that carries one message a processor from each iteration
/// to the next, and a state (the iteration and a running digest). Returns
/// every byte that must come out the same, and the iteration restored.
fn program(ctx: &mut Ctx, kill_at: Option<u64>) -> Ended {
    let (me, p) = (ctx.pid(), ctx.nprocs());
    let cells = ctx.coarray_from(vec![me as u64 * 1000 + 1; 8]);
    let carried = ctx.queue::<u64>();
    ctx.keep_unread(&carried, true);
    let restored: Option<(u64, u64)> = ctx.restore();
    let (mut iteration, mut digest) = restored.unwrap_or((0, 17));
    while iteration < ITERATIONS {
        if kill_at == Some(iteration) && me == 1 % p {
            die();
        }
        let mine: Vec<u64> = ctx.local(&cells).to_vec();
        let right = (me + 1) % p;
        ctx.put(right, &cells, 0, &mine[..4]);
        // Read last iteration's carried message, if any, and pass one on.
        let got: u64 = ctx.receive(&carried).iter().sum();
        ctx.send(right, &carried, &(digest ^ got));
        ctx.sync();
        for (k, c) in ctx.local_mut(&cells).iter_mut().enumerate() {
            *c = c.wrapping_mul(31).wrapping_add(k as u64 + iteration);
        }
        digest = digest.wrapping_mul(0x100_0000_01b3) ^ ctx.local(&cells)[0];
        iteration += 1;
        if iteration % EVERY == 0 {
            ctx.checkpoint(&(iteration, digest));
        }
    }
    let left = ctx.receive(&carried);
    (
        (ctx.local(&cells).to_vec(), left, digest),
        restored.map(|r| r.0),
    )
}

/// What a run of [`program`] ends with, and the iteration it resumed from.
type Ended = ((Vec<u64>, Vec<u64>, u64), Option<u64>);

/// Ends this process as a crash would: SIGKILL of this rank under MPI, an
/// abort of the whole process on threads.
fn die() -> ! {
    if support::launched_by_mpirun() {
        let pid = std::process::id().to_string();
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid])
            .status();
    }
    std::process::abort()
}

/// What a run printed: one line per processor this process ran.
fn result_lines(out: &bsp::Outcome<Ended>) -> Vec<String> {
    out.iter_with_pids()
        .map(|(pid, (r, _))| format!("result {pid}: {r:?}"))
        .collect()
}

/// A fresh directory for one test.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bsp-ckpt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn inside_mpirun() -> bool {
    if support::launched_by_mpirun() {
        eprintln!("note: checkpoint tests run on threads; skipped under mpirun");
        return true;
    }
    false
}

/// The child's side: runs the program on the directory and p given, maybe
/// aborting, and prints what came out.
#[test]
fn child() {
    let (Ok(dir), Ok(p)) = (std::env::var(DIR_ENV), std::env::var(PROCS_ENV)) else {
        return;
    };
    let kill_at = std::env::var(KILL_ENV)
        .ok()
        .filter(|k| !k.is_empty())
        .map(|k| k.parse().unwrap());
    let rt = match support::launched_by_mpirun() {
        true => Runtime::from_env(), // the MPI world
        false => Runtime::threads(p.parse().unwrap()),
    };
    let out = rt
        .with_checkpoint_dir(dir)
        .run(move |ctx| program(ctx, kill_at))
        .unwrap();
    for line in result_lines(&out) {
        println!("{line}");
    }
    for (pid, (_, restored)) in out.iter_with_pids() {
        println!("restored {pid}: {restored:?}");
    }
}

fn run_child(dir: &Path, p: usize, kill_at: Option<u64>) -> support::MpiRun {
    let kill = kill_at.map(|k| k.to_string()).unwrap_or_default();
    let procs = p.to_string();
    let env = [
        (DIR_ENV, dir.to_str().unwrap()),
        (PROCS_ENV, procs.as_str()),
        (KILL_ENV, kill.as_str()),
    ];
    support::rerun_test("child", &env, Duration::from_secs(120))
}

#[test]
fn a_run_killed_mid_way_resumes_and_ends_with_the_same_bytes() {
    if inside_mpirun() {
        return;
    }
    for p in [1, 4, 8] {
        let plain_dir = fresh_dir(&format!("plain-{p}"));
        let uninterrupted = Runtime::threads(p)
            .with_checkpoint_dir(&plain_dir)
            .run(|ctx| program(ctx, None))
            .unwrap();
        let want = result_lines(&uninterrupted).join("\n");
        std::fs::remove_dir_all(&plain_dir).unwrap();
        let dir = fresh_dir(&format!("killed-{p}"));
        let killed = run_child(&dir, p, Some(11));
        assert!(
            killed.status.is_some_and(|s| !s.success()) && !killed.stdout.contains("result "),
            "p = {p}: the first run must die at iteration 11\n{}",
            killed.stderr
        );
        let resumed = run_child(&dir, p, None);
        assert!(
            resumed.status.is_some_and(|s| s.success())
                && resumed.stdout.contains(&want)
                && resumed.stdout.contains("restored 0: Some(9)"),
            "p = {p}: the resumed run must end as the uninterrupted one:\nwant {want}\nstdout {}\nstderr {}",
            resumed.stdout,
            resumed.stderr
        );
        // The newest two checkpoints are kept (iterations 15 and 18).
        let manifest = std::fs::read_to_string(dir.join("manifest")).unwrap();
        assert_eq!(manifest.lines().count(), 3, "{manifest}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn a_torn_newest_checkpoint_is_skipped_for_the_one_before() {
    if inside_mpirun() {
        return;
    }
    let dir = fresh_dir("torn");
    let rt = Runtime::threads(3).with_checkpoint_dir(&dir);
    let save = |upto: u64| {
        move |ctx: &mut Ctx| {
            let a = ctx.coarray::<u32>(2);
            let mut k: u64 = ctx.restore().unwrap_or(0);
            while k < upto {
                k += 1;
                ctx.local_mut(&a)[0] = k as u32 * 10 + ctx.pid() as u32;
                ctx.checkpoint(&k);
            }
            (k, ctx.local(&a)[0])
        }
    };
    rt.run(save(2)).unwrap();
    // Tear processor 1's file of the newest checkpoint.
    let newest = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with("pid000001.bsp"))
        .max()
        .unwrap();
    let bytes = std::fs::read(&newest).unwrap();
    std::fs::write(&newest, &bytes[..bytes.len() - 5]).unwrap();
    let out = rt.run(save(0)).unwrap();
    // The checkpoint of k = 1 stands: each processor's a[0] = 10 + pid.
    let got: Vec<(u64, u32)> = out.all().unwrap().to_vec();
    assert_eq!(got, [(1, 10), (1, 11), (1, 12)]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_checkpoint_of_another_run_is_a_clear_error() {
    if inside_mpirun() {
        return;
    }
    let dir = fresh_dir("other");
    let saved = Runtime::threads(2)
        .with_checkpoint_dir(&dir)
        .run(|ctx| {
            let _ = ctx.coarray::<u8>(4);
            ctx.checkpoint(&"two processors");
            ctx.stats().checkpoints
        })
        .unwrap();
    // Each processor's statistics name its checkpoint and its file's size:
    // the coarray's 4 bytes and the state's 15, with the lengths, names
    // and checksum around them.
    for (pid, checkpoints) in saved.iter_with_pids() {
        let file = dir.join(format!("step000000000000-pid{pid:06}.bsp"));
        let on_disk = std::fs::metadata(&file).unwrap().len();
        assert!(
            checkpoints.len() == 1
                && checkpoints[0].superstep == 0
                && checkpoints[0].bytes == on_disk
                && on_disk > 4 + 15,
            "{checkpoints:?}, {on_disk} bytes on disk"
        );
    }
    let err = Runtime::threads(3)
        .with_checkpoint_dir(&dir)
        .run(|ctx| ctx.restore::<String>())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config, "{err}");
    assert!(
        err.message()
            .contains("written by 2 processors, this run has 3"),
        "{err}"
    );
    let err = Runtime::threads(2)
        .with_checkpoint_dir(&dir)
        .run(|ctx| {
            let _ = ctx.queue::<u8>(); // not the coarray the checkpoint holds
            ctx.restore::<String>()
        })
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config, "{err}");
    assert!(
        err.message()
            .contains("registered other coarrays or queues"),
        "{err}"
    );
    let err = Runtime::threads(2)
        .with_checkpoint_dir(&dir)
        .run(|ctx| {
            let _ = ctx.coarray::<u8>(4);
            ctx.restore::<Vec<u64>>()
        })
        .unwrap_err();
    assert!(
        err.message().contains(
            "saved a state of type &str, and the program restores a alloc::vec::Vec<u64>"
        ),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn misplaced_checkpoints_end_the_run_with_a_clear_error() {
    if inside_mpirun() {
        return;
    }
    let err = Runtime::threads(2)
        .run(|ctx| ctx.checkpoint(&1u8))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config, "{err}");
    assert!(err.message().contains("no checkpoint directory"), "{err}");
    let dir = fresh_dir("pending");
    let err = Runtime::threads(2)
        .with_checkpoint_dir(&dir)
        .run(|ctx| {
            let a = ctx.coarray::<u8>(1);
            ctx.put(0, &a, 0, &[1]);
            ctx.checkpoint(&1u8);
        })
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PendingCommunication, "{err}");
    assert!(err.message().contains("superstep boundary"), "{err}");
    // A directory that cannot be made: an I/O error naming processor and
    // superstep, on every processor alike.
    let err = Runtime::threads(2)
        .with_checkpoint_dir("/dev/null/bsp-checkpoints")
        .run(|ctx| {
            ctx.sync();
            ctx.checkpoint(&1u8);
        })
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io, "{err}");
    assert_eq!(err.superstep(), Some(1), "{err}");
    assert!(
        err.pid().is_some() && err.message().contains("cannot write"),
        "{err}"
    );
    // Without a directory there is nothing to restore.
    let fresh = Runtime::threads(2).run(|ctx| ctx.restore::<u8>()).unwrap();
    assert_eq!(fresh.all(), Some(&[None, None][..]));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Under MPI: rank 1 of `mpirun -np 2` and `-np 3` kills itself with
/// SIGKILL at iteration 11; the job started again resumes from the
/// checkpoint of iteration 9, and every rank ends with the bytes of a
/// threads run of as many processors.
#[cfg(feature = "mpi")]
#[test]
fn an_mpi_rank_killed_mid_way_resumes_with_the_same_bytes() {
    if inside_mpirun() {
        return;
    }
    let exe = std::env::current_exe().expect("test binary path");
    let args = ["--exact", "child", "--nocapture", "--test-threads=1"];
    for np in [2, 3] {
        let plain_dir = fresh_dir(&format!("mpi-plain-{np}"));
        let uninterrupted = Runtime::threads(np)
            .with_checkpoint_dir(&plain_dir)
            .run(|ctx| program(ctx, None))
            .unwrap();
        std::fs::remove_dir_all(&plain_dir).unwrap();
        let dir = fresh_dir(&format!("mpi-{np}"));
        let procs = np.to_string();
        let job = |kill: &str| {
            let env = [
                (DIR_ENV, dir.to_str().unwrap()),
                (PROCS_ENV, procs.as_str()),
                (KILL_ENV, kill),
            ];
            support::mpirun(np, &exe, &args, &env, Duration::from_secs(120))
        };
        let Some(killed) = job("11") else {
            return; // no mpirun here
        };
        assert!(
            killed.status.is_some_and(|s| !s.success()),
            "np = {np}: the first job must end when rank 1 is killed\n{}",
            killed.stderr
        );
        let resumed = job("").expect("mpirun ran the first job");
        // A line may follow the test harness's own "test child ... " text.
        let mut got: Vec<&str> = resumed
            .stdout
            .lines()
            .filter_map(|l| l.find("result ").map(|at| &l[at..]))
            .collect();
        got.sort_unstable();
        let want = result_lines(&uninterrupted);
        assert!(
            resumed.status.is_some_and(|s| s.success())
                && got == want
                && resumed.stdout.contains("restored 0: Some(9)"),
            "np = {np}: the resumed job must end as an uninterrupted run:\nwant {want:?}\ngot {got:?}\nstderr {}",
            resumed.stderr
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
