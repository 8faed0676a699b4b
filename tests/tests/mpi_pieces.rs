//! Large blocks under MPI: MPI counts are `int`s, so the MPI transport
//! sends a block of 2³¹ bytes or more (and, inside a collective, a block
//! over a p-th of that) point to point, cut into pieces under the limit.
//!
//! Each scenario runs as a small job under `mpirun` (this test binary,
//! re-launched with `BSP_TEST_SCENARIO` set). [`pieces_on_every_path`]
//! lowers the piece limit to a few hundred bytes (`BSP_MPI_PIECE`, for
//! testing only) so that blocks of kilobytes take the paths of gigabytes,
//! on every way an exchange can go (counted exchanges, placed and staged
//! receives, both routers).
//! [`more_than_2_gib_between_two_ranks`] really moves 2.2 GB from one rank
//! to another (about 7 GB of memory, 4 minutes on 2 cores): it is ignored
//! unless asked for, `cargo test -p bsp-tests --features mpi --test
//! mpi_pieces -- --ignored`. Skipped, with a note, without `mpirun`.

mod support;

use std::time::Duration;

use bsp::{Ctx, Router, Runtime};

const SCENARIO_ENV: &str = "BSP_TEST_SCENARIO";
const PIECE_ENV: &str = "BSP_MPI_PIECE";

/// The piece limit of [`pieces_on_every_path`]: a block above a third of
/// it (at np = 3) leaves the collective, one above it is cut.
const PIECE: usize = 1000;

/// Block lengths around the limits at np = 2 and 3 (a half and a third of
/// [`PIECE`], [`PIECE`] itself), and well above them.
const SIZES: [usize; 12] = [
    0, 1, 333, 334, 500, 501, 999, 1000, 1001, 2999, 40_000, 100_003,
];

/// Block lengths around the eager cut of one node (the default piece
/// limit): one eager message (4096 − 128 bytes) and 64 KiB, the largest
/// block cut into eager messages.
const EAGER_SIZES: [usize; 10] = [
    3967, 3968, 3969, 4096, 8000, 20_000, 65_535, 65_536, 65_537, 100_000,
];

/// The ways an exchange can go, as the environment that selects each.
const MODES: [&[(&str, &str)]; 3] = [
    &[],
    &[("BSP_MPI_RECEIVE", "placed")],
    &[("BSP_MPI_RECEIVE", "staged")],
];

/// The byte at `i` of what `src` sends `dst` in superstep `step`.
fn byte(step: usize, src: usize, dst: usize, i: usize) -> u8 {
    (i.wrapping_mul(131) ^ (i >> 8) ^ (step * 7 + src * 31 + dst * 17)) as u8
}

fn bytes(step: usize, src: usize, dst: usize, len: usize) -> Vec<u8> {
    (0..len).map(|i| byte(step, src, dst, i)).collect()
}

/// One superstep per length of `sizes`, each moving blocks of about that
/// length between every pair of processors in every way: a put of a
/// vector, a put straight from a coarray, a message, and (every other
/// superstep, so that the others may be placed) a get. Returns what
/// arrived wrong, empty when all is well.
fn traffic(ctx: &mut Ctx, sizes: &[usize]) -> Vec<String> {
    let (me, p) = (ctx.pid(), ctx.nprocs());
    let most = sizes.iter().copied().max().unwrap_or(0);
    let put = ctx.coarray::<u8>(p * most);
    let from = ctx.coarray::<u8>(p * most);
    let placed = ctx.coarray::<u8>(p * most);
    let q = ctx.serde_queue::<Vec<u8>>();
    let mut wrong = Vec::new();
    for (step, &len) in sizes.iter().enumerate() {
        for dst in 0..p {
            ctx.local_mut(&from)[dst * most..dst * most + len]
                .copy_from_slice(&bytes(step, me, dst, len));
        }
        for dst in 0..p {
            ctx.put_vec(dst, &put, me * most, bytes(step, me, dst, len));
            ctx.put_from(dst, &placed, me * most, &from, dst * most..dst * most + len);
            ctx.send(dst, &q, &bytes(step, me, dst, len / 2));
        }
        let right = (me + 1) % p;
        let got = (step % 2 == 1).then(|| ctx.get(right, &from, me * most, len));
        ctx.sync();
        for src in 0..p {
            let want = bytes(step, src, me, len);
            for (what, c) in [("put_vec", &put), ("put_from", &placed)] {
                if ctx.local(c)[src * most..src * most + len] != want[..] {
                    wrong.push(format!("step {step} ({len} bytes): {what} from {src}"));
                }
            }
        }
        let mut messages = ctx.receive_with_source(&q);
        messages.sort_by_key(|(src, _)| *src);
        let want: Vec<(usize, Vec<u8>)> = (0..p)
            .map(|src| (src, bytes(step, src, me, len / 2)))
            .collect();
        if messages != want {
            wrong.push(format!("step {step} ({len} bytes): messages"));
        }
        if let Some(got) = got {
            if ctx.take(got) != bytes(step, right, me, len) {
                wrong.push(format!("step {step} ({len} bytes): get from {right}"));
            }
        }
    }
    wrong
}

