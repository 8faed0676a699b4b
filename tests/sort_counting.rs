//! Property tests of one counting-sort pass (the paper's six steps) and of
//! the NAS IS ranking built on it.

use bsp::prelude::*;
use bsp::sort::inputs::block_range;
use bsp::sort::nas::Class;
use bsp::sort::{CountingSort, Delivery};
use proptest::prelude::*;

/// Sorts `parts` (processor i's (digit, tag) pairs) by digit on `rt` and
/// checks stability, congruence and the digit starts.
fn check_counting(rt: &Runtime, parts: &[Vec<[u32; 2]>], radix: usize, delivery: Delivery) {
    let out = rt
        .run(|ctx| {
            let src = parts[ctx.pid()].clone();
            let mut dst = vec![[0, 0]; src.len()];
            let mut sort = CountingSort::new(ctx, src.len(), radix).delivery(delivery);
            sort.sort_into(ctx, &src, &mut dst, |r| r[0] as usize);
            (dst, sort.digit_starts().to_vec())
        })
        .expect("counting sort run failed");
    let mut expected = parts.concat();
    expected.sort_by_key(|r| r[0]);
    let all: Vec<[u32; 2]> = out.iter().flat_map(|(d, _)| d.clone()).collect();
    assert_eq!(all, expected);
    for (q, ((d, starts), p)) in out.iter().zip(parts).enumerate() {
        assert_eq!(d.len(), p.len(), "processor {q} changed its element count");
        assert_eq!(starts.len(), radix);
        for (digit, &s) in starts.iter().enumerate() {
            let below = expected.iter().filter(|r| (r[0] as usize) < digit).count();
            assert_eq!(s, below as u64, "start of digit {digit} on processor {q}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn counting_sort_is_stable_and_congruent(
        sizes in prop::collection::vec(0usize..80, 1..=16),
        radix in 1usize..70,
        seed: u32,
        delivery in 0u8..3,
        direct: bool,
    ) {
        let mut tag = 0u32;
        let parts: Vec<Vec<[u32; 2]>> = sizes
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
        let delivery = [Delivery::Auto, Delivery::Direct, Delivery::Staged][delivery as usize];
        let rt = Runtime::threads(sizes.len())
            .router(if direct { Router::Direct } else { Router::TwoPhase });
        check_counting(&rt, &parts, radix, delivery);
    }
}

/// NAS IS class S, first iteration: the five test keys have NPB's ranks.
fn check_nas_class_s(rt: &Runtime) {
    let class = Class::from_name("S").unwrap();
    let p = rt.nprocs();
    let found = rt
        .run(|ctx| {
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
        })
        .expect("NAS run failed");
    let found: Vec<(usize, u64)> = found.concat();
    assert_eq!(found.len(), 5);
    for (t, rank) in found {
        assert_eq!(rank, class.expected_rank(t, 1), "test key {t}");
    }
}

#[test]
fn nas_class_s_ranks() {
    for p in [1, 2, 3, 4] {
        check_nas_class_s(&Runtime::threads(p));
    }
    check_nas_class_s(&Runtime::threads(2).router(Router::Direct));
}
