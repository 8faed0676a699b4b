//! Cross-transport determinism: a program of random puts, gets and sends
//! (Pod and serde queues, coarrays of different local lengths, both
//! routers) produces the same bytes on every processor on threads and on
//! MPI for the same p. Each processor reduces everything it holds after
//! each superstep — coarray contents, get results, received messages with
//! their sources, and every non-time statistic — to a fingerprint; the test
//! compares the fingerprints of `mpirun -np p` jobs (p = 1..4) with those of
//! the threads transport. Skipped, with a note, when `mpirun` is missing.

mod support;

use std::time::Duration;

use bsp::{Ctx, Router, Runtime};

const SCENARIO_ENV: &str = "BSP_TEST_FINGERPRINT";

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

struct Hasher(u64);

impl Hasher {
    fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 = (self.0 ^ u64::from(x)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn word(&mut self, w: u64) {
        self.bytes(&w.to_le_bytes());
    }
}

/// Local length of the coarray on processor `q`: different per processor.
fn local_len(q: usize) -> usize {
    5 + 3 * q
}

/// The program: 4 supersteps of random traffic; returns the fingerprints
/// of the data (router-independent) and of the statistics.
fn fingerprint(ctx: &mut Ctx, seed: u64) -> (u64, u64) {
    let (me, p) = (ctx.pid(), ctx.nprocs());
    let a = ctx.coarray_from((0..local_len(me)).map(|i| (me * 100 + i) as u32).collect());
    let q = ctx.queue::<u64>();
    let words = ctx.serde_queue::<(u16, String)>();
    let mut h = Hasher(0xcbf2_9ce4_8422_2325);
    let mut r = mix(seed ^ me as u64);
    let mut next = move || {
        r = mix(r);
        r
    };
    for step in 0..4 {
        let mut gets = Vec::new();
        for _ in 0..(next() % 12) {
            let dst = (next() % p as u64) as usize;
            let len = local_len(dst);
            let off = (next() % len as u64) as usize;
            let n = (next() % (len - off) as u64) as usize + 1;
            match next() % 4 {
                0 => {
                    let data: Vec<u32> = (0..n).map(|_| next() as u32).collect();
                    ctx.put(dst, &a, off, &data);
                }
                1 => gets.push(ctx.get(dst, &a, off, n)),
                2 => ctx.send(dst, &q, &next()),
                _ => ctx.send(dst, &words, &(step as u16, "w".repeat(n))),
            }
        }
        ctx.sync();
        h.bytes(bytemuck::cast_slice(ctx.local(&a)));
        for g in gets {
            h.bytes(bytemuck::cast_slice(&ctx.take(g)));
        }
        for (src, m) in ctx.receive_with_source(&q) {
            h.word(src as u64);
            h.word(m);
        }
        for (src, (s, w)) in ctx.receive_with_source(&words) {
            h.word(src as u64);
            h.word(u64::from(s));
            h.bytes(w.as_bytes());
        }
    }
    ctx.sync();
    let data = h.0;
    let mut h = Hasher(data);
    for s in ctx.stats().supersteps {
        for v in [
            &s.sent_bytes,
            &s.recv_bytes,
            &s.sent_records,
            &s.recv_records,
            &s.first_block_bytes,
            &s.second_block_bytes,
            &s.router_header_bytes,
        ] {
            v.iter().for_each(|&x| h.word(x));
        }
    }
    (data, h.0)
}

const SEEDS: [u64; 3] = [1, 2, 0xdead_beef];

/// The job side: prints `fingerprint <router> <seed> <pid> <hash>` lines.
#[test]
fn scenario() {
    if std::env::var_os(SCENARIO_ENV).is_none() {
        return;
    }
    #[cfg(feature = "mpi")]
    for router in [Router::TwoPhase, Router::Direct, Router::Transportation] {
        let rt = Runtime::mpi().with_router(router);
        for seed in SEEDS {
            let mine = rt.run(|ctx| (ctx.pid(), fingerprint(ctx, seed))).unwrap();
            for (pid, (data, stats)) in mine {
                println!("fingerprint {router} {seed} {pid} {data:016x} {stats:016x}");
            }
        }
    }
}

fn threads_lines(p: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for router in [Router::TwoPhase, Router::Direct, Router::Transportation] {
        for seed in SEEDS {
            let all = Runtime::threads(p)
                .with_router(router)
                .run(|ctx| fingerprint(ctx, seed))
                .unwrap();
            for (pid, (data, stats)) in all.into_iter().enumerate() {
                lines.push(format!(
                    "fingerprint {router} {seed} {pid} {data:016x} {stats:016x}"
                ));
            }
        }
    }
    lines.sort();
    lines
}

#[test]
fn routers_agree_on_threads() {
    // The deliveries (not the router statistics) are router-independent.
    for p in [1, 2, 3, 5] {
        for seed in SEEDS {
            let run = |router| {
                Runtime::threads(p)
                    .with_router(router)
                    .run(|ctx| fingerprint(ctx, seed))
                    .unwrap()
            };
            let (two, direct) = (run(Router::TwoPhase), run(Router::Direct));
            assert_eq!(two, run(Router::TwoPhase), "p = {p}: not repeatable");
            let data = |v: &bsp::Outcome<(u64, u64)>| v.iter().map(|x| x.0).collect::<Vec<_>>();
            assert_eq!(
                data(&two),
                data(&direct),
                "p = {p}, seed {seed}: routers differ"
            );
        }
    }
}

#[test]
fn threads_and_mpi_produce_identical_bytes() {
    if !cfg!(feature = "mpi") {
        eprintln!("note: built without feature `mpi`; skipping the MPI side");
        return;
    }
    let exe = std::env::current_exe().expect("test binary path");
    for p in 1..=4 {
        let Some(run) = support::mpirun(
            p,
            &exe,
            &["--exact", "scenario", "--nocapture", "--test-threads=1"],
            &[(SCENARIO_ENV, "1")],
            Duration::from_secs(120),
        ) else {
            return;
        };
        assert_eq!(
            run.status.map(|s| s.success()),
            Some(true),
            "p = {p}: mpirun failed\n{}",
            run.stderr
        );
        let mut mpi: Vec<String> = run
            .stdout
            .lines()
            // libtest's `test scenario ... ` may precede the first line.
            .filter_map(|l| l.find("fingerprint ").map(|i| l[i..].to_owned()))
            .collect();
        mpi.sort();
        let threads = threads_lines(p);
        assert_eq!(mpi.len(), threads.len(), "p = {p}: output\n{}", run.stdout);
        assert_eq!(mpi, threads, "p = {p}: threads and MPI differ");
    }
}
