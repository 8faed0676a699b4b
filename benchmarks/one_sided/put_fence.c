/* put_fence: what a hand-written BSP superstep costs in MPI one-sided
 * communication, the anchor of bsp's MPI transport (benchmarks/one_sided.sh
 * runs it beside bench_one_sided and prints the ratios).
 *
 * Every rank allocates one window (MPI_Win_allocate) and opens the first
 * epoch with MPI_Win_fence; a superstep is then the puts of that superstep
 * followed by one MPI_Win_fence, as BSPonMPI and LPF build theirs. Each
 * rank puts to rank (pid + 1) mod p. Four measurements, in the order and
 * with the names bench_one_sided prints:
 *
 *   empty  a superstep with no puts: one fence;
 *   one    one 8-byte put per rank, then the fence;
 *   g      h puts of one 8-byte word each, for each h of the list, then the
 *          fence; g is the slope of the least-squares line through T(h);
 *   bulk   one put of 64 KiB, 1 MiB and 8 MiB per rank, then the fence,
 *          in GB/s put per rank.
 *
 * MPI is initialised at the thread level the second argument names:
 * `single` (MPI_Init, the default, what a hand-written MPI program asks
 * for) or `serialized` (what bsp asks for, so that runs may start from
 * different threads one at a time). On Open MPI 4.1 the second makes
 * every fence dearer (0.46 against 0.27 us on the 2-core AMD VM).
 *
 * Each figure is taken over ROUNDS rounds (all measurements interleaved,
 * so drift touches each alike); a round's time is rank 0's for a batch of
 * supersteps between two fences. Printed as JSON lines with the minimum
 * and median over rounds. The received words are checked; a wrong word
 * exits with status 1.
 *
 *   mpicc -O2 benchmarks/one_sided/put_fence.c -o put_fence
 *   mpirun -np 2 ./put_fence [rounds [single|serialized]]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXH 2048
static const int HS[] = {1, 8, 32, 64, 128, 192, 256, 512, 1024, 2048};
#define NH ((int)(sizeof HS / sizeof HS[0]))
static const long BULK[] = {64L << 10, 1L << 20, 8L << 20};
#define NB ((int)(sizeof BULK / sizeof BULK[0]))
#define MAXROUNDS 64

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *xs, int n) {
    qsort(xs, n, sizeof *xs, cmp);
    return n % 2 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

static double least(const double *xs, int n) {
    double m = xs[0];
    for (int i = 1; i < n; i++)
        m = xs[i] < m ? xs[i] : m;
    return m;
}

/* Seconds per superstep of `steps` supersteps, each `h` one-word puts
 * (h = -1: one put of `bytes` bytes), on rank 0. */
static double supersteps(MPI_Win win, int to, const char *src, int h, long bytes, int steps) {
    MPI_Win_fence(0, win);
    double t0 = MPI_Wtime();
    for (int step = 0; step < steps; step++) {
        if (h < 0)
            MPI_Put(src, (int)bytes, MPI_BYTE, to, 0, (int)bytes, MPI_BYTE, win);
        for (int i = 0; i < h; i++)
            MPI_Put(src + 8 * i, 8, MPI_BYTE, to, 8 * i, 8, MPI_BYTE, win);
        MPI_Win_fence(0, win);
    }
    return (MPI_Wtime() - t0) / steps;
}

