//! Property tests of the distributed radix sort against a sequential
//! stable sort. The test bodies take the runtime as a parameter and run on
//! every runtime of the shared harness (`tests/support`): threads normally,
//! the MPI world (whose p is `-np`) under `mpirun` with `--features mpi`.
//! Each processor's output is checked against its own part of the oracle:
//! the slice of the sorted whole at its input's offset and length.

mod support;

use std::cmp::Ordering;

use bsp::prelude::*;
use bsp::sort::expert::{Delivery, DigitOrder};
use bsp::sort::inputs::{block_range, Dist, ALL};
use bsp::sort::{RadixKey, RadixOptions, RadixSorter};
use proptest::prelude::*;
use support::{
    agree, announce, assert_sorted_part, describe, fit, proptest_config, run_local, runtimes,
    runtimes_with, watchdog,
};

/// A record: key bits and its global input index (to check stability).
type Rec = [u64; 2];

fn router(direct: bool) -> Router {
    if direct {
        Router::Direct
    } else {
        Router::TwoPhase
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

/// Sorts `parts` (processor i's records; one part per processor of `rt`)
/// on `rt` by `key` and checks each visible processor's output against its
/// part of a sequential stable sort by `cmp` (the slice at its input's
/// offset, of its input's length), in the slice and `Vec` forms.
fn check_records<K: RadixKey>(
    rt: &Runtime,
    parts: &[Vec<Rec>],
    key: fn(&Rec) -> K,
    cmp: fn(&K, &K) -> Ordering,
    options: RadixOptions,
) {
    assert_eq!(parts.len(), rt.nprocs(), "one part per processor");
    // Both forms, on one sorter: the slice form, then the `Vec` form.
    let out = run_local(rt, |ctx| {
        let mut data = parts[ctx.pid()].clone();
        let mut sorter = RadixSorter::with_options(ctx, data.len(), options);
        sorter.sort_by_key(ctx, &mut data, key);
        let mut owned = parts[ctx.pid()].clone();
        sorter.sort_vec_by_key(ctx, &mut owned, key);
        (data, owned)
    });
    let mut expected: Vec<Rec> = parts.concat();
    expected.sort_by(|a, b| cmp(&key(a), &key(b)));
    agree(rt, || {
        for (q, (sliced, owned)) in &out {
            assert_sorted_part(rt, *q, sliced, parts, &expected, options);
            assert_eq!(
                owned,
                sliced,
                "{}: processor {q}: the Vec form differs from the slice form",
                describe(rt)
            );
        }
    });
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

proptest! {
    #![proptest_config(proptest_config(24))]

    #[test]
    fn every_key_type_sorts_stably(
        sizes in prop::collection::vec(0usize..60, 1..=16),
        pattern in 0u8..7,
        seed: u64,
        direct: bool,
    ) {
        watchdog(120, move || {
            for rt in runtimes_with(&[sizes.len()], router(direct)) {
                announce("every_key_type_sorts_stably", &rt);
                let parts = records(&fit(&sizes, rt.nprocs()), pattern, seed);
                check_all_key_types(&rt, &parts, RadixOptions::default());
            }
        });
    }

    #[test]
    fn digit_widths_and_deliveries_agree(
        sizes in prop::collection::vec(0usize..300, 1..=8),
        pattern in 0u8..7,
        seed: u64,
        bits in 1u32..=16,
        staged: bool,
        direct: bool,
        order in 0u8..3,
    ) {
        let options = RadixOptions {
            digit_bits: Some(bits),
            delivery: if staged { Delivery::Staged } else { Delivery::Direct },
            order: [DigitOrder::Auto, DigitOrder::LeastFirst, DigitOrder::TopFirst][order as usize],
            keep_constant_digits: order == 1,
        };
        watchdog(120, move || {
            for rt in runtimes_with(&[sizes.len()], router(direct)) {
                announce("digit_widths_and_deliveries_agree", &rt);
                let parts = records(&fit(&sizes, rt.nprocs()), pattern, seed);
                check_records(&rt, &parts, |r| r[0], Ord::cmp, options);
                check_records(&rt, &parts, |r| r[0] as i32, Ord::cmp, options);
            }
        });
    }
}

/// Plain keys of one of the paper's distributions, sorted by `radix_sort`;
/// processor q's output is the block of the sorted whole that its input
/// occupied.
fn check_distribution(rt: &Runtime, dist: Dist, n: usize, bits: u32) {
    let p = rt.nprocs();
    let out = run_local(rt, |ctx| {
        let mut keys = dist.keys_u64(ctx.pid(), p, n, bits);
        bsp::sort::radix_sort(ctx, &mut keys);
        keys
    });
    let mut expected: Vec<u64> = (0..p).flat_map(|q| dist.keys_u64(q, p, n, bits)).collect();
    expected.sort_unstable();
    agree(rt, || {
        for (q, part) in &out {
            assert_eq!(
                part[..],
                expected[block_range(*q, p, n)],
                "{}: dist {dist}, n {n}, {bits} bits, processor {q}",
                describe(rt)
            );
        }
    });
}

#[test]
fn the_papers_distributions() {
    watchdog(120, || {
        for (p, n) in [(1, 3000), (2, 5000), (3, 4099), (5, 20_000), (16, 9000)] {
            for rt in runtimes_with(&[p], router(p % 2 == 0)) {
                announce("the_papers_distributions", &rt);
                for dist in ALL {
                    for bits in [32, 64] {
                        check_distribution(&rt, dist, n, bits);
                    }
                }
            }
        }
    });
}

#[test]
fn many_processors_and_tiny_inputs() {
    watchdog(120, || {
        for rt in runtimes(&[64]) {
            announce("many_processors_and_tiny_inputs", &rt);
            for n in [0, 1, 63, 64, 1000] {
                check_distribution(&rt, Dist::Uniform, n, 32);
            }
        }
        for rt in runtimes_with(&[5], Router::TwoPhase) {
            let empty: Vec<Vec<Rec>> = vec![Vec::new(); rt.nprocs()];
            check_all_key_types(&rt, &empty, RadixOptions::default());
        }
        // Everything on one processor (the first, then the last), nothing
        // elsewhere.
        for rt in runtimes_with(&[3], Router::Direct) {
            let p = rt.nprocs();
            for holder in [0, p - 1] {
                let mut sizes = vec![0; p];
                sizes[holder] = 500;
                let lopsided = records(&sizes, 0, 7);
                check_all_key_types(&rt, &lopsided, RadixOptions::default());
            }
        }
    });
}

/// Processor `pid`'s keys in round `round` of the reuse test.
fn reuse_keys(pid: usize, round: u32) -> Vec<u32> {
    (0..100u32)
        .map(|i| i.wrapping_mul(2_654_435_761u32).rotate_left(round) ^ pid as u32)
        .collect()
}

#[test]
fn a_sorter_is_reusable() {
    const ROUNDS: u32 = 6;
    watchdog(60, || {
        for rt in runtimes(&[3]) {
            announce("a_sorter_is_reusable", &rt);
            let p = rt.nprocs();
            // Slices and vectors in turn (the engine's buffers change roles
            // differently for each), with either digit order.
            let out = run_local(&rt, |ctx| {
                let mut rounds = Vec::new();
                for order in [DigitOrder::Auto, DigitOrder::TopFirst] {
                    let options = RadixOptions {
                        order,
                        ..RadixOptions::default()
                    };
                    let mut sorter = RadixSorter::with_options(ctx, 100, options);
                    for round in 0..ROUNDS {
                        let mut keys = reuse_keys(ctx.pid(), round);
                        if round % 3 == 2 {
                            sorter.sort_vec(ctx, &mut keys);
                        } else {
                            sorter.sort(ctx, &mut keys);
                        }
                        rounds.push(keys);
                    }
                }
                rounds
            });
            agree(&rt, || {
                for (i, round) in (0..2 * ROUNDS).map(|i| (i, i % ROUNDS)) {
                    let mut all: Vec<u32> = (0..p).flat_map(|q| reuse_keys(q, round)).collect();
                    all.sort_unstable();
                    for (q, rounds) in &out {
                        assert_eq!(
                            rounds[i as usize][..],
                            all[q * 100..(q + 1) * 100],
                            "{}: round {round}, processor {q}",
                            describe(&rt)
                        );
                    }
                }
            });
        }
    });
}

/// Scatters of 16 MiB or more per processor whose keys spread over many
/// digits may go through `bsp_core::expert::line_writer::LineWriter` (whole
/// lines by non-temporal stores) or store plainly: 2^21 64-bit keys per
/// processor, uniform and Gaussian-like, against a sequential sort, with
/// each store policy (under `auto` the six passes take both ways).
#[test]
fn scatters_of_16_mib_sort_alike_whichever_way_they_store() {
    use bsp::expert::stores::{set_stores, Stores};
    watchdog(600, || {
        for rt in runtimes(&[2]) {
            for policy in [Stores::Lines, Stores::Plain, Stores::Auto] {
                announce(
                    &format!("scatters_of_16_mib, stores {}", policy.name()),
                    &rt,
                );
                set_stores(policy);
                let p = rt.nprocs();
                let n = p * (1 << 21) + 5;
                for dist in [Dist::Uniform, Dist::Gaussian] {
                    check_distribution(&rt, dist, n, 64);
                }
            }
            set_stores(Stores::Auto);
        }
    });
}

#[test]
fn large_inputs_take_the_top_digit_first_where_it_splits_evenly() {
    watchdog(180, || {
        for rt in runtimes(&[2, 3]) {
            announce("large_inputs_take_the_top_digit_first", &rt);
            let p = rt.nprocs();
            let n = p * (1 << 16) + 5;
            for dist in ALL {
                let out = run_local(&rt, |ctx| {
                    let mut keys = dist.keys_u32(ctx.pid(), p, n);
                    let info = bsp::sort::radix_sort(ctx, &mut keys);
                    (keys, info.top_first)
                });
                let mut expected: Vec<u32> = (0..p).flat_map(|q| dist.keys_u32(q, p, n)).collect();
                expected.sort_unstable();
                agree(&rt, || {
                    for (q, (part, top_first)) in &out {
                        assert_eq!(
                            part[..],
                            expected[block_range(*q, p, n)],
                            "{}: dist {dist}, processor {q}",
                            describe(&rt)
                        );
                        // [R] splits evenly on its top digit; [S] (mostly
                        // zero high bits) does not, and falls back to LSD.
                        match dist {
                            Dist::Uniform => assert!(top_first, "{dist}"),
                            Dist::Sparse => assert!(!top_first, "{dist}"),
                            _ => {}
                        }
                    }
                });
            }
        }
    });
}
