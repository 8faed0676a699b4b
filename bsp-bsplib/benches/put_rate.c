/* put_rate: the cost of an h-relation of single-double bsp_puts, the
 * pattern behind bspbench's g, in seconds per superstep.
 *
 * Each processor puts h doubles, one bsp_put each, to processor
 * (pid + 1) mod p, then syncs; 1000 supersteps per h. Prints, per h, the
 * best of 7 rounds (rounds interleave the values of h, so a machine whose
 * speed drifts affects every h alike) and the time per put.
 *
 *   bsp-bsplib/bspcc -O2 bsp-bsplib/benches/put_rate.c -o put_rate
 *   BSP_PROCS=2 ./put_rate          # threads
 *   mpirun -np 2 ./put_rate         # MPI (library built with --features mpi)
 *
 * The same file builds against any BSPlib, so two libraries can be
 * compared on the same machine in the same minutes.
 */
#include <bsp.h>
#include <stdio.h>
#include <stdlib.h>

#define MAXH 2048
#define STEPS 1000
#define ROUNDS 7

static const int hs[] = {0, 1, 16, 256, 2048};
#define NH ((int)(sizeof hs / sizeof hs[0]))

int main(void) {
    bsp_begin(bsp_nprocs());
    int p = bsp_nprocs(), s = bsp_pid();
    double *src = malloc(MAXH * sizeof(double));
    double *dst = malloc(MAXH * sizeof(double));
    double best[NH];
    for (int i = 0; i < MAXH; i++) {
        src[i] = s + i;
        dst[i] = 0;
    }
    for (int k = 0; k < NH; k++)
        best[k] = 1e30;
    bsp_push_reg(dst, MAXH * sizeof(double));
    bsp_sync();
    int to = (s + 1) % p;
    for (int r = 0; r < ROUNDS; r++) {
        for (int k = 0; k < NH; k++) {
            int h = hs[k];
            bsp_sync();
            double t0 = bsp_time();
            for (int step = 0; step < STEPS; step++) {
                for (int i = 0; i < h; i++)
                    bsp_put(to, &src[i], dst, i * sizeof(double), sizeof(double));
                bsp_sync();
            }
            double t = (bsp_time() - t0) / STEPS;
            if (t < best[k])
                best[k] = t;
        }
    }
    int from = (s + p - 1) % p;
    for (int i = 0; i < MAXH; i++) {
        if (dst[i] != from + i) {
            fprintf(stderr, "put_rate: processor %d: dst[%d] = %g, expected %d\n", s, i, dst[i], from + i);
            bsp_abort("put_rate: wrong result\n");
        }
    }
    if (s == 0) {
        printf("put_rate: p = %d, best of %d rounds of %d supersteps\n", p, ROUNDS, STEPS);
        printf("%6s %14s %14s\n", "h", "us/superstep", "ns/put");
        for (int k = 0; k < NH; k++) {
            double per_put = hs[k] > 0 ? (best[k] - best[0]) / hs[k] * 1e9 : 0.0;
            printf("%6d %14.2f %14.1f\n", hs[k], best[k] * 1e6, per_put);
        }
    }
    bsp_pop_reg(dst);
    bsp_sync();
    free(src);
    free(dst);
    bsp_end();
    return 0;
}