/// The job side: runs the scenario named by `BSP_TEST_SCENARIO` on the MPI
/// world. Without the variable (a plain `cargo test`) it does nothing.
#[test]
fn scenario() {
    let Ok(name) = std::env::var(SCENARIO_ENV) else {
        return;
    };
    let world = Runtime::from_env();
    for router in [Router::TwoPhase, Router::Direct] {
        let rt = world.clone().with_router(router);
        match name.as_str() {
            "pieces" => support::check(&rt, |ctx| traffic(ctx, &SIZES), |_, _| Vec::new()),
            "eager" => support::check(&rt, |ctx| traffic(ctx, &EAGER_SIZES), |_, _| Vec::new()),
            "large" => support::check(&rt, two_gib, |_, _| true),
            other => panic!("unknown scenario {other:?}"),
        }
    }
    println!("scenario {name} done");
}

/// Runs scenario `name` on `np` ranks with extra environment variables,
/// and asserts that it ran clean; `false` when MPI tests are skipped.
fn job(name: &str, np: usize, env: &[(&str, &str)], limit: Duration) -> bool {
    let exe = std::env::current_exe().expect("test binary path");
    let mut all = vec![(SCENARIO_ENV, name)];
    all.extend_from_slice(env);
    let Some(run) = support::mpirun(
        np,
        &exe,
        &["--exact", "scenario", "--nocapture", "--test-threads=1"],
        &all,
        limit,
    ) else {
        return false;
    };
    assert!(
        run.status.is_some_and(|s| s.success())
            && run.stdout.matches(&format!("scenario {name} done")).count() == np,
        "scenario {name} on {np} ranks with {env:?}: {}\nstdout:\n{}\nstderr:\n{}",
        run.status
            .map_or("killed at the time limit".to_owned(), |s| s.to_string()),
        run.stdout,
        run.stderr
    );
    true
}

#[test]
fn pieces_on_every_path() {
    let piece = PIECE.to_string();
    for np in [2, 3] {
        for mode in MODES {
            let mut env = vec![(PIECE_ENV, piece.as_str())];
            env.extend_from_slice(mode);
            if !job("pieces", np, &env, Duration::from_secs(120)) {
                return;
            }
        }
    }
}

/// On one node, blocks from one eager message to 64 KiB travel as several
/// eager messages (with the default piece limit), on every path.
#[test]
fn eager_messages_on_every_path() {
    for np in [2, 3] {
        for mode in MODES {
            if !job("eager", np, mode, Duration::from_secs(120)) {
                return;
            }
        }
    }
}

#[test]
fn a_piece_limit_out_of_range_is_a_configuration_error() {
    for bad in ["0", "2147483648", "lots"] {
        let exe = std::env::current_exe().expect("test binary path");
        let env = [(SCENARIO_ENV, "pieces"), (PIECE_ENV, bad)];
        let args = ["--exact", "scenario", "--nocapture", "--test-threads=1"];
        let Some(run) = support::mpirun(1, &exe, &args, &env, Duration::from_secs(60)) else {
            return;
        };
        let want =
            format!("{PIECE_ENV}=\"{bad}\": expected a number of bytes from 1 to 2147483647");
        assert!(
            run.status.is_some_and(|s| !s.success()) && run.stderr.contains(&want),
            "{PIECE_ENV}={bad}: no {want:?} in\n{}",
            run.stderr
        );
    }
}

/// Bytes rank 0 sends rank 1 in [`two_gib`]: two puts of 1.1 GB, as two
/// legal `bsp_put`s of BSPlib would be (its sizes are `int`s), 2.2 GB in
/// all, over MPI's 2³¹ − 1.
const HALF: usize = 1_100_000_000;

/// The byte at `i` of [`two_gib`]'s data: a period (251) prime to the
/// piece limit, and the gigabyte folded in, so that a piece out of place
/// shows.
fn big_byte(i: usize) -> u8 {
    (i % 251) as u8 ^ (i >> 30) as u8
}

/// Rank 0 puts 2.2 GB into rank 1's coarray in one superstep (a put from
/// a coarray and a put of a vector, 1.1 GB each), and rank 1 checks every
/// byte. Returns whether all arrived.
fn two_gib(ctx: &mut Ctx) -> bool {
    assert_eq!(ctx.nprocs(), 2, "the 2 GiB scenario runs on 2 ranks");
    let me = ctx.pid();
    let a = ctx.coarray::<u8>(if me == 0 { HALF } else { 2 * HALF });
    if me == 0 {
        for (i, b) in ctx.local_mut(&a).iter_mut().enumerate() {
            *b = big_byte(i);
        }
        ctx.put_from(1, &a, 0, &a, ..HALF);
        ctx.put_vec(1, &a, HALF, (HALF..2 * HALF).map(big_byte).collect());
    }
    ctx.sync();
    me == 0
        || ctx
            .local(&a)
            .iter()
            .enumerate()
            .all(|(i, &b)| b == big_byte(i))
}

#[test]
#[ignore = "moves 2.2 GB between two ranks (about 7 GB of memory, 4 minutes): run with --ignored"]
fn more_than_2_gib_between_two_ranks() {
    for mode in [&[][..], &[("BSP_MPI_RECEIVE", "staged")]] {
        if !job("large", 2, mode, Duration::from_secs(600)) {
            return;
        }
    }
}
