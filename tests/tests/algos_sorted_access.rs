//! Property tests of monotonic RAW, generalize, concentrate, distribute
//! and histogram against sequential oracles.

mod support;

use bsp::algos::{self, Block, Combine};
use bsp::Runtime;
use proptest::prelude::*;
use support::{affine, on_runtimes, run_local, Rng};

/// Processor `q`'s sorted destinations (globally sorted: processor q draws
/// from its slice of `0..len`, overlapping its neighbours' so that runs
/// cross processors) and values.
fn sorted_writes(
    seed: u64,
    q: usize,
    p: usize,
    len: usize,
    max: usize,
) -> (Vec<usize>, Vec<[u32; 2]>) {
    if len == 0 {
        return (Vec::new(), Vec::new());
    }
    let mut rng = Rng(seed ^ (q as u64 + 1).wrapping_mul(0x51));
    let n = rng.below(max + 1);
    // Boundaries shared by neighbours: q's range is [cut(q), cut(q + 1)].
    let cut = |q: usize| (len - 1) * q / p;
    let (lo, hi) = (cut(q), cut(q + 1));
    let mut index: Vec<usize> = (0..n).map(|_| lo + rng.below(hi - lo + 1)).collect();
    index.sort_unstable();
    let value = (0..n)
        .map(|_| [rng.next_u64() as u32 | 1, rng.next_u64() as u32])
        .collect();
    (index, value)
}

fn check_monotonic(rt: &Runtime, len: usize, max: usize, seed: u64) {
    let p = rt.nprocs();
    let mut want: Vec<[u32; 2]> = (0..len as u32).map(|i| [i, 0]).collect();
    let mut written = vec![false; len];
    for q in 0..p {
        let (index, value) = sorted_writes(seed, q, p, len, max);
        for (g, v) in index.into_iter().zip(value) {
            want[g] = if written[g] { affine(want[g], v) } else { v };
            written[g] = true;
        }
    }
    let out = run_local(rt, |ctx| {
        let dist = Block::new(len, ctx.nprocs());
        let mut a: Vec<[u32; 2]> = dist.range(ctx.pid()).map(|i| [i as u32, 0]).collect();
        let (index, value) = sorted_writes(seed, ctx.pid(), ctx.nprocs(), len, max);
        algos::monotonic_raw(ctx, &mut a, len, &index, &value, &Combine(affine)).unwrap();
        a
    });
    assert_blocks(&out, &want, p);
}

fn check_generalize(rt: &Runtime, len: usize, max: usize, seed: u64) {
    let p = rt.nprocs();
    let mut want: Vec<[u32; 2]> = (0..len as u32).map(|i| [i, 0]).collect();
    let mut lo = 0;
    for q in 0..p {
        let (ends, value) = sorted_writes(seed, q, p, len, max);
        for (e, v) in ends.into_iter().zip(value) {
            for x in want.iter_mut().take(e + 1).skip(lo) {
                *x = v;
            }
            lo = lo.max(e + 1);
        }
    }
    let out = run_local(rt, |ctx| {
        let dist = Block::new(len, ctx.nprocs());
        let mut a: Vec<[u32; 2]> = dist.range(ctx.pid()).map(|i| [i as u32, 0]).collect();
        let (ends, value) = sorted_writes(seed, ctx.pid(), ctx.nprocs(), len, max);
        algos::generalize(ctx, &mut a, len, &ends, &value);
        a
    });
    assert_blocks(&out, &want, p);
}

fn check_pack(rt: &Runtime, max: usize, seed: u64, density: usize) {
    let p = rt.nprocs();
    let input = |q: usize| {
        let mut rng = Rng(seed ^ (q as u64) << 7);
        let n = rng.below(max + 1);
        let data: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
        let keep: Vec<bool> = (0..n).map(|_| rng.below(100) < density).collect();
        (data, keep)
    };
    let mut kept = Vec::new();
    let mut masks = Vec::new();
    for q in 0..p {
        let (d, k) = input(q);
        kept.extend(d.iter().zip(&k).filter(|(_, &k)| k).map(|(&x, _)| x));
        masks.push(k);
    }
    let out = run_local(rt, |ctx| {
        let (data, keep) = input(ctx.pid());
        let packed = algos::concentrate(ctx, &data, &keep);
        let back = algos::distribute(ctx, &packed, &keep, u64::MAX);
        (packed, back)
    });
    let dist = Block::new(kept.len(), p);
    for (q, (packed, back)) in out {
        assert_eq!(packed, kept[dist.range(q)], "concentrate on {q}");
        let (data, keep) = input(q);
        let want: Vec<u64> = data
            .iter()
            .zip(&keep)
            .map(|(&x, &k)| if k { x } else { u64::MAX })
            .collect();
        assert_eq!(back, want, "distribute on {q}");
    }
}

fn check_histogram(rt: &Runtime, bins: usize, max: usize, seed: u64, hot: bool) {
    let p = rt.nprocs();
    let items = |q: usize| {
        let mut rng = Rng(seed.wrapping_mul(q as u64 + 3));
        let n = rng.below(max + 1);
        (0..n)
            .map(|_| {
                if hot && rng.below(2) == 0 {
                    7
                } else {
                    rng.next_u64() as u32
                }
            })
            .collect::<Vec<u32>>()
    };
    let mut want = vec![0u64; bins];
    for q in 0..p {
        for x in items(q) {
            want[x as usize % bins] += 1;
        }
    }
    let out = run_local(rt, |ctx| {
        let mine = items(ctx.pid());
        algos::histogram(ctx, &mine, bins, |&x| x as usize % bins)
    });
    assert_blocks(&out, &want, p);
}

proptest! {
    #![proptest_config(support::proptest_config(24))]

    #[test]
    fn monotonic_raw_matches_oracle(p in 1usize..=16, len in 0usize..300, max in 0usize..200, seed: u64) {
        on_runtimes(60, &[p], move |rt| check_monotonic(rt, len, max, seed));
    }

    #[test]
    fn generalize_matches_oracle(p in 1usize..=16, len in 0usize..300, max in 0usize..40, seed: u64) {
        on_runtimes(60, &[p], move |rt| check_generalize(rt, len, max, seed));
    }

    #[test]
    fn concentrate_and_distribute_match_oracle(p in 1usize..=16, max in 0usize..60, seed: u64, density in 0usize..=100) {
        on_runtimes(60, &[p], move |rt| check_pack(rt, max, seed, density));
    }

    #[test]
    fn histogram_matches_oracle(p in 1usize..=16, bins in 1usize..20000, max in 0usize..2000, seed: u64, hot: bool) {
        on_runtimes(60, &[p], move |rt| check_histogram(rt, bins, max, seed, hot));
    }
}

/// Checks that each visible processor holds its block of `want`
/// (block-distributed over p processors).
fn assert_blocks<T: PartialEq + std::fmt::Debug>(out: &[(usize, Vec<T>)], want: &[T], p: usize) {
    let dist = Block::new(want.len(), p);
    for (q, got) in out {
        assert_eq!(got[..], want[dist.range(*q)], "block of processor {q}");
    }
}

#[test]
fn sorted_access_at_64_processors() {
    on_runtimes(120, &[64], |rt| {
        check_monotonic(rt, 500, 50, 1);
        check_generalize(rt, 500, 10, 2);
        check_pack(rt, 20, 3, 50);
        check_histogram(rt, 100_000, 300, 4, true);
    });
}
