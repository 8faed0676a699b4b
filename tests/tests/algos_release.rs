//! Every `bsp-algos` primitive called many times in one run: the results
//! stay right, and the scratch coarrays each call registers are released
//! (collectively, in the same order on every processor, or the run would
//! end with a registration mismatch), so the process's memory stays flat
//! however often a primitive is called.

mod support;

use std::fmt::Debug;
use std::sync::{Mutex, MutexGuard};

use bsp::algos::{self, Block, Combine, First, Max, Min, Sum, Unique};
use bsp::Ctx;
use support::{describe, run_local, runtimes, watchdog, Rng};

/// Iterations of the loop over every primitive (at p = 4).
const ROUNDS: usize = 200;

/// Held by each test, so that the memory check sees no other test's
/// allocations.
static ALONE: Mutex<()> = Mutex::new(());

fn alone() -> MutexGuard<'static, ()> {
    ALONE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A deterministic generator for processor `q`'s input `what` in round `it`.
fn rng(it: usize, q: usize, what: u64) -> Rng {
    Rng((it as u64) << 32 ^ (q as u64) << 8 ^ what.wrapping_mul(0x9e37_79b9))
}

/// `m` values below 2²⁰.
fn values(it: usize, q: usize, what: u64, m: usize) -> Vec<u64> {
    let mut r = rng(it, q, what);
    (0..m).map(|_| r.below(1 << 20) as u64).collect()
}

/// `n` indices below `len`, half of them on four hot spots.
fn hot_indices(it: usize, q: usize, what: u64, n: usize, len: usize) -> Vec<usize> {
    let mut r = rng(it, q, what);
    (0..n)
        .map(|_| {
            if r.below(2) == 0 {
                r.below(4.min(len))
            } else {
                r.below(len)
            }
        })
        .collect()
}

/// `n` sorted values below `len` and the cut points splitting them over
/// `p` processors (some processors get none).
fn sorted_split(it: usize, what: u64, n: usize, len: usize, p: usize) -> (Vec<usize>, Vec<usize>) {
    let mut r = rng(it, usize::MAX, what);
    let mut all: Vec<usize> = (0..n).map(|_| r.below(len / 8) * 8).collect();
    all.sort_unstable();
    let mut cuts: Vec<usize> = (1..p).map(|_| r.below(n + 1)).collect();
    cuts.sort_unstable();
    cuts.insert(0, 0);
    cuts.push(n);
    (all, cuts)
}

fn same<T: PartialEq + Debug>(me: usize, it: usize, what: &str, got: T, want: T) {
    assert!(
        got == want,
        "round {it}, processor {me}: {what} returned {got:?}, expected {want:?}"
    );
}

/// Reduce, all-reduce and the scans (long vectors for p ≥ 4), and the
/// segmented scan.
fn collectives(ctx: &mut Ctx, it: usize) {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    let m = 1500 + it % 5;
    let ins: Vec<Vec<u64>> = (0..p).map(|q| values(it, q, 1, m)).collect();
    let fold = |range: std::ops::Range<usize>, f: fn(u64, u64) -> u64| -> Vec<u64> {
        (0..m)
            .map(|j| {
                ins[range.clone()]
                    .iter()
                    .map(|v| v[j])
                    .reduce(f)
                    .unwrap_or(0)
            })
            .collect()
    };
    let mut v = ins[me].clone();
    algos::all_reduce(ctx, &mut v, &Sum);
    same(me, it, "all_reduce", v, fold(0..p, |a, b| a + b));
    let mut short = ins[me][..3].to_vec();
    algos::all_reduce(ctx, &mut short, &Min);
    same(
        me,
        it,
        "short all_reduce",
        short,
        fold(0..p, u64::min)[..3].to_vec(),
    );
    let root = it % p;
    let max = algos::reduce(ctx, root, &ins[me], &Max);
    let want = (me == root).then(|| fold(0..p, u64::max));
    same(me, it, "reduce", max, want);
    let (before, total) = algos::exclusive_scan(ctx, &ins[me], &Sum);
    same(me, it, "exclusive_scan", before, fold(0..me, |a, b| a + b));
    same(
        me,
        it,
        "exclusive_scan total",
        total,
        fold(0..p, |a, b| a + b),
    );
    let (upto, total) = algos::inclusive_scan(ctx, &ins[me], &Min);
    same(me, it, "inclusive_scan", upto, fold(0..me + 1, u64::min));
    same(me, it, "inclusive_scan total", total, fold(0..p, u64::min));

    // Segmented scan of pieces of 0 to 490 elements, a segment starting
    // at about one element in 50.
    let piece = |q: usize| {
        let len = (it + 3 * q) % 50 * 10;
        let mut r = rng(it, q, 2);
        let starts: Vec<bool> = (0..len).map(|_| r.below(50) == 0).collect();
        (ins[q][..len].to_vec(), starts)
    };
    let (data, starts) = piece(me);
    let got = algos::segmented_scan(ctx, &data, &starts, &Sum);
    let mut global = Vec::new();
    let mut mine_at = 0;
    for q in 0..p {
        let (d, s) = piece(q);
        if q == me {
            mine_at = global.len();
        }
        for (x, start) in d.into_iter().zip(s) {
            let acc = match global.last() {
                Some(&prev) if !start => prev + x,
                _ => x,
            };
            global.push(acc);
        }
    }
    let want = global[mine_at..mine_at + data.len()].to_vec();
    same(me, it, "segmented_scan", got, want);
}

