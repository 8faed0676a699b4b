//! Direct puts (`Ctx::put_direct`): every processor writes announced,
//! disjoint pieces of other processors' parts, in place on threads and
//! staged under MPI, with the same result as the buffered puts of a sequential
//! oracle; misuse (overlap, out of bounds, local access while written,
//! a processor that syncs instead) ends the run with an error naming the
//! writer and the superstep.

mod support;

use bsp::expert::{DigitPut, DirectPiece, DirectPut};
use bsp::{ErrorKind, Runtime};
use support::{check, on_runtimes, under_mpi, watchdog, Rng};

/// Processor j's part of the coarray has `len(p, j)` elements.
fn len(_p: usize, j: usize) -> usize {
    3 + (j * 7) % 11
}

/// A random owner for every element of every part (or none, so that the
/// element keeps its old value), from a seed all processors share: the
/// pieces of writer `s` are its maximal runs of owned elements, listed in a
/// shuffled order.
fn pieces(p: usize, s: usize, seed: u64) -> Vec<DirectPiece> {
    let mut rng = Rng(seed);
    let mut mine = Vec::new();
    for dst in 0..p {
        let mut start = None;
        for i in 0..=len(p, dst) {
            let owner = if i < len(p, dst) { rng.below(p + 1) } else { p };
            match (start, owner == s) {
                (None, true) => start = Some(i),
                (Some(b), false) => {
                    mine.push(DirectPiece {
                        dst,
                        offset: b,
                        len: i - b,
                    });
                    start = None;
                }
                _ => {}
            }
        }
    }
    // A zero-length piece anywhere is allowed, even out of range.
    mine.push(DirectPiece {
        dst: 0,
        offset: 1 << 40,
        len: 0,
    });
    let mut order = Rng(seed ^ s as u64);
    for i in (1..mine.len()).rev() {
        mine.swap(i, order.below(i + 1));
    }
    mine
}

/// The value writer `s` stores at element `i` of `dst`'s part.
fn value(s: usize, dst: usize, i: usize) -> u64 {
    (s as u64) << 32 | (dst as u64) << 16 | i as u64
}

#[test]
fn pieces_land_in_place_and_the_rest_keeps_its_value() {
    on_runtimes(120, &[1, 2, 3, 5, 8], |rt| {
        for seed in 1..4u64 {
            check(
                rt,
                |ctx| {
                    let (s, p) = (ctx.pid(), ctx.nprocs());
                    let a = ctx.coarray_from(vec![u64::MAX; len(p, s)]);
                    let source = ctx.coarray_from(vec![s as u64; 4]);
                    let pieces = pieces(p, s, seed);
                    let sum = ctx.put_direct(&a, &pieces, |ctx, slices| {
                        for (piece, slice) in pieces.iter().zip(slices.iter_mut()) {
                            assert_eq!(slice.len(), piece.len);
                            for (k, x) in slice.iter_mut().enumerate() {
                                *x = value(s, piece.dst, piece.offset + k);
                            }
                        }
                        ctx.local(&source).iter().sum::<u64>()
                    });
                    assert_eq!(sum, 4 * s as u64);
                    // A direct put counts as one sync, and the coarray is
                    // usable again afterwards.
                    ctx.put((s + 1) % p, &source, 0, &[7]);
                    ctx.sync();
                    (ctx.superstep(), ctx.local(&a).to_vec())
                },
                |p, j| {
                    let want = oracle(p, j, seed, u64::MAX, |x| x);
                    (2, want)
                },
            );
        }
    });
}

/// A direct put into a large coarray made by `coarray` (under MPI on one
/// node, memory that the other ranks map) lands as into a vector.
#[test]
fn a_direct_put_into_a_large_coarray_lands_in_place() {
    const N: usize = 1 << 14; // 128 KiB of u64
    on_runtimes(120, &[1, 2, 3], |rt| {
        check(
            rt,
            |ctx| {
                let (s, p) = (ctx.pid(), ctx.nprocs());
                let a = ctx.coarray::<u64>(N);
                let to = (s + 1) % p;
                let piece = DirectPiece {
                    dst: to,
                    offset: N / 4,
                    len: N / 2,
                };
                ctx.put_direct(&a, &[piece], |_, slices| {
                    for (k, x) in slices[0].iter_mut().enumerate() {
                        *x = value(s, to, k);
                    }
                });
                ctx.sync();
                ctx.local(&a).to_vec()
            },
            |p, j| {
                let from = (j + p - 1) % p;
                (0..N)
                    .map(|i| match i.checked_sub(N / 4) {
                        Some(k) if k < N / 2 => value(from, j, k),
                        _ => 0,
                    })
                    .collect::<Vec<u64>>()
            },
        );
    });
}