int main(int argc, char **argv) {
    const char *level = argc > 2 ? argv[2] : "single";
    int provided;
    if (strcmp(level, "single") == 0) {
        MPI_Init(&argc, &argv);
    } else if (strcmp(level, "serialized") == 0) {
        MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    } else {
        fprintf(stderr, "put_fence: the thread level is single or serialized, not %s\n", level);
        return 2;
    }
    int p, s;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_rank(MPI_COMM_WORLD, &s);
    int rounds = argc > 1 ? atoi(argv[1]) : 7;
    if (rounds < 1 || rounds > MAXROUNDS) {
        if (s == 0)
            fprintf(stderr, "put_fence: rounds must be 1..%d\n", MAXROUNDS);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long most = BULK[NB - 1];
    char *base, *src = malloc(most);
    MPI_Win win;
    MPI_Win_allocate(most, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    for (long i = 0; i < most; i += 8) {
        uint64_t word = (uint64_t)s << 32 | (uint64_t)(i / 8);
        memcpy(src + i, &word, 8);
    }
    int to = (s + 1) % p, from = (s + p - 1) % p;
    static double empty[MAXROUNDS], one[MAXROUNDS], g[NH][MAXROUNDS], bulk[NB][MAXROUNDS];
    for (int r = 0; r < rounds; r++) {
        empty[r] = supersteps(win, to, src, 0, 0, 20000);
        one[r] = supersteps(win, to, src, 1, 0, 20000);
        for (int k = 0; k < NH; k++)
            g[k][r] = supersteps(win, to, src, HS[k], 0, HS[k] > 256 ? 200 : 2000);
        for (int k = 0; k < NB; k++)
            bulk[k][r] = supersteps(win, to, src, -1, BULK[k], BULK[k] > (1 << 20) ? 20 : 200);
    }
    MPI_Win_fence(0, win);
    for (long i = 0; i < most; i += 8) {
        uint64_t word, want = (uint64_t)from << 32 | (uint64_t)(i / 8);
        memcpy(&word, base + i, 8);
        if (word != want) {
            fprintf(stderr, "put_fence: rank %d: word %ld is %llx, expected %llx\n", s, i / 8,
                    (unsigned long long)word, (unsigned long long)want);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    if (s == 0) {
        char who[64];
        snprintf(who, sizeof who, "\"impl\":\"mpi_one_sided\",\"threads\":\"%s\"", level);
        printf("{%s,\"np\":%d,\"what\":\"empty\",\"us_min\":%.4f,\"us_median\":%.4f}\n", who, p,
               1e6 * least(empty, rounds), 1e6 * median(empty, rounds));
        printf("{%s,\"np\":%d,\"what\":\"one\",\"us_min\":%.4f,\"us_median\":%.4f}\n", who, p,
               1e6 * least(one, rounds), 1e6 * median(one, rounds));
        /* g: the fit through each round's T(h), then min and median of the slopes. */
        double slopes[MAXROUNDS];
        for (int r = 0; r < rounds; r++) {
            double mx = 0, my = 0, sxy = 0, sxx = 0;
            for (int k = 0; k < NH; k++) {
                mx += HS[k];
                my += g[k][r];
            }
            mx /= NH;
            my /= NH;
            for (int k = 0; k < NH; k++) {
                sxy += (HS[k] - mx) * (g[k][r] - my);
                sxx += (HS[k] - mx) * (HS[k] - mx);
            }
            slopes[r] = sxy / sxx;
        }
        printf("{%s,\"np\":%d,\"what\":\"g\",\"ns_min\":%.3f,\"ns_median\":%.3f}\n", who, p,
               1e9 * least(slopes, rounds), 1e9 * median(slopes, rounds));
        for (int k = 0; k < NH; k++)
            printf("{%s,\"np\":%d,\"what\":\"h%d\",\"ns_per_put_min\":%.3f,\"ns_per_put_median\":%.3f}\n",
                   who, p, HS[k], 1e9 * least(g[k], rounds) / HS[k],
                   1e9 * median(g[k], rounds) / HS[k]);
        for (int k = 0; k < NB; k++) {
            double *t = bulk[k];
            /* the fastest round has the most GB/s */
            printf("{%s,\"np\":%d,\"what\":\"bulk%ld\",\"gbs_max\":%.3f,\"gbs_median\":%.3f}\n",
                   who, p, BULK[k] >> 10, BULK[k] / least(t, rounds) / 1e9,
                   BULK[k] / median(t, rounds) / 1e9);
        }
    }
    MPI_Win_free(&win);
    free(src);
    MPI_Finalize();
    return 0;
}
