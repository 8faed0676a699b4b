//! Helpers shared by the integration tests: a watchdog, a small RNG, and
//! the runtimes a test body runs on.
#![allow(dead_code)]

use std::sync::mpsc;
use std::time::Duration;

use bsp::{Router, Runtime};

/// Runs `f` on its own thread and fails the test if it takes longer than
/// `secs` seconds, so a regression that hangs fails instead of stalling CI.
pub fn watchdog<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(Ok(value)) => value,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(_) => panic!("watchdog: the test body did not finish within {secs} s (a hang?)"),
    }
}

/// Both routers on `p` threads.
pub fn runtimes(p: usize) -> [Runtime; 2] {
    [
        Runtime::threads(p).router(Router::TwoPhase),
        Runtime::threads(p).router(Router::Direct),
    ]
}

/// SplitMix64: a tiny deterministic generator for test plans.
#[derive(Clone)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 32) * n as u64) >> 32) as usize
    }
}