/// Processor j's part for the kept-range tests: `keeping_len(j, large)`
/// elements, of which it keeps `keeping_len / 2 + j..` (its own data, read
/// by its writer) and the others write the front.
fn keeping_len(j: usize, large: bool) -> usize {
    if large {
        (1 << 13) + 5 * j // u64s: 64 KiB and more, memory the ranks map under MPI
    } else {
        9 + 3 * j
    }
}

/// The first element processor j keeps.
fn kept_from(j: usize, large: bool) -> usize {
    keeping_len(j, large) / 2 + j
}

/// What writer `s` writes at element `i` of `dst`'s front: a value that
/// depends on what it read in its own kept range (element `i % kept`).
fn keeping_value(s: usize, dst: usize, i: usize, large: bool) -> u64 {
    let (from, len) = (kept_from(s, large), keeping_len(s, large));
    let read = initial(s, from + i % (len - from));
    read ^ value(s, dst, i)
}

/// The part's elements before the put.
fn initial(j: usize, i: usize) -> u64 {
    value(j, j, i) + 1
}

#[test]
fn a_kept_range_is_read_while_the_rest_is_written() {
    on_runtimes(120, &[1, 2, 3, 5], |rt| {
        for large in [false, true] {
            check(
                rt,
                move |ctx| {
                    let (s, p) = (ctx.pid(), ctx.nprocs());
                    let n = keeping_len(s, large);
                    let a = if large {
                        let a = ctx.coarray::<u64>(n);
                        for (i, x) in ctx.local_mut(&a).iter_mut().enumerate() {
                            *x = initial(s, i);
                        }
                        a
                    } else {
                        ctx.coarray_from((0..n).map(|i| initial(s, i)).collect())
                    };
                    // Writer s writes its share of every processor's front.
                    let pieces: Vec<DirectPiece> = (0..p)
                        .map(|dst| {
                            let front = kept_from(dst, large);
                            let (b, e) = (front * s / p, front * (s + 1) / p);
                            DirectPiece {
                                dst,
                                offset: b,
                                len: e - b,
                            }
                        })
                        .collect();
                    let kept = kept_from(s, large)..n;
                    ctx.put_direct_keeping(&a, &pieces, kept, |_, kept, slices| {
                        for (piece, slice) in pieces.iter().zip(slices.iter_mut()) {
                            for (k, x) in slice.iter_mut().enumerate() {
                                let i = piece.offset + k;
                                *x = kept[i % kept.len()] ^ value(s, piece.dst, i);
                            }
                        }
                    });
                    ctx.local(&a).to_vec()
                },
                move |p, j| {
                    let front = kept_from(j, large);
                    (0..keeping_len(j, large))
                        .map(|i| {
                            if i < front {
                                let s = (0..p).find(|&s| i < front * (s + 1) / p).unwrap();
                                keeping_value(s, j, i, large)
                            } else {
                                initial(j, i)
                            }
                        })
                        .collect::<Vec<u64>>()
                },
            );
        }
    });
}

#[test]
fn a_piece_over_a_kept_range_or_a_kept_range_past_the_end_ends_the_run() {
    if under_mpi() {
        return;
    }
    // Processor 1 writes element 3 of processor 0, which keeps 2..4.
    let err = error_of(2, |ctx| {
        let a = ctx.coarray::<u32>(4);
        let pieces = [DirectPiece {
            dst: 0,
            offset: 3,
            len: ctx.pid(),
        }];
        let kept = if ctx.pid() == 0 { 2..4 } else { 0..0 };
        ctx.put_direct_keeping(&a, &pieces, kept, |_, _, _| ());
    });
    out_of_bounds(
        &err,
        1,
        1,
        "elements 3..4 of coarray #0 on processor 0, which processor 0 keeps reading",
    );
    // Processor 1 keeps elements past its part.
    let err = error_of(2, |ctx| {
        let a = ctx.coarray::<u32>(4);
        let kept = if ctx.pid() == 1 { 3..6 } else { 0..0 };
        ctx.put_direct_keeping(&a, &[], kept, |_, _, _| ());
    });
    out_of_bounds(&err, 1, 1, "processor 1 keeps elements 3..6");
}

