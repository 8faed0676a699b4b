//! Property tests of the random access primitives of `bsp-algos` against
//! sequential oracles, on uniform, skewed and hot-spot access patterns.

mod support;

use bsp::algos::{self, Block, Collision, Combine, Conflict, First, Last, Unique};
use bsp::Runtime;
use proptest::prelude::*;
use support::{affine, describe, on_runtimes, run_local, Rng};

/// How destinations are drawn.
#[derive(Clone, Copy, Debug)]
enum Pattern {
    Uniform,
    /// Half the accesses go to one element.
    Hot,
    /// Every access goes to one element.
    Single,
    /// Geometric skew: small indices much more likely.
    Skewed,
}

fn pattern() -> impl Strategy<Value = Pattern> {
    prop_oneof![
        Just(Pattern::Uniform),
        Just(Pattern::Hot),
        Just(Pattern::Single),
        Just(Pattern::Skewed)
    ]
}

fn draw(rng: &mut Rng, pattern: Pattern, len: usize) -> usize {
    match pattern {
        Pattern::Uniform => rng.below(len),
        Pattern::Hot if rng.below(2) == 0 => len / 3,
        Pattern::Hot => rng.below(len),
        Pattern::Single => len - 1,
        Pattern::Skewed => (rng.below(len) >> rng.below(12)).min(len - 1),
    }
}

/// Processor `q`'s accesses: destinations and values (values drawn from a
/// few so that `Unique` sees both equal and different collisions).
fn accesses(
    seed: u64,
    q: usize,
    max: usize,
    len: usize,
    pattern: Pattern,
) -> (Vec<usize>, Vec<[u32; 2]>) {
    if len == 0 {
        return (Vec::new(), Vec::new());
    }
    let mut rng = Rng(seed ^ (q as u64).wrapping_mul(0x9e37));
    let n = rng.below(max + 1);
    let index = (0..n).map(|_| draw(&mut rng, pattern, len)).collect();
    let value = (0..n)
        .map(|_| [rng.below(3) as u32 * 2 + 1, rng.below(4) as u32])
        .collect();
    (index, value)
}

fn initial(len: usize) -> Vec<[u32; 2]> {
    (0..len as u32).map(|i| [i, i.wrapping_mul(7)]).collect()
}

/// The sequential RAW: writes in global writer order.
fn oracle_raw<C: Collision<[u32; 2]>>(
    all: &[(Vec<usize>, Vec<[u32; 2]>)],
    len: usize,
    policy: &C,
) -> Result<Vec<[u32; 2]>, Conflict> {
    let mut a = initial(len);
    let mut written = vec![false; len];
    let mut conflict: Option<usize> = None;
    for (index, value) in all {
        for (&g, &v) in index.iter().zip(value) {
            if written[g] {
                match policy.resolve(a[g], v) {
                    Some(x) => a[g] = x,
                    None => conflict = Some(conflict.map_or(g, |c| c.min(g))),
                }
            } else {
                a[g] = v;
                written[g] = true;
            }
        }
    }
    match conflict {
        Some(index) => Err(Conflict { index }),
        None => Ok(a),
    }
}

fn check_raw<C: Collision<[u32; 2]>>(
    rt: &Runtime,
    len: usize,
    max: usize,
    seed: u64,
    pattern: Pattern,
    policy: &C,
) {
    let p = rt.nprocs();
    let all: Vec<_> = (0..p)
        .map(|q| accesses(seed, q, max, len, pattern))
        .collect();
    let want = oracle_raw(&all, len, policy);
    for direct in [false, true] {
        let out = run_local(rt, |ctx| {
            let dist = Block::new(len, ctx.nprocs());
            let mut a = initial(len)[dist.range(ctx.pid())].to_vec();
            let (index, value) = accesses(seed, ctx.pid(), max, len, pattern);
            let r = if direct {
                algos::variants::raw_direct(ctx, &mut a, len, &index, &value, policy)
            } else {
                algos::raw(ctx, &mut a, len, &index, &value, policy)
            };
            r.map(|()| a)
        });
        match &want {
            Ok(a) => {
                let dist = Block::new(len, p);
                for (q, r) in out {
                    assert_eq!(
                        r.unwrap(),
                        a[dist.range(q)],
                        "raw (direct: {direct}) on {q}, {pattern:?}"
                    );
                }
            }
            Err(c) => {
                for (q, r) in out {
                    assert_eq!(r.unwrap_err(), *c, "raw conflict (direct: {direct}) on {q}");
                }
            }
        }
    }
}

