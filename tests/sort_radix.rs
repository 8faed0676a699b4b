//! Property tests of the distributed radix sort against a sequential
//! stable sort. Test bodies take the runtime as a parameter so that they
//! can run on every transport.

use std::cmp::Ordering;
use std::sync::mpsc;
use std::time::Duration;

use bsp::prelude::*;
use bsp::sort::inputs::{Dist, ALL};
use bsp::sort::{Delivery, RadixKey, RadixOptions, RadixSorter};
use proptest::prelude::*;

/// A record: key bits and its global input index (to check stability).
type Rec = [u64; 2];

/// Runs `body`, failing the test if it takes longer than `secs` seconds.
fn with_watchdog(secs: u64, body: impl FnOnce() + Send + 'static) {
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        body();
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) => worker.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(panic) = worker.join() {
                std::panic::resume_unwind(panic)
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("test did not finish within {secs} s"),
    }
}

fn float_cmp<F: Copy + PartialOrd>(
    a: &F,
    b: &F,
    nan: impl Fn(&F) -> bool,
    total: impl Fn(&F, &F) -> Ordering,
) -> Ordering {
    match (nan(a), nan(b)) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => total(a, b),
    }
}

/// Sorts `parts` (processor i's records) on `rt` by `key` and checks the
/// result against a sequential stable sort by `cmp`, and that the output is
/// congruent with the input.
fn check_records<K: RadixKey>(
    rt: &Runtime,
    parts: &[Vec<Rec>],
    key: fn(&Rec) -> K,
    cmp: fn(&K, &K) -> Ordering,
    options: RadixOptions,
) {
    // Both forms, on one sorter: the slice form, then the `Vec` form.
    let out = rt
        .run(|ctx| {
            let mut data = parts[ctx.pid()].clone();
            let mut sorter = RadixSorter::with_options(ctx, data.len(), options);
            sorter.sort_by_key(ctx, &mut data, key);
            let mut owned = parts[ctx.pid()].clone();
            sorter.sort_vec_by_key(ctx, &mut owned, key);
            (data, owned)
        })
        .expect("sort run failed");
    let (sliced, owned): (Vec<Vec<Rec>>, Vec<Vec<Rec>>) = out.into_iter().unzip();
    for (i, (o, p)) in sliced.iter().zip(parts).enumerate() {
        assert_eq!(o.len(), p.len(), "processor {i} changed its element count");
    }
    let mut expected: Vec<Rec> = parts.concat();
    expected.sort_by(|a, b| cmp(&key(a), &key(b)));
    assert_eq!(sliced.concat(), expected);
    assert_eq!(owned, sliced, "the Vec form differs from the slice form");
}

/// Checks every supported key type on the same records.
fn check_all_key_types(rt: &Runtime, parts: &[Vec<Rec>], options: RadixOptions) {
    check_records(rt, parts, |r| r[0], Ord::cmp, options);
    check_records(rt, parts, |r| r[0] as u32, Ord::cmp, options);
    check_records(rt, parts, |r| r[0] as u16, Ord::cmp, options);
    check_records(rt, parts, |r| r[0] as u8, Ord::cmp, options);
    check_records(rt, parts, |r| r[0] as i64, Ord::cmp, options);
    check_records(rt, parts, |r| r[0] as i32, Ord::cmp, options);
    check_records(rt, parts, |r| r[0] as i16, Ord::cmp, options);
    check_records(rt, parts, |r| r[0] as i8, Ord::cmp, options);
    check_records(
        rt,
        parts,
        |r| f32::from_bits(r[0] as u32),
        |a, b| float_cmp(a, b, |x| x.is_nan(), f32::total_cmp),
        options,
    );
    check_records(
        rt,
        parts,
        |r| f64::from_bits(r[0]),
        |a, b| float_cmp(a, b, |x| x.is_nan(), f64::total_cmp),
        options,
    );
}

/// Key patterns: random, few distinct values, all equal, sorted, reversed,
/// random floats (with NaNs, infinities and signed zeros).
fn key_of(pattern: u8, i: u64, n: u64, seed: u64) -> u64 {
    let r = seed
        .wrapping_add(i)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .rotate_left(29)
        ^ seed;
    match pattern {
        0 => r,
        1 => r % 5,
        2 => 42,
        3 => i,
        4 => n - i,
        5 => {
            let specials = [
                f64::NAN,
                -f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                0.0,
                -0.0,
            ];
            let x = match r % 8 {
                k @ 0..=5 => specials[k as usize],
                _ => (r % 2001) as f64 / 7.0 - 140.0,
            };
            // Low half: the same value as an f32, so f32 keys see it too.
            (x.to_bits() & !0xffff_ffff) | u64::from((x as f32).to_bits())
        }
        _ => r >> (r % 64),
    }
}