/// What processor `j`'s part holds after the direct puts of every
/// writer's `pieces(p, s, seed)`, each element `value` converted by `to`,
/// over a part of `fill`.
fn oracle<T: Copy>(p: usize, j: usize, seed: u64, fill: T, to: impl Fn(u64) -> T) -> Vec<T> {
    let mut want = vec![fill; len(p, j)];
    for s in 0..p {
        for piece in pieces(p, s, seed)
            .iter()
            .filter(|q| q.dst == j && q.len > 0)
        {
            let range = piece.offset..piece.offset + piece.len;
            for (w, i) in want[range.clone()].iter_mut().zip(range) {
                *w = to(value(s, j, i));
            }
        }
    }
    want
}

/// One direct put of `pieces(p, s, seed)` onto a part of `fill`, each
/// element `value` converted by `to`; returns this processor's part,
/// widened to `u128`.
fn direct_put_round<T: bytemuck::Pod + Send + Into<u128>>(
    ctx: &mut bsp::Ctx,
    seed: u64,
    fill: T,
    to: impl Fn(u64) -> T,
) -> Vec<u128> {
    let (s, p) = (ctx.pid(), ctx.nprocs());
    let pieces = pieces(p, s, seed);
    let a = ctx.coarray_from(vec![fill; len(p, s)]);
    ctx.put_direct(&a, &pieces, |_, slices| {
        for (piece, slice) in pieces.iter().zip(slices.iter_mut()) {
            for (k, x) in slice.iter_mut().enumerate() {
                *x = to(value(s, piece.dst, piece.offset + k));
            }
        }
    });
    ctx.local(&a).iter().map(|&x| x.into()).collect()
}

/// A 16-byte element from `value`.
fn wide(x: u64) -> u128 {
    u128::from(x) << 64 | 3
}

/// One run of direct puts, each with its own pieces, of elements of 8, 1,
/// 16, 8 and 1 bytes: under MPI each reuses the stage the last one left,
/// larger or smaller than it needs, or takes a fresh one for 16-byte
/// alignment.
#[test]
fn a_run_of_direct_puts_of_changing_sizes_and_types() {
    on_runtimes(120, &[1, 2, 3, 5], |rt| {
        check(
            rt,
            |ctx| {
                vec![
                    direct_put_round(ctx, 11, u64::MAX, |x| x),
                    direct_put_round(ctx, 22, 0xEEu8, |x| x as u8),
                    direct_put_round(ctx, 33, u128::MAX, wide),
                    direct_put_round(ctx, 44, u64::MAX, |x| x),
                    direct_put_round(ctx, 55, 0xEEu8, |x| x as u8),
                ]
            },
            |p, j| {
                let widen = |v: Vec<u64>| v.into_iter().map(u128::from).collect::<Vec<u128>>();
                vec![
                    widen(oracle(p, j, 11, u64::MAX, |x| x)),
                    oracle(p, j, 22, 0xEEu8, |x| x as u8)
                        .into_iter()
                        .map(u128::from)
                        .collect(),
                    oracle(p, j, 33, u128::MAX, wide),
                    widen(oracle(p, j, 44, u64::MAX, |x| x)),
                    oracle(p, j, 55, 0xEEu8, |x| x as u8)
                        .into_iter()
                        .map(u128::from)
                        .collect(),
                ]
            },
        );
    });
}

#[test]
fn puts_of_the_superstep_before_land_first() {
    on_runtimes(60, &[2, 3], |rt| {
        check(
            rt,
            |ctx| {
                let (s, p) = (ctx.pid(), ctx.nprocs());
                let a = ctx.coarray::<u32>(2);
                ctx.put((s + 1) % p, &a, 0, &[5, 5]);
                let pieces = [DirectPiece {
                    dst: (s + 1) % p,
                    offset: 1,
                    len: 1,
                }];
                ctx.put_direct(&a, &pieces, |_, slices| slices[0][0] = 9);
                ctx.local(&a).to_vec()
            },
            |_, _| vec![5, 9],
        );
    });
}

