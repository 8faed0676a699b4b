//! Traffic bounds of the random access primitives at hot spots, read from
//! the superstep statistics (threads transport): however the accesses are
//! skewed, no processor sends or receives much more than its share.

use bsp::algos::{self, Block, Combine, Sum};
use bsp::{Runtime, Stats};

/// The most bytes any processor sent or received in any superstep.
fn worst(stats: &Stats) -> u64 {
    stats
        .supersteps
        .iter()
        .flat_map(|s| s.sent_bytes.iter().chain(&s.recv_bytes).copied())
        .max()
        .unwrap_or(0)
}

/// Every processor reads all elements of one bucket-wide range: a hot
/// bucket with many distinct elements, stretched over every processor.
/// Its owner sends the bucket's data once (in slices), not once per
/// intermediate.
#[test]
fn rar_hot_bucket_with_many_elements() {
    let (p, per) = (16usize, 4096usize);
    let len = p * 65536;
    let stats = Runtime::threads(p)
        .run(|ctx| {
            let dist = Block::new(len, ctx.nprocs());
            let data: Vec<u64> = dist.range(ctx.pid()).map(|g| g as u64 * 3).collect();
            let index: Vec<usize> = (0..per).map(|i| (i * 7 + ctx.pid()) % per).collect();
            let got = algos::rar(ctx, &data, len, &index);
            assert!(got.iter().zip(&index).all(|(&v, &g)| v == g as u64 * 3));
            ctx.stats()
        })
        .unwrap()
        .remove(0);
    // The share: `per` values of 8 bytes (requests are 4-byte offsets).
    let share = (per * 8) as u64;
    let w = worst(&stats);
    assert!(
        w < share * 3 / 2,
        "a processor moved {w} bytes, share {share}"
    );
}

/// Zipf-like writes (many hot elements of decreasing heat) and writes all
/// to one bucket: RAW keeps every processor near its share.
#[test]
fn raw_skewed_writes_stay_near_the_share() {
    let (p, per) = (8usize, 20_000usize);
    let len = p * per;
    for pattern in ["zipf", "bucket"] {
        let stats = Runtime::threads(p)
            .run(|ctx| {
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
            })
            .unwrap()
            .remove(0);
        // The share: `per` writes of 12 bytes (4-byte offset, 8-byte value).
        let share = (per * 12) as u64;
        let w = worst(&stats);
        assert!(
            w < share * 3 / 2,
            "{pattern}: a processor moved {w} bytes, share {share}"
        );
    }
}
