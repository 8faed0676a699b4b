//! Property tests of one counting-sort pass (the paper's six steps) and of
//! the NAS IS ranking built on it. The bodies run on every runtime of the
//! shared harness (`tests/support`): threads normally, the MPI world (whose
//! p is `-np`) under `mpirun` with `--features mpi`; each processor's
//! output is checked against its own part of the oracle.

mod support;

use bsp::prelude::*;
use bsp::sort::expert::{BucketRanker, Delivery};
use bsp::sort::inputs::block_range;
use bsp::sort::nas::Class;
use bsp::sort::CountingSort;
use proptest::prelude::*;
use support::{
    agree, announce, assert_sorted_part, describe, fit, proptest_config, run_local, runtimes,
    runtimes_with, under_mpi, watchdog,
};

/// Sorts `parts` (processor i's (digit, tag) pairs; one part per processor
/// of `rt`) by digit on `rt` and checks each visible processor's output
/// against its part of a sequential stable sort (stability, congruence)
/// and its digit starts.
fn check_counting(rt: &Runtime, parts: &[Vec<[u32; 2]>], radix: usize, delivery: Delivery) {
    assert_eq!(parts.len(), rt.nprocs(), "one part per processor");
    let out = run_local(rt, |ctx| {
        let src = parts[ctx.pid()].clone();
        let mut dst = vec![[0, 0]; src.len()];
        let mut sort = CountingSort::new(ctx, src.len(), radix).with_delivery(delivery);
        sort.sort_into(ctx, &src, &mut dst, |r| r[0] as usize);
        (dst, sort.digit_starts().to_vec())
    });
    let mut expected = parts.concat();
    expected.sort_by_key(|r| r[0]);
    // The start of each digit: how many keys are smaller.
    let starts: Vec<u64> = (0..radix)
        .map(|digit| expected.partition_point(|r| (r[0] as usize) < digit) as u64)
        .collect();
    agree(rt, || {
        for (q, (d, got_starts)) in &out {
            assert_sorted_part(rt, *q, d, parts, &expected, delivery);
            assert_eq!(
                *got_starts,
                starts,
                "{}: digit starts on processor {q}",
                describe(rt)
            );
        }
    });
}

proptest! {
    #![proptest_config(proptest_config(32))]

    #[test]
    fn counting_sort_is_stable_and_congruent(
        sizes in prop::collection::vec(0usize..80, 1..=16),
        radix in 1usize..70,
        seed: u32,
        delivery in 0u8..3,
        direct: bool,
    ) {
        let delivery = [Delivery::Auto, Delivery::Direct, Delivery::Staged][delivery as usize];
        let router = if direct { Router::Direct } else { Router::TwoPhase };
        watchdog(60, move || {
            for rt in runtimes_with(&[sizes.len()], router) {
                announce("counting_sort_is_stable_and_congruent", &rt);
                let mut tag = 0u32;
                let parts: Vec<Vec<[u32; 2]>> = fit(&sizes, rt.nprocs())
                    .iter()
                    .map(|&len| {
                        (0..len)
                            .map(|_| {
                                tag += 1;
                                [tag.wrapping_mul(seed | 1).rotate_left(7) % radix as u32, tag]
                            })
                            .collect()
                    })
                    .collect();
                check_counting(&rt, &parts, radix, delivery);
            }
        });
    }
}

/// NAS IS class S, first iteration: the five test keys have NPB's ranks.
/// Each processor reports the test keys in its block.
fn check_nas_class_s(rt: &Runtime) {
    let class = Class::from_name("S").unwrap();
    let p = rt.nprocs();
    let found = run_local(rt, |ctx| {
        let range = block_range(ctx.pid(), p, class.total_keys);
        let mut keys = class.keys(range.clone());
        for (i, k) in class.modifications(1) {
            if range.contains(&i) {
                keys[i - range.start] = k;
            }
        }
        let mut sorted = vec![0; keys.len()];
        let mut sort = CountingSort::new(ctx, keys.len(), class.max_key as usize);
        sort.sort_into(ctx, &keys, &mut sorted, |&k| k as usize);
        (0..5)
            .filter(|&t| range.contains(&class.test_index[t]))
            .map(|t| {
                let k = keys[class.test_index[t] - range.start] as usize;
                (t, sort.digit_starts()[k])
            })
            .collect::<Vec<_>>()
    });
    agree(rt, || {
        for (q, mine) in &found {
            let range = block_range(*q, p, class.total_keys);
            let want: Vec<(usize, u64)> = (0..5)
                .filter(|&t| range.contains(&class.test_index[t]))
                .map(|t| (t, class.expected_rank(t, 1)))
                .collect();
            assert_eq!(*mine, want, "{}: test keys of processor {q}", describe(rt));
        }
    });
}

#[test]
fn nas_class_s_ranks() {
    watchdog(120, || {
        for rt in runtimes(&[1, 2, 3, 4]) {
            announce("nas_class_s_ranks", &rt);
            check_nas_class_s(&rt);
        }
    });
}