/// The broadcasts, gather, scatter, all-gather and all-to-all.
fn movements(ctx: &mut Ctx, it: usize) {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    let root = (7 * it + 1) % p;
    for (what, len) in [
        ("broadcast", 3000),
        ("broadcast_tree", 17),
        ("two_phase", 700),
    ] {
        let want = values(it, root, 3, len);
        let mut buf = if me == root {
            want.clone()
        } else {
            vec![0; len]
        };
        match what {
            "broadcast" => algos::broadcast(ctx, root, &mut buf),
            "broadcast_tree" => algos::variants::broadcast_tree(ctx, root, &mut buf),
            _ => algos::variants::broadcast_two_phase(ctx, root, &mut buf),
        }
        same(me, it, what, buf, want);
    }
    let want = values(it, root, 4, 100 + it);
    let mine = if me == root { want.clone() } else { Vec::new() };
    same(
        me,
        it,
        "broadcast_vec",
        algos::broadcast_vec(ctx, root, &mine),
        want,
    );

    let part = |q: usize| values(it, q, 5, (it + 5 * q) % 40 * 25);
    let all: Vec<Vec<u64>> = (0..p).map(part).collect();
    let got = algos::gather(ctx, root, &part(me));
    same(me, it, "gather", got, (me == root).then(|| all.clone()));
    same(
        me,
        it,
        "all_gather",
        algos::all_gather(ctx, &part(me)),
        all.clone(),
    );
    let parts = if me == root { all.clone() } else { Vec::new() };
    same(
        me,
        it,
        "scatter",
        algos::scatter(ctx, root, &parts),
        part(me),
    );
    let msg = |src: usize, dst: usize| values(it, src * p + dst, 6, (src + 2 * dst + it) % 30 * 20);
    let sends = (0..p).map(|dst| msg(me, dst)).collect();
    let want: Vec<Vec<u64>> = (0..p).map(|src| msg(src, me)).collect();
    same(me, it, "all_to_all", algos::all_to_all(ctx, sends), want);
}

