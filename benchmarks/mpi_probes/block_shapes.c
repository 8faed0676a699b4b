/* How Open MPI moves one rank's block to the other, by the block's shape.
 *
 * Two ranks swap n bytes (the bench_router "shift" pattern at np = 2), in
 * five ways, interleaved, median-free mean of `reps` calls after a barrier:
 *   0 contiguous  MPI_Alltoallv from one buffer into one buffer
 *   1 hindexed    MPI_Alltoallw, one block over an absolute address
 *   2 two-piece   MPI_Alltoallw, a 24-byte header and the payload from
 *                 elsewhere (what a staged bsp stream of one put_from is)
 *   3 fresh       the payload copied into a send buffer first, then as 0
 *                 (a flattened stream: the sender's copy is still dirty
 *                 in its cache when the other rank reads it)
 *   4 placed      a 24-byte header exchange, then 1 (bsp's placed path)
 *
 * Build and run (BENCHMARKS.md section 2d, now in git history; section 4 has the current MPI figures):
 *   mpicc -O2 benchmarks/mpi_probes/block_shapes.c -o /tmp/block_shapes
 *   mpirun -np 2 /tmp/block_shapes 65536
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SHAPES = 5, HEADER = 24 };
static const char *names[SHAPES] = {"contiguous", "hindexed", "two-piece", "fresh", "placed"};

static MPI_Datatype pieces(int k, char **at, int *len) {
    MPI_Aint addr[2];
    MPI_Datatype t;
    for (int i = 0; i < k; i++) MPI_Get_address(at[i], &addr[i]);
    MPI_Type_create_hindexed(k, len, addr, MPI_BYTE, &t);
    MPI_Type_commit(&t);
    return t;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (p != 2) MPI_Abort(MPI_COMM_WORLD, 2);
    int n = argc > 1 ? atoi(argv[1]) : 65536, reps = argc > 2 ? atoi(argv[2]) : 20000;
    int other = 1 - me;
    char *payload = malloc(n), *fresh = malloc(n), *recv = malloc(n + HEADER);
    char header[HEADER], head_in[HEADER];
    memset(payload, me, n);
    memset(fresh, 0, n);
    memset(recv, 0, n + HEADER);
    memset(header, 7, HEADER);
    int counts[2] = {0, 0}, displs[2] = {0, 0}, ones[2] = {0, 0};
    counts[other] = n;
    ones[other] = 1;
    char *one[1] = {payload}, *two[2] = {header, payload}, *in[1] = {recv};
    int len1[1] = {n}, len2[2] = {HEADER, n}, len_in1[1] = {n}, len_in2[1] = {n + HEADER};
    MPI_Datatype send1[2] = {MPI_BYTE, MPI_BYTE}, send2[2] = {MPI_BYTE, MPI_BYTE};
    MPI_Datatype recv1[2] = {MPI_BYTE, MPI_BYTE}, recv2[2] = {MPI_BYTE, MPI_BYTE};
    send1[other] = pieces(1, one, len1);
    send2[other] = pieces(2, two, len2);
    recv1[other] = pieces(1, in, len_in1);
    recv2[other] = pieces(1, in, len_in2);
    int hcounts[2] = {0, 0};
    hcounts[other] = HEADER;
    for (int round = 0; round < 3; round++) {
        for (int shape = 0; shape < SHAPES; shape++) {
            double total = 0;
            for (int r = 0; r < reps; r++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t = MPI_Wtime();
                switch (shape) {
                case 0:
                    MPI_Alltoallv(payload, counts, displs, MPI_BYTE, recv, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
                    break;
                case 1:
                    MPI_Alltoallw(MPI_BOTTOM, ones, displs, send1, MPI_BOTTOM, ones, displs, recv1, MPI_COMM_WORLD);
                    break;
                case 2:
                    MPI_Alltoallw(MPI_BOTTOM, ones, displs, send2, MPI_BOTTOM, ones, displs, recv2, MPI_COMM_WORLD);
                    break;
                case 3:
                    memcpy(fresh, payload, n);
                    MPI_Alltoallv(fresh, counts, displs, MPI_BYTE, recv, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
                    break;
                case 4:
                    MPI_Alltoallv(header, hcounts, displs, MPI_BYTE, head_in, hcounts, displs, MPI_BYTE, MPI_COMM_WORLD);
                    MPI_Alltoallw(MPI_BOTTOM, ones, displs, send1, MPI_BOTTOM, ones, displs, recv1, MPI_COMM_WORLD);
                    break;
                }
                total += MPI_Wtime() - t;
            }
            if (me == 0) printf("round %d  %-10s %8d bytes  %7.2f us\n", round + 1, names[shape], n, total / reps * 1e6);
        }
    }
    MPI_Finalize();
    return 0;
}
