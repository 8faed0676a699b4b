//! Helpers shared by the `algos_*` property tests: the runtimes of the
//! shared harness (`tests/support`) with an agreed verdict, a watchdog,
//! deterministic inputs and a non-commutative associative operator. Each
//! test file declares both `mod algos_common;` and `mod support;`.

#![allow(dead_code)]

use std::sync::mpsc;
use std::time::Duration;

use bsp::Runtime;

/// Runs `f`, aborting the whole test process if it takes longer than
/// `secs` seconds (a hang must fail the test, not stall CI).
pub fn with_watchdog<R>(secs: u64, name: &str, f: impl FnOnce() -> R) -> R {
    let (done, wait) = mpsc::channel::<()>();
    let name = name.to_string();
    let dog = std::thread::spawn(move || {
        if wait.recv_timeout(Duration::from_secs(secs)) == Err(mpsc::RecvTimeoutError::Timeout) {
            eprintln!("watchdog: {name} took more than {secs} s; aborting");
            std::process::abort();
        }
    });
    let r = f();
    let _ = done.send(());
    let _ = dog.join();
    r
}

/// A small deterministic generator (splitmix64) for inputs built inside
/// processors from a proptest seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

/// Composition of affine maps x ↦ a·x + b over wrapping u32: `f` then `g`.
/// Associative, not commutative: results depend on the pid order.
pub fn affine(f: [u32; 2], g: [u32; 2]) -> [u32; 2] {
    [
        f[0].wrapping_mul(g[0]),
        g[0].wrapping_mul(f[1]).wrapping_add(g[1]),
    ]
}

/// Processor `q`'s input vector of length `m` for seed `seed`.
pub fn affine_input(seed: u64, q: usize, m: usize) -> Vec<[u32; 2]> {
    let mut rng = Rng(seed ^ (q as u64).wrapping_mul(0x1234_5678_9abc));
    (0..m)
        .map(|_| [rng.next() as u32 | 1, rng.next() as u32])
        .collect()
}

/// Runs `check` on every runtime of the shared harness for each p in `ps`
/// (threads with both routers; under `mpirun`, the MPI world, whose p is
/// `-np`), and makes every MPI rank agree on the verdict, so that a wrong
/// result on one rank fails the test on all of them instead of leaving the
/// others waiting in the next run.
pub fn on_runtimes(ps: &[usize], check: impl Fn(&Runtime)) {
    for rt in crate::support::runtimes(ps) {
        crate::support::agree(&rt, || check(&rt));
    }
}