/// Random access writes and reads with hot spots, monotonic RAW,
/// generalize, concentrate, distribute and both histograms.
fn random_access(ctx: &mut Ctx, it: usize) {
    let (p, me) = (ctx.nprocs(), ctx.pid());
    let len = 1000 * p + it % 3;
    let dist = Block::new(len, p);
    let block = dist.range(me);

    // RAW with sum, first-wins and unique (consistent) values.
    let writes = |q: usize| {
        let index = hot_indices(it, q, 7, 2000, len);
        let vals = values(it, q, 8, index.len());
        (index, vals)
    };
    let all: Vec<_> = (0..p).map(writes).collect();
    let (index, vals) = &all[me];
    let mut sum = vec![0u64; block.len()];
    let mut first = vec![u64::MAX; block.len()];
    for (i, v) in all.iter().flat_map(|(i, v)| i.iter().zip(v)) {
        if block.contains(i) {
            sum[i - block.start] += v;
            if first[i - block.start] == u64::MAX {
                first[i - block.start] = *v;
            }
        }
    }
    let mut got = vec![0u64; block.len()];
    algos::raw(ctx, &mut got, len, index, vals, &Combine(Sum)).unwrap();
    same(me, it, "raw", &got, &sum);
    let mut got = vec![u64::MAX; block.len()];
    algos::variants::raw_direct(ctx, &mut got, len, index, vals, &First).unwrap();
    same(me, it, "raw_direct", &got, &first);
    let unique: Vec<u64> = index.iter().map(|&g| 3 * g as u64 + 1).collect();
    let mut got = vec![0u64; block.len()];
    algos::raw(ctx, &mut got, len, index, &unique, &Unique).unwrap();
    let want: Vec<u64> = block
        .clone()
        .map(|g| match first[g - block.start] {
            u64::MAX => 0,
            _ => 3 * g as u64 + 1,
        })
        .collect();
    same(me, it, "raw (unique)", got, want);

    // RAR with hot spots, D(g) = 7g + it.
    let d = |g: usize| (7 * g + it) as u64;
    let data: Vec<u64> = block.clone().map(d).collect();
    let reads = hot_indices(it, me, 9, 2000, len);
    let want: Vec<u64> = reads.iter().map(|&g| d(g)).collect();
    same(
        me,
        it,
        "rar",
        algos::rar(ctx, &data, len, &reads),
        want.clone(),
    );
    same(
        me,
        it,
        "rar_direct",
        algos::variants::rar_direct(ctx, &data, len, &reads),
        want,
    );

    // Monotonic RAW: globally sorted destinations with long runs, split
    // unevenly (runs continue over processors); writer i writes i % 5 + 1.
    let (index, cuts) = sorted_split(it, 10, 500 * p, len, p);
    let mine = cuts[me]..cuts[me + 1];
    let vals: Vec<u64> = mine.clone().map(|i| i as u64 % 5 + 1).collect();
    let mut want = vec![0u64; block.len()];
    for (i, &g) in index.iter().enumerate().filter(|(_, g)| block.contains(g)) {
        want[g - block.start] += i as u64 % 5 + 1;
    }
    let mut got = vec![0u64; block.len()];
    algos::monotonic_raw(ctx, &mut got, len, &index[mine], &vals, &Combine(Sum)).unwrap();
    same(me, it, "monotonic_raw", got, want);

    // Generalize: writer i's value i + 100 fills its range up to ends[i].
    let (ends, cuts) = sorted_split(it, 11, 100 * p, len, p);
    let mine = cuts[me]..cuts[me + 1];
    let vals: Vec<u64> = mine.clone().map(|i| i as u64 + 100).collect();
    let want: Vec<u64> = block
        .clone()
        .map(|g| match ends.partition_point(|&e| e < g) {
            i if i < ends.len() => i as u64 + 100,
            _ => u64::MAX,
        })
        .collect();
    let mut got = vec![u64::MAX; block.len()];
    algos::generalize(ctx, &mut got, len, &ends[mine], &vals);
    same(me, it, "generalize", got, want);

    // Concentrate the multiples of 3 of uneven pieces, then distribute them back.
    let piece = |q: usize| values(it, q, 12, (it + 7 * q) % 20 * 50);
    let data = piece(me);
    let keep: Vec<bool> = data.iter().map(|x| x % 3 == 0).collect();
    let kept: Vec<u64> = (0..p).flat_map(piece).filter(|x| x % 3 == 0).collect();
    let packed = algos::concentrate(ctx, &data, &keep);
    let want = kept[Block::new(kept.len(), p).range(me)].to_vec();
    same(me, it, "concentrate", &packed, &want);
    let back = algos::distribute(ctx, &packed, &keep, u64::MAX);
    let want: Vec<u64> = data
        .iter()
        .map(|&x| if x % 3 == 0 { x } else { u64::MAX })
        .collect();
    same(me, it, "distribute", back, want);

    // Histograms with few (local counts) and many bins (through raw), a
    // quarter of the items in bin 0.
    for bins in [97, 70_000] {
        let bin = |x: &u64| if x % 4 == 0 { 0 } else { *x as usize % bins };
        let items = values(it, me, 13, 1000 + it);
        let mut want = vec![0u64; bins];
        for x in (0..p).flat_map(|q| values(it, q, 13, 1000 + it)) {
            want[bin(&x)] += 1;
        }
        let want = want[Block::new(bins, p).range(me)].to_vec();
        same(
            me,
            it,
            "histogram",
            algos::histogram(ctx, &items, bins, bin),
            want,
        );
    }
}

