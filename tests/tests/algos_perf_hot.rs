//! Traffic bounds of the random access primitives at hot spots, read from
//! the superstep statistics: however the accesses are skewed, no processor
//! sends or receives much more than its share. On the shared harness
//! (`tests/support`): threads with both routers, or the MPI world under
//! `mpirun`.

mod support;

use bsp::algos::{self, Block, Combine, Sum};
use bsp::{Runtime, Stats};
use support::{describe, on_runtimes, run_local};

/// Runs `f` on `rt` and returns the statistics it returns on the first
/// processor this process sees (every processor's statistics hold every
/// processor's figures).
fn stats_of(rt: &Runtime, f: impl Fn(&mut bsp::Ctx) -> Stats + Sync) -> Stats {
    run_local(rt, f).remove(0).1
}

/// Asserts that no processor sent or received, in any superstep, half
/// again as many bytes as `share`.
fn assert_near_share(rt: &Runtime, stats: &Stats, share: u64, what: &str) {
    let worst = stats
        .supersteps
        .iter()
        .flat_map(|s| s.sent_bytes.iter().chain(&s.recv_bytes).copied())
        .max()
        .unwrap_or(0);
    assert!(
        worst < share * 3 / 2,
        "{}: {what}: a processor moved {worst} bytes, share {share}",
        describe(rt)
    );
}

/// Every processor reads all elements of one bucket-wide range: a hot
/// bucket with many distinct elements, stretched over every processor.
/// Its owner sends the bucket's data once (in slices), not once per
/// intermediate.
#[test]
fn rar_hot_bucket_with_many_elements() {
    on_runtimes(120, &[16], |rt| {
        let per = 4096usize;
        let len = rt.nprocs() * 65536;
        let stats = stats_of(rt, |ctx| {
            let dist = Block::new(len, ctx.nprocs());
            let data: Vec<u64> = dist.range(ctx.pid()).map(|g| g as u64 * 3).collect();
            let index: Vec<usize> = (0..per).map(|i| (i * 7 + ctx.pid()) % per).collect();
            let got = algos::rar(ctx, &data, len, &index);
            assert!(got.iter().zip(&index).all(|(&v, &g)| v == g as u64 * 3));
            ctx.stats()
        });
        // The share: `per` values of 8 bytes (requests are 4-byte offsets).
        assert_near_share(rt, &stats, (per * 8) as u64, "rar");
    });
}

/// Zipf-like writes (many hot elements of decreasing heat) and writes all
/// to one bucket: RAW keeps every processor near its share.
#[test]
fn raw_skewed_writes_stay_near_the_share() {
    on_runtimes(120, &[8], |rt| {
        let (p, per) = (rt.nprocs(), 20_000usize);
        let len = p * per;
        for pattern in ["zipf", "bucket"] {
            let stats = stats_of(rt, |ctx| {
                let me = ctx.pid();
                let index: Vec<usize> = (0..per)
                    .map(|i| {
                        let r = (i * p + me) as u64;
                        match pattern {
                            // rank ~ 1 / u: a few very hot, many lukewarm
                            "zipf" => {
                                ((len as u64 / (r % len as u64 + 1)) * 2_654_435_761 % len as u64)
                                    as usize
                            }
                            _ => (r % 500) as usize,
                        }
                    })
                    .collect();
                let dist = Block::new(len, p);
                let mut a = vec![0u64; dist.local_len(me)];
                let ones = vec![1u64; per];
                algos::raw(ctx, &mut a, len, &index, &ones, &Combine(Sum)).unwrap();
                let mut total = [a.iter().sum::<u64>()];
                algos::all_reduce(ctx, &mut total, &Sum);
                assert_eq!(total[0], (p * per) as u64);
                ctx.stats()
            });
            // The share: `per` writes of 12 bytes (4-byte offset, 8-byte value).
            assert_near_share(rt, &stats, (per * 12) as u64, pattern);
        }
    });
}
