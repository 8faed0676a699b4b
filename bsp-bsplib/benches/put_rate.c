/* put_rate: the cost of an h-relation of single-double bsp_puts, the
 * pattern behind bspbench's g, in seconds per superstep.
 *
 * Each processor puts h doubles, one bsp_put each, to processor
 * (pid + 1) mod p, then syncs; 1000 supersteps per h. Prints, per h, the
 * best of 7 rounds (rounds interleave the values of h, so a machine whose
 * speed drifts affects every h alike) and the time per put, then the
 * least-squares line T(h) = l + g·h through the h > 0 (bspbench's fit).
 *
 *   bsp-bsplib/bspcc -O2 bsp-bsplib/benches/put_rate.c -o put_rate
 *   BSP_PROCS=2 ./put_rate          # threads
 *   mpirun -np 2 ./put_rate         # MPI (library built with --features mpi)
 *   mpirun -np 2 ./put_rate 2 4 8 16 32 64 128 192 208 256   # chosen h (up to 2048)
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

#define MAXNH 64
static int hs[MAXNH] = {0, 1, 16, 256, 2048};
static int NH = 5;

int main(int argc, char **argv) {
    /* h values from the command line: 0 first (the empty superstep). */
    if (argc > 1) {
        NH = 1;
        hs[0] = 0;
        for (int a = 1; a < argc && NH < MAXNH; a++) {
            int h = atoi(argv[a]);
            if (h < 1 || h > MAXH) {
                fprintf(stderr, "put_rate: h = %s is not in 1..%d\n", argv[a], MAXH);
                return 2;
            }
            hs[NH++] = h;
        }
    }
    int maxh = 0;
    for (int k = 0; k < NH; k++)
        if (hs[k] > maxh)
            maxh = hs[k];
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
    for (int i = 0; i < maxh; i++) {
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
        /* Least squares over the h > 0: T(h) = l + g h. */
        double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
        for (int k = 0; k < NH; k++) {
            if (hs[k] == 0)
                continue;
            n += 1;
            sx += hs[k];
            sy += best[k];
            sxx += (double)hs[k] * hs[k];
            sxy += hs[k] * best[k];
        }
        if (n >= 2 && n * sxx != sx * sx) {
            double g = (n * sxy - sx * sy) / (n * sxx - sx * sx);
            double l = (sy - g * sx) / n;
            printf("fit over the h > 0: g = %.1f ns per put, l = %.2f us\n", g * 1e9, l * 1e6);
        }
    }
    bsp_pop_reg(dst);
    bsp_sync();
    free(src);
    free(dst);
    bsp_end();
    return 0;
}