fn records(sizes: &[usize], pattern: u8, seed: u64) -> Vec<Vec<Rec>> {
    let n: usize = sizes.iter().sum();
    let mut next = 0u64;
    sizes
        .iter()
        .map(|&len| {
            (0..len)
                .map(|_| {
                    next += 1;
                    [key_of(pattern, next, n as u64, seed), next]
                })
                .collect()
        })
        .collect()
}

fn runtime(p: usize, direct: bool) -> Runtime {
    Runtime::threads(p).router(if direct {
        Router::Direct
    } else {
        Router::TwoPhase
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn every_key_type_sorts_stably(
        sizes in prop::collection::vec(0usize..60, 1..=16),
        pattern in 0u8..7,
        seed: u64,
        direct: bool,
    ) {
        let parts = records(&sizes, pattern, seed);
        let rt = runtime(sizes.len(), direct);
        with_watchdog(120, move || check_all_key_types(&rt, &parts, RadixOptions::default()));
    }

    #[test]
    fn digit_widths_and_deliveries_agree(
        sizes in prop::collection::vec(0usize..300, 1..=8),
        pattern in 0u8..7,
        seed: u64,
        bits in 1u32..=16,
        staged: bool,
        direct: bool,
    ) {
        let parts = records(&sizes, pattern, seed);
        let rt = runtime(sizes.len(), direct);
        let options = RadixOptions {
            digit_bits: Some(bits),
            delivery: if staged { Delivery::Staged } else { Delivery::Direct },
        };
        with_watchdog(120, move || {
            check_records(&rt, &parts, |r| r[0], Ord::cmp, options);
            check_records(&rt, &parts, |r| r[0] as i32, Ord::cmp, options);
        });
    }
}

/// Plain keys of one of the paper's distributions, sorted by `radix_sort`.
fn check_distribution(rt: &Runtime, dist: Dist, n: usize, bits: u32) {
    let p = rt.nprocs();
    let out = rt
        .run(|ctx| {
            let mut keys = dist.keys_u64(ctx.pid(), p, n, bits);
            bsp::sort::radix_sort(ctx, &mut keys);
            keys
        })
        .expect("sort run failed");
    let mut expected: Vec<u64> = (0..p).flat_map(|q| dist.keys_u64(q, p, n, bits)).collect();
    expected.sort_unstable();
    for (q, part) in out.iter().enumerate() {
        assert_eq!(part.len(), bsp::sort::inputs::block_range(q, p, n).len());
    }
    assert_eq!(
        out.concat(),
        expected,
        "dist {dist}, n {n}, p {p}, {bits} bits"
    );
}

#[test]
fn the_papers_distributions() {
    with_watchdog(120, || {
        for dist in ALL {
            for (p, n) in [(1, 3000), (2, 5000), (3, 4099), (5, 20_000), (16, 9000)] {
                for bits in [32, 64] {
                    check_distribution(&runtime(p, p % 2 == 0), dist, n, bits);
                }
            }
        }
    });
}

#[test]
fn many_processors_and_tiny_inputs() {
    with_watchdog(120, || {
        for direct in [false, true] {
            for n in [0, 1, 63, 64, 1000] {
                check_distribution(&runtime(64, direct), Dist::Uniform, n, 32);
            }
        }
        let empty: Vec<Vec<Rec>> = vec![Vec::new(); 5];
        check_all_key_types(&runtime(5, false), &empty, RadixOptions::default());
        // Everything on one processor, nothing elsewhere.
        let mut lopsided = records(&[0, 500, 0], 0, 7);
        lopsided.swap(0, 1);
        check_all_key_types(&runtime(3, true), &lopsided, RadixOptions::default());
    });
}

#[test]
fn a_sorter_is_reusable() {
    with_watchdog(60, || {
        let out = Runtime::threads(3)
            .run(|ctx| {
                let mut sorter = RadixSorter::new(ctx, 100);
                (0..4u32)
                    .map(|round| {
                        let mut keys: Vec<u32> = (0..100u32)
                            .map(|i| {
                                i.wrapping_mul(2_654_435_761u32).rotate_left(round)
                                    ^ ctx.pid() as u32
                            })
                            .collect();
                        sorter.sort(ctx, &mut keys);
                        keys
                    })
                    .collect::<Vec<_>>()
            })
            .unwrap();
        for round in 0..4 {
            let all: Vec<u32> = out.iter().flat_map(|r| r[round].clone()).collect();
            assert!(all.windows(2).all(|w| w[0] <= w[1]), "round {round}");
        }
    });
}
