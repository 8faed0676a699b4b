/*
 * The memory floor under a sort's pass: T OpenMP threads, each on arrays
 * of its own of N 4-byte keys (its share of a sort), timed three ways:
 *
 *   read     sum the keys                        (4 bytes moved per key)
 *   copy     out[i] = in[i], STREAM's copy       (8 bytes per key)
 *   scatter  out[next[k >> s]++] = k over 1024   (8 bytes per key, plus the
 *            buckets, NPB IS's loop               read of each line before
 *                                                 it is written: 12)
 *
 * A counting-sort pass reads its keys and writes them once, so `copy` is
 * the floor of a pass and `scatter` the same work as plain C does it.
 *
 *   gcc -O3 -fopenmp benchmarks/floor/stream_copy.c -o stream_copy
 *   ./stream_copy THREADS [KEYS_PER_THREAD] [ROUNDS]
 *
 * Prints one JSON object: for each way, nanoseconds per key per thread and
 * GB/s over all threads (bytes read plus written, as STREAM counts), the
 * best of ROUNDS rounds (default 5), after one round that maps the pages.
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { BUCKET_BITS = 10, BUCKETS = 1 << BUCKET_BITS };

static uint32_t next_key(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*x >> 32);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: stream_copy THREADS [KEYS_PER_THREAD] [ROUNDS]\n");
        return 2;
    }
    int threads = atoi(argv[1]);
    size_t n = argc > 2 ? strtoull(argv[2], 0, 10) : (size_t)1 << 24;
    int rounds = argc > 3 ? atoi(argv[3]) : 5;
    double best[3] = {1e30, 1e30, 1e30};
    volatile uint64_t sink = 0;
    omp_set_num_threads(threads);
#pragma omp parallel
    {
        uint32_t *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
        size_t *next = malloc(BUCKETS * sizeof *next), count[BUCKETS] = {0};
        uint64_t x = 12345 + omp_get_thread_num();
        if (!in || !out || !next)
            abort();
        for (size_t i = 0; i < n; i++) {
            in[i] = next_key(&x);
            out[i] = 0;
            count[in[i] >> (32 - BUCKET_BITS)]++;
        }
        for (int r = -1; r < rounds; r++) {
            double t[4];
            uint64_t sum = 0;
#pragma omp barrier
            t[0] = omp_get_wtime();
            for (size_t i = 0; i < n; i++)
                sum += in[i];
#pragma omp barrier
            t[1] = omp_get_wtime();
            for (size_t i = 0; i < n; i++)
                out[i] = in[i];
#pragma omp barrier
            t[2] = omp_get_wtime();
            size_t at = 0;
            for (int b = 0; b < BUCKETS; b++) {
                next[b] = at;
                at += count[b];
            }
            for (size_t i = 0; i < n; i++) {
                uint32_t k = in[i];
                out[next[k >> (32 - BUCKET_BITS)]++] = k;
            }
#pragma omp barrier
            t[3] = omp_get_wtime();
#pragma omp master
            if (r >= 0)
                for (int w = 0; w < 3; w++)
                    if (t[w + 1] - t[w] < best[w])
                        best[w] = t[w + 1] - t[w];
            sink += sum + out[n / 2];
        }
        free(in);
        free(out);
        free(next);
    }
    const char *name[3] = {"read", "copy", "scatter"};
    const double bytes[3] = {4, 8, 8};
    printf("{\"threads\":%d,\"keys_per_thread\":%zu", threads, n);
    for (int w = 0; w < 3; w++)
        printf(",\"%s_ns_per_key\":%.3f,\"%s_gb_s\":%.2f", name[w], best[w] * 1e9 / n, name[w],
               bytes[w] * n * threads / best[w] / 1e9);
    printf("}\n");
    return sink == 42;
}
