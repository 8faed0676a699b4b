//! The README's tour, verbatim (CI checks that they agree, and runs it on
//! threads with BSP_PROCS = 1, 3 and 8 and under `mpirun -np 3`): every
//! processor puts a value into a slot of every processor's coarray, syncs,
//! and sums what it received; processor 0's process prints the answer.
//!
//! ```text
//! BSP_PROCS=8 cargo run --release --example tour
//! ```

use bsp::prelude::*;

fn main() -> Result<(), bsp::Error> {
    // p processors: BSP_PROCS threads (default: one per core), or mpirun's ranks.
    let out = Runtime::from_env().run(|ctx| {
        let (s, p) = (ctx.pid(), ctx.nprocs());
        let partial = ctx.coarray::<u64>(p); // collective registration
        for t in 0..p {
            ctx.put(t, &partial, s, &[s as u64 * 10]); // into slot s of processor t
        }
        ctx.sync(); // every put lands here, nowhere else
        let sum: u64 = ctx.local(&partial).iter().sum();
        assert_eq!(sum, 5 * (p * (p - 1)) as u64, "processor {s}"); // 10·(0 + 1 + … + p−1)
        sum
    })?;
    if let Some(sum) = out.root() {
        // Only the process that ran processor 0 holds its result: one line
        // on threads and under MPI alike.
        println!("{} processors each received {sum}", out.nprocs());
    }
    Ok(())
}