/// Runs `program` on `p` threads and returns its error.
fn error_of(p: usize, program: impl Fn(&mut bsp::Ctx) + Send + Sync + 'static) -> bsp::Error {
    watchdog(60, move || {
        Runtime::threads(p)
            .run(&program)
            .expect_err("the run must fail")
    })
}

/// Checks that `err` is an out-of-bounds error blaming processor `pid` in
/// `superstep` and saying `says`.
fn out_of_bounds(err: &bsp::Error, pid: usize, superstep: usize, says: &str) {
    assert_eq!(err.kind(), ErrorKind::OutOfBounds, "{err}");
    assert_eq!(
        (err.pid(), err.superstep()),
        (Some(pid), Some(superstep)),
        "{err}"
    );
    assert!(err.to_string().contains(says), "{err}");
}

#[test]
fn overlapping_pieces_end_the_run_naming_the_writer() {
    if under_mpi() {
        return; // a failure ends the whole job; threads only
    }
    let err = error_of(3, |ctx| {
        ctx.sync();
        let a = ctx.coarray::<u8>(10);
        // Processors 1 and 2 both write elements 4..6 of processor 0.
        let offset = [0, 2, 4][ctx.pid()];
        let pieces = [
            DirectPiece {
                dst: 0,
                offset,
                len: 2,
            },
            DirectPiece {
                dst: 0,
                offset: 5,
                len: 1,
            },
        ];
        let mine = if ctx.pid() == 0 {
            &pieces[..1]
        } else {
            &pieces[..ctx.pid()]
        };
        ctx.put_direct(&a, mine, |_, _| ());
    });
    out_of_bounds(&err, 2, 2, "overlap on processor 0");
}

#[test]
fn a_piece_past_the_end_ends_the_run_naming_the_writer() {
    if under_mpi() {
        return;
    }
    let err = error_of(2, |ctx| {
        let a = ctx.coarray::<u32>(4 + ctx.pid());
        let pieces = [DirectPiece {
            dst: 0,
            offset: 3,
            len: ctx.pid() + 1,
        }];
        ctx.put_direct(&a, &pieces, |_, _| ());
    });
    out_of_bounds(&err, 1, 1, "elements 3..5");
}

#[test]
fn a_bad_pid_reading_the_target_or_a_missing_partner_end_the_run() {
    if under_mpi() {
        return;
    }
    let err = error_of(2, |ctx| {
        let a = ctx.coarray::<u32>(4);
        let pieces = [DirectPiece {
            dst: 2,
            offset: 0,
            len: 1,
        }];
        ctx.put_direct(&a, &pieces, |_, _| ());
    });
    assert_eq!(err.kind(), ErrorKind::BadPid, "{err}");
    let err = error_of(2, |ctx| {
        let a = ctx.coarray::<u32>(4);
        ctx.put_direct(&a, &[], |ctx, _| ctx.local(&a).len());
    });
    assert!(
        err.to_string().contains("is being written by a put_direct"),
        "{err}"
    );
    assert_eq!(err.superstep(), Some(1), "{err}");
    let err = error_of(3, |ctx| {
        let a = ctx.coarray::<u32>(4);
        if ctx.pid() == 1 {
            ctx.sync();
            ctx.sync();
        } else {
            ctx.put_direct(&a, &[], |_, _| ());
        }
    });
    assert!(
        matches!(err.kind(), ErrorKind::SyncMismatch | ErrorKind::Panic),
        "{err}"
    );
}

#[test]
fn a_panic_while_writing_releases_everyone() {
    if under_mpi() {
        return;
    }
    let err = error_of(4, |ctx| {
        let a = ctx.coarray::<u64>(1000);
        let pieces: Vec<DirectPiece> = (0..4)
            .map(|dst| DirectPiece {
                dst,
                offset: 250 * ctx.pid(),
                len: 250,
            })
            .collect();
        let me = ctx.pid();
        ctx.put_direct(&a, &pieces, |_, slices| {
            if me == 3 {
                panic!("writer gives up");
            }
            for slice in slices.iter_mut() {
                slice.fill(1);
            }
        });
    });
    assert_eq!(err.kind(), ErrorKind::Panic, "{err}");
    assert!(err.to_string().contains("writer gives up"), "{err}");
}

