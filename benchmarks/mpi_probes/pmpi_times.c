/* Where a program's time under MPI goes, by MPI call: an interposer
 * (through the PMPI profiling interface) that counts the calls bsp makes
 * and the time spent in each, and prints a table from rank 0 at
 * MPI_Finalize. Collectives on MPI_COMM_WORLD (the benchmarks' own
 * baselines) are counted apart from those on other communicators (bsp's
 * duplicate of the world).
 *
 * Build and run (BENCHMARKS.md section 2d, now in git history; section 4 has the current MPI figures):
 *   mpicc -O2 -shared -fPIC benchmarks/mpi_probes/pmpi_times.c -o /tmp/libpmpi_times.so
 *   mpirun -np 2 -x LD_PRELOAD=/tmp/libpmpi_times.so target/release/examples/bench_router \
 *       --kib 128 --reps 20000 --rounds 1 --shapes shift --routers direct
 */
#include <mpi.h>
#include <stdio.h>
#include <time.h>

enum { ALLGATHER, ALLTOALL, ALLTOALLV, ALLTOALLW, BARRIER, TYPE_COMMIT, TYPE_FREE, CALLS };
static const char *names[CALLS] = {"Allgather", "Alltoall", "Alltoallv", "Alltoallw", "Barrier", "Type_commit", "Type_free"};
/* [call][0: MPI_COMM_WORLD or none, 1: another communicator] */
static double seconds[CALLS][2];
static long calls[CALLS][2];

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

#define TIMED(which, comm, call)                   \
    do {                                           \
        int side_ = (comm) != MPI_COMM_WORLD;      \
        double start_ = now();                     \
        int result_ = call;                        \
        seconds[which][side_] += now() - start_;   \
        calls[which][side_]++;                     \
        return result_;                            \
    } while (0)

int MPI_Allgather(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt, MPI_Comm c) {
    TIMED(ALLGATHER, c, PMPI_Allgather(s, sc, st, r, rc, rt, c));
}
int MPI_Alltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt, MPI_Comm c) {
    TIMED(ALLTOALL, c, PMPI_Alltoall(s, sc, st, r, rc, rt, c));
}
int MPI_Alltoallv(const void *s, const int *sc, const int *sd, MPI_Datatype st, void *r, const int *rc,
                  const int *rd, MPI_Datatype rt, MPI_Comm c) {
    TIMED(ALLTOALLV, c, PMPI_Alltoallv(s, sc, sd, st, r, rc, rd, rt, c));
}
int MPI_Alltoallw(const void *s, const int *sc, const int *sd, const MPI_Datatype *st, void *r, const int *rc,
                  const int *rd, const MPI_Datatype *rt, MPI_Comm c) {
    TIMED(ALLTOALLW, c, PMPI_Alltoallw(s, sc, sd, st, r, rc, rd, rt, c));
}
int MPI_Barrier(MPI_Comm c) { TIMED(BARRIER, c, PMPI_Barrier(c)); }
int MPI_Type_commit(MPI_Datatype *t) { TIMED(TYPE_COMMIT, MPI_COMM_WORLD, PMPI_Type_commit(t)); }
int MPI_Type_free(MPI_Datatype *t) { TIMED(TYPE_FREE, MPI_COMM_WORLD, PMPI_Type_free(t)); }

int MPI_Finalize(void) {
    int me;
    PMPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (me == 0) {
        fprintf(stderr, "%-12s %-6s %10s %12s %10s\n", "call", "comm", "calls", "total us", "us/call");
        for (int i = 0; i < CALLS; i++)
            for (int side = 0; side < 2; side++)
                if (calls[i][side])
                    fprintf(stderr, "%-12s %-6s %10ld %12.1f %10.2f\n", names[i], side ? "other" : "world",
                            calls[i][side], seconds[i][side] * 1e6, seconds[i][side] * 1e6 / calls[i][side]);
    }
    return PMPI_Finalize();
}