fn check_rar(rt: &Runtime, len: usize, max: usize, seed: u64, pattern: Pattern) {
    let data = initial(len);
    for direct in [false, true] {
        let out = run_local(rt, |ctx| {
            let dist = Block::new(len, ctx.nprocs());
            let d = data[dist.range(ctx.pid())].to_vec();
            let (index, _) = accesses(seed, ctx.pid(), max, len, pattern);
            if direct {
                algos::variants::rar_direct(ctx, &d, len, &index)
            } else {
                algos::rar(ctx, &d, len, &index)
            }
        });
        for (q, got) in out {
            let (index, _) = accesses(seed, q, max, len, pattern);
            let want: Vec<_> = index.iter().map(|&g| data[g]).collect();
            assert_eq!(got, want, "rar (direct: {direct}) on {q}, {pattern:?}");
        }
    }
}

proptest! {
    #![proptest_config(support::proptest_config(32))]

    #[test]
    fn raw_matches_oracle(p in 1usize..=16, len in 0usize..400, max in 0usize..300, seed: u64, pattern in pattern(), policy in 0u8..4) {
        on_runtimes(60, &[p], move |rt| match policy {
            0 => check_raw(rt, len, max, seed, pattern, &Combine(affine)),
            1 => check_raw(rt, len, max, seed, pattern, &First),
            2 => check_raw(rt, len, max, seed, pattern, &Last),
            _ => check_raw(rt, len, max, seed, pattern, &Unique),
        });
    }

    #[test]
    fn rar_matches_oracle(p in 1usize..=16, len in 0usize..400, max in 0usize..300, seed: u64, pattern in pattern()) {
        on_runtimes(60, &[p], move |rt| check_rar(rt, len, max, seed, pattern));
    }
}

#[test]
fn random_access_at_64_processors() {
    on_runtimes(120, &[64], |rt| {
        check_raw(rt, 1000, 200, 1, Pattern::Single, &Combine(affine));
        check_raw(rt, 5000, 100, 2, Pattern::Skewed, &Combine(affine));
        check_rar(rt, 1000, 200, 3, Pattern::Hot);
    });
}

/// A hot spot must be spread: with every write to one element, no
/// processor receives much more than its share in any superstep.
#[test]
fn hot_spot_is_stretched() {
    on_runtimes(60, &[8], |rt| {
        let (p, per) = (rt.nprocs(), 4000usize);
        let len = p * 1000;
        for single in [true, false] {
            let (_, stats) = run_local(rt, |ctx| {
                let index = vec![if single { 17 } else { ctx.pid() * 1000 + 3 }; per];
                let value = vec![1u64; per];
                let dist = Block::new(len, ctx.nprocs());
                let mut a = vec![0u64; dist.local_len(ctx.pid())];
                algos::raw(ctx, &mut a, len, &index, &value, &Combine(algos::Sum)).unwrap();
                ctx.sync();
                let expect = if single { (p * per) as u64 } else { per as u64 };
                assert_eq!(
                    a.iter().sum::<u64>(),
                    if single && ctx.pid() != 0 { 0 } else { expect }
                );
                ctx.stats()
            })
            .remove(0);
            // Every processor's statistics hold every processor's figures.
            let worst = stats
                .supersteps
                .iter()
                .map(|s| s.recv_bytes.iter().copied().max().unwrap_or(0))
                .max()
                .unwrap();
            // 16 bytes per write; the mean share is `per` writes.
            let share = (per * 16) as u64;
            assert!(
                worst < share * 3 / 2,
                "{}: a processor received {worst} bytes, share {share}",
                describe(rt)
            );
        }
    });
}