/// Processor s's keys for `put_direct_by_digit`: `n(s)` keys from a seed
/// all processors share, some processors with none.
fn digit_keys(p: usize, s: usize, seed: u64) -> Vec<u32> {
    let mut rng = Rng(seed ^ ((s as u64 + 1) * 0x9e37));
    let n = [0, 1, 7, 40, 300][(s * 3 + seed as usize) % 5];
    let skew = rng.below(3); // 0: uniform, 1: few values, 2: one hot value
    (0..n)
        .map(|_| match skew {
            0 => rng.next_u64() as u32,
            1 => (rng.below(4) as u32) << 20 | rng.below(p + 1) as u32,
            _ if rng.below(4) == 0 => rng.next_u64() as u32,
            _ => 5 << 20,
        })
        .collect()
}

/// The pieces of a global stable counting sort by `digit` whose output is
/// cut into parts of `part(j)` elements: writer s's keys of digit value d
/// go after all keys of smaller digit values and after the keys of value
/// d of writers before s; a digit's keys may span several parts.
fn counting_sort_pieces(
    all: &[Vec<u64>],
    s: usize,
    part: impl Fn(usize) -> usize,
) -> Vec<DirectPiece> {
    let mut at = 0usize; // global position of the next key of writer s
    let mut pieces = Vec::new();
    for d in 0..all[0].len() {
        let count = |q: &Vec<u64>| q[d] as usize;
        let before: usize = all[..s].iter().map(count).sum();
        let total: usize = all.iter().map(count).sum();
        let (mut start, mut len) = (at + before, all[s][d] as usize);
        at += total;
        // Cut [start, start + len) at the parts' ends.
        let (mut dst, mut first) = (0, 0);
        while len > 0 {
            while start >= first + part(dst) {
                first += part(dst);
                dst += 1;
            }
            let take = len.min(first + part(dst) - start);
            pieces.push(DirectPiece {
                dst,
                offset: start - first,
                len: take,
            });
            start += take;
            len -= take;
        }
        // An empty piece between digits is skipped.
        pieces.push(DirectPiece::default());
    }
    pieces
}

/// Checks a put by `digit` of every processor's keys (`digit_keys` moved
/// down by `down` bits) against a stable sort by the digit, over parts
/// of n/p keys: of the whole keys, or with `low` of their bits below the
/// digit, as `u16`.
fn check_put_by_digit(rt: &Runtime, seed: u64, digit: bsp::expert::Digit, down: u32, low: bool) {
    use bsp::expert::DigitCounts;
    let keys_of = move |p: usize, s: usize| -> Vec<u32> {
        digit_keys(p, s, seed).iter().map(|&k| k >> down).collect()
    };
    // Every processor's part holds n/p keys of all n, the last the rest.
    let total = move |p: usize| (0..p).map(|s| keys_of(p, s).len()).sum::<usize>();
    let part = move |p: usize, j: usize| {
        let n = total(p);
        if j + 1 == p {
            n - n / p * (p - 1)
        } else {
            n / p
        }
    };
    check(
        rt,
        |ctx| {
            let (s, p) = (ctx.pid(), ctx.nprocs());
            let keys = keys_of(p, s);
            let counted = DigitCounts::new(&keys, digit);
            let all: Vec<Vec<u64>> = (0..p)
                .map(|q| DigitCounts::new(&keys_of(p, q), digit).counts().to_vec())
                .collect();
            assert_eq!(counted.counts(), &all[s][..]);
            let pieces = counting_sort_pieces(&all, s, |j| part(p, j));
            let landed: Vec<u32> = if low {
                let a = ctx.coarray_from(vec![u16::MAX; part(p, s)]);
                ctx.put_direct_by_digit_low(&a, &counted, &pieces);
                ctx.local(&a).iter().map(|&k| u32::from(k)).collect()
            } else {
                let a = ctx.coarray_from(vec![u32::MAX; part(p, s)]);
                ctx.put_direct_by_digit(&a, &counted, &pieces);
                ctx.local(&a).to_vec()
            };
            (ctx.superstep(), landed)
        },
        |p, j| {
            let mut sorted: Vec<u32> = (0..p).flat_map(|s| keys_of(p, s)).collect();
            sorted.sort_by_key(|&k| digit.of(k)); // stable
            if low {
                sorted.iter_mut().for_each(|k| *k = digit.below(*k) as u32);
            }
            let first: usize = (0..j).map(|q| part(p, q)).sum();
            (1, sorted[first..first + part(p, j)].to_vec())
        },
    );
}

