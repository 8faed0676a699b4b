/*
 * The floor under a shared-memory superstep, the peer that the threads
 * transport's sync is measured against: T OpenMP threads, each of which
 * writes one cache line of its own ("its row"), passes an OpenMP barrier,
 * then reads every thread's row. That is the least any sync can do on one
 * node: one barrier, and every processor learning what every other sent.
 * A second barrier ends the step so that no thread overwrites its row while
 * a slower one still reads it (a real sync double-buffers instead).
 *
 *   gcc -O2 -fopenmp benchmarks/floor/omp_barrier.c -o benchmarks/floor/omp_barrier
 *   benchmarks/floor/omp_barrier THREADS [STEPS] [ROUNDS]
 *
 * Prints one JSON object: nanoseconds per step (barrier + row reads +
 * barrier) and per bare `#pragma omp barrier`, each the median over ROUNDS
 * rounds of STEPS steps. The harness benchmarks/examples/bench_floor.rs runs
 * it beside bsp's supersteps (benchmarks/floor/README.md).
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { LINE = 64, MAX_THREADS = 1024 };

struct row {
    _Alignas(LINE) volatile uint64_t word[LINE / sizeof(uint64_t)];
};

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof *v, by_value);
    return v[n / 2];
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: omp_barrier THREADS [STEPS] [ROUNDS]\n");
        return 2;
    }
    int threads = atoi(argv[1]);
    long steps = argc > 2 ? atol(argv[2]) : 20000;
    int rounds = argc > 3 ? atoi(argv[3]) : 7;
    if (threads < 1 || threads > MAX_THREADS || steps < 1 || rounds < 1) {
        fprintf(stderr, "omp_barrier: THREADS must be 1..%d, STEPS and ROUNDS positive\n",
                MAX_THREADS);
        return 2;
    }
    struct row *rows = aligned_alloc(LINE, sizeof(struct row) * threads);
    double *sync_ns = calloc(rounds, sizeof *sync_ns);
    double *barrier_ns = calloc(rounds, sizeof *barrier_ns);
    uint64_t checksum = 0;
    omp_set_num_threads(threads);
    for (int r = 0; r < rounds; r++) {
        double start = 0, middle = 0, end = 0;
#pragma omp parallel reduction(+ : checksum)
        {
            int me = omp_get_thread_num();
            int t = omp_get_num_threads();
#pragma omp barrier
#pragma omp master
            start = omp_get_wtime();
            for (long s = 0; s < steps; s++) {
                rows[me].word[0] = (uint64_t)s + (uint64_t)me;
#pragma omp barrier
                for (int q = 0; q < t; q++)
                    checksum += rows[q].word[0];
#pragma omp barrier
            }
#pragma omp master
            middle = omp_get_wtime();
            for (long s = 0; s < steps; s++) {
#pragma omp barrier
            }
#pragma omp master
            end = omp_get_wtime();
        }
        sync_ns[r] = (middle - start) / steps * 1e9;
        barrier_ns[r] = (end - middle) / steps * 1e9;
    }
    /* Every step reads each row after its owner wrote s + q: the sum is known. */
    uint64_t expect = 0;
    for (long s = 0; s < steps; s++)
        for (int q = 0; q < threads; q++)
            expect += ((uint64_t)s + (uint64_t)q) * (uint64_t)threads;
    expect *= (uint64_t)rounds;
    if (checksum != expect) {
        fprintf(stderr, "omp_barrier: rows read %llu, expected %llu\n",
                (unsigned long long)checksum, (unsigned long long)expect);
        return 1;
    }
    printf("{\"peer\":\"openmp\",\"threads\":%d,\"steps\":%ld,\"rounds\":%d,"
           "\"sync_ns\":%.1f,\"barrier_ns\":%.1f}\n",
           threads, steps, rounds, median(sync_ns, rounds), median(barrier_ns, rounds));
    free(rows);
    free(sync_ns);
    free(barrier_ns);
    return 0;
}