#[test]
fn every_primitive_stays_right_over_many_calls() {
    let _alone = alone();
    watchdog(240, || {
        // p = 4 takes the long-vector and two-phase routes; p = 1 and 3
        // (fewer rounds) the edge cases: no communication, uneven blocks.
        let plan = runtimes(&[4]).into_iter().map(|rt| (rt, ROUNDS));
        for (rt, rounds) in plan.chain(runtimes(&[1, 3]).into_iter().map(|rt| (rt, 20))) {
            run_local(&rt, |ctx| {
                for it in 0..rounds {
                    collectives(ctx, it);
                    movements(ctx, it);
                    random_access(ctx, it);
                }
            });
            eprintln!("{}: {rounds} rounds of every primitive", describe(&rt));
        }
    });
}

/// This process's resident memory in bytes, from `/proc/self/statm`
/// (`None` where there is no such file).
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * page_size())
}

/// The page size, from the auxiliary vector (`AT_PAGESZ`); 4 KiB if unreadable.
fn page_size() -> u64 {
    const AT_PAGESZ: usize = 6;
    let word = std::mem::size_of::<usize>();
    let auxv = std::fs::read("/proc/self/auxv").unwrap_or_default();
    auxv.chunks_exact(2 * word)
        .map(|pair| {
            let (k, v) = pair.split_at(word);
            let get = |b: &[u8]| usize::from_ne_bytes(b.try_into().expect("one word"));
            (get(k), get(v))
        })
        .find(|&(k, _)| k == AT_PAGESZ)
        .map_or(4096, |(_, v)| v as u64)
}

#[test]
fn raw_in_a_loop_keeps_memory_flat() {
    let _alone = alone();
    if resident_bytes().is_none() {
        eprintln!("note: no /proc/self/statm (not Linux); skipping the memory check");
        return;
    }
    // Per call: 2^15 writes of a u64 per processor into a global array of
    // 2^15 u64 per processor: about 4 MiB of inputs, buffers and target on
    // 2 processors. Before coarrays were released, every call kept about
    // 24 bytes per write (1.5 MiB) until the run ended.
    const PER: usize = 1 << 15;
    const EARLY: usize = 50;
    const LATE: usize = 500;
    let rt = runtimes(&[2]).remove(0);
    let marks = watchdog(120, move || {
        run_local(&rt, |ctx| {
            let (p, me) = (ctx.nprocs(), ctx.pid());
            let len = p * PER;
            let index = |q: usize| {
                let mut r = rng(0, q, 14);
                (0..PER).map(|_| r.below(len)).collect::<Vec<_>>()
            };
            let block = Block::new(len, p).range(me);
            let mut want = vec![0u64; block.len()];
            for g in (0..p).flat_map(index).filter(|g| block.contains(g)) {
                want[g - block.start] += 1;
            }
            let (mine, ones) = (index(me), vec![1u64; PER]);
            let mut marks = Vec::new();
            for it in 1..=LATE {
                let mut got = vec![0u64; block.len()];
                algos::raw(ctx, &mut got, len, &mine, &ones, &Combine(Sum)).unwrap();
                assert!(got == want, "raw call {it} on {me} went wrong");
                if it == EARLY || it == LATE {
                    // Measure while no processor is inside a call.
                    ctx.sync();
                    marks.push(resident_bytes().expect("statm"));
                    ctx.sync();
                }
            }
            marks
        })
    });
    for (pid, marks) in marks {
        let (early, late) = (marks[0], marks[1]);
        eprintln!("processor {pid}: resident {early} B after {EARLY} calls, {late} B after {LATE}");
        // An allowance of 16 KiB per call for bsp-core's own bookkeeping
        // (a registry slot per registration, per-superstep statistics:
        // about 7 KiB per call measured) and allocator noise; keeping the
        // coarrays added about 1.5 MiB per call.
        let margin = (LATE - EARLY) as u64 * (16 << 10);
        assert!(
            late <= early + margin,
            "resident memory grew from {early} B after {EARLY} calls of raw to {late} B after {LATE}"
        );
    }
}