/// Ranks `parts` (processor i's keys, all below `max_key`) with a
/// [`BucketRanker`] and checks, on every visible processor, that its key
/// ranges tile `0..max_key` in pid order, that it holds the keys of its
/// range sorted, and that it knows the rank of each value of its range.
/// The ranker has 2^`bits` buckets, or, where `bits` is `None`, the width
/// [`BucketRanker::tune`] picks, which must be the same on every processor.
fn check_bucket_ranker(rt: &Runtime, parts: &[Vec<u32>], max_key: u32, bits: Option<u32>) {
    let out = run_local(rt, |ctx| {
        let mut ranker = BucketRanker::new(ctx, max_key);
        match bits {
            Some(bits) => ranker = ranker.with_bucket_bits(bits),
            None => {
                ranker.tune(ctx, &parts[ctx.pid()]);
            }
        }
        // Twice, so that a ranker is reused as NAS IS reuses it.
        ranker.rank(ctx, &parts[ctx.pid()]);
        ranker.rank(ctx, &parts[ctx.pid()]);
        let range = ranker.key_range();
        let ranks: Vec<Option<u64>> = range.clone().map(|v| ranker.rank_of(v)).collect();
        (range, ranks, ranker.sorted_keys(), ranker.bucket_bits())
    });
    let mut sorted = parts.concat();
    sorted.sort_unstable();
    // Under MPI a rank sees only its own processor's output: the tiling
    // is checked where all are visible.
    let all = out.len() == rt.nprocs();
    agree(rt, || {
        let mut next = 0;
        let chosen = out.first().map(|(_, (_, _, _, bits))| *bits);
        for (q, (range, ranks, keys, used)) in &out {
            let what = format!(
                "{}: processor {q}, max_key {max_key}, bucket bits {bits:?}",
                describe(rt)
            );
            assert_eq!(Some(*used), bits.or(chosen), "{what}: bucket bits");
            assert!(range.end <= max_key, "{what}: range {range:?}");
            assert!(
                !all || range.is_empty() || range.start == next,
                "{what}: range {range:?}"
            );
            next = next.max(range.end);
            let want: Vec<u32> = sorted
                .iter()
                .copied()
                .filter(|k| range.contains(k))
                .collect();
            assert_eq!(*keys, want, "{what}: keys");
            for (v, rank) in range.clone().zip(ranks) {
                let below = sorted.partition_point(|&k| k < v) as u64;
                assert_eq!(*rank, Some(below), "{what}: rank of {v}");
            }
        }
        if all {
            assert_eq!(
                next,
                max_key,
                "{}: the ranges cover every key",
                describe(rt)
            );
        }
    });
}

proptest! {
    #![proptest_config(proptest_config(24))]

    #[test]
    fn bucket_ranker_ranks_every_key_value(
        sizes in prop::collection::vec(0usize..400, 1..=8),
        max_key in prop_oneof![1u32..70, 1000u32..5000, Just(1 << 21), 3_000_000u32..4_000_000],
        hot in prop::option::of(0u32..u32::MAX),
        bits in prop::option::of(1u32..=11),
        seed: u32,
    ) {
        watchdog(60, move || {
            for rt in runtimes(&[sizes.len()]) {
                announce("bucket_ranker_ranks_every_key_value", &rt);
                let mut at = seed;
                let parts: Vec<Vec<u32>> = fit(&sizes, rt.nprocs())
                    .iter()
                    .map(|&len| {
                        (0..len)
                            .map(|i| {
                                at = at.wrapping_mul(747_796_405).wrapping_add(2_891_336_453);
                                match hot {
                                    Some(h) if i % 3 > 0 => h % max_key,
                                    _ => (at >> 5) % max_key,
                                }
                            })
                            .collect()
                    })
                    .collect();
                check_bucket_ranker(&rt, &parts, max_key, bits);
            }
        });
    }
}

#[test]
fn a_bucket_width_out_of_range_ends_the_run() {
    if under_mpi() {
        return; // a failure ends the whole job; threads only
    }
    for bits in [0u32, 12] {
        let err = watchdog(60, move || {
            Runtime::threads(2)
                .run(move |ctx| {
                    BucketRanker::new(ctx, 1000).with_bucket_bits(bits);
                })
                .expect_err("the run must fail")
        });
        assert!(
            err.to_string()
                .contains(&format!("a bucket digit has 1 to 11 bits, not {bits}")),
            "{err}"
        );
    }
}

#[test]
fn a_key_beyond_the_rankers_range_ends_the_run() {
    if under_mpi() {
        return; // a failure ends the whole job; threads only
    }
    for bad in [1000u32, 1 << 20, u32::MAX] {
        let err = watchdog(60, move || {
            Runtime::threads(3)
                .run(move |ctx| {
                    let keys = if ctx.pid() == 1 {
                        vec![3, bad, 7]
                    } else {
                        vec![1, 999]
                    };
                    BucketRanker::new(ctx, 1000).rank(ctx, &keys);
                })
                .expect_err("the run must fail")
        });
        assert!(
            err.to_string()
                .contains(&format!("key {bad} >= max_key 1000")),
            "{err}"
        );
    }
}
