//! Time on a processor (BSPlib's `bsp_time`).

use super::Ctx;

impl Ctx {
    /// Seconds since this processor started the run (BSPlib's `bsp_time`,
    /// MPI's `MPI_Wtime` from the start of the run), from a monotonic
    /// clock. Each processor has its own clock; compare times across
    /// processors only after a sync, or through a collective such as
    /// `bsp::algos::all_reduce` with `Max`.
    ///
    /// # Examples
    ///
    /// ```
    /// let out = bsp_core::run(2, |ctx| {
    ///     let start = ctx.time();
    ///     ctx.sync();
    ///     ctx.time() - start
    /// })?;
    /// assert!(out.iter().all(|&dt| dt >= 0.0));
    /// # Ok::<(), bsp_core::Error>(())
    /// ```
    ///
    /// # Cost
    ///
    /// Local, one read of the clock.
    pub fn time(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }
}