#[test]
fn a_put_by_digit_is_a_stable_counting_sort_over_all_processors() {
    use bsp::expert::Digit;
    on_runtimes(120, &[1, 2, 3, 5], |rt| {
        for seed in 1..5u64 {
            let digit = Digit::new(18 + seed as u32, 1 + seed as u32);
            check_put_by_digit(rt, seed, digit, 0, false);
        }
    });
}

#[test]
fn a_put_by_digit_of_low_bits_writes_each_keys_bits_below_its_digit() {
    use bsp::expert::Digit;
    on_runtimes(120, &[1, 2, 3, 5], |rt| {
        for seed in 1..5u64 {
            // Keys below 2^(16 + bits), the digit their top bits.
            let bits = seed as u32;
            check_put_by_digit(rt, seed, Digit::new(16, bits), 16 - bits, true);
        }
    });
}

#[test]
fn a_put_of_low_bits_that_would_lose_bits_ends_the_run_naming_the_writer() {
    use bsp::expert::{Digit, DigitCounts};
    if under_mpi() {
        return;
    }
    // Processor 1 has a key with a bit above the digit's bits 4 to 5.
    let err = error_of(2, |ctx| {
        let keys = [3u32, 17, 40 + 64 * ctx.pid() as u32];
        let counted = DigitCounts::new(&keys, Digit::new(4, 2));
        let a = ctx.coarray::<u8>(8);
        // Digit values 0, 1 and 2, one key each.
        let pieces: Vec<DirectPiece> = (0..3)
            .map(|d| DirectPiece {
                dst: 0,
                offset: 3 * ctx.pid() + d,
                len: 1,
            })
            .collect();
        ctx.put_direct_by_digit_low(&a, &counted, &pieces);
    });
    out_of_bounds(&err, 1, 0, "key 104 has bits above the digit (bits 4 to 5)");
    // The bits below processor 0's digit, from bit 9 up, do not fit in
    // a byte; processor 1's, from bit 8, do, and it has no keys.
    let err = error_of(2, |ctx| {
        ctx.sync();
        let keys = if ctx.pid() == 0 {
            vec![3u32 << 9]
        } else {
            vec![]
        };
        let counted = DigitCounts::new(&keys, Digit::new(9 - ctx.pid() as u32, 3));
        let a = ctx.coarray::<u8>(8);
        let pieces = [DirectPiece {
            dst: 0,
            offset: ctx.pid(),
            len: 0,
        }];
        ctx.put_direct_by_digit_low(&a, &counted, &pieces);
    });
    out_of_bounds(
        &err,
        0,
        1,
        "the 9 bits below the digit do not fit in the 8 bits",
    );
}

#[test]
fn pieces_that_do_not_hold_a_digits_keys_end_the_run_naming_the_writer() {
    use bsp::expert::{Digit, DigitCounts};
    if under_mpi() {
        return;
    }
    let err = error_of(2, |ctx| {
        ctx.sync();
        let keys = [1u16, 3, 2, 3];
        let counted = DigitCounts::new(&keys, Digit::new(0, 2));
        let a = ctx.coarray::<u16>(8);
        // Processor 1 gives digit value 3 one element too few.
        let short = ctx.pid();
        let pieces: Vec<DirectPiece> = (0..4)
            .map(|d| DirectPiece {
                dst: 0,
                offset: 4 * ctx.pid() + d,
                len: (counted.counts()[d] as usize).saturating_sub(usize::from(d == 3) * short),
            })
            .collect();
        ctx.put_direct_by_digit(&a, &counted, &pieces);
    });
    out_of_bounds(
        &err,
        1,
        1,
        "digit value 3 has 2 keys and 1 of them have no piece",
    );
}
