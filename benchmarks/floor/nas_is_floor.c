/*
 * The floor under NAS IS: the bucket ranking that NPB IS and bsp's
 * `BucketRanker` use, written plainly in C with OpenMP, with nothing
 * else around it (no supersteps, no checks in the loops, one shared
 * array for the moved keys).
 *
 * Each of T threads holds N/T keys of the class (NPB's generator and
 * key formula, so the same keys as NPB and bsp). One rank:
 *
 *   1. every thread counts its keys by bucket (the top B bits);
 *   2. threads take contiguous runs of buckets holding about N/T keys;
 *   3. every thread moves each key to its bucket's place in one shared
 *      array of N keys, bucket by bucket, through one cursor per bucket;
 *   4. every thread counts the values of its buckets, one bucket at a
 *      time in a window of 2^(key bits - B) counters, and turns the
 *      counts into ranks (keys smaller than each value).
 *
 * As NAS IS: one untimed rank, then 10 timed ones, each after changing
 * two keys (key[it] = it, key[it + 10] = max_key - it). After the timed
 * ranks every value's rank is checked against a sequential count.
 *
 *   gcc -O3 -fopenmp benchmarks/floor/nas_is_floor.c -o nas_is_floor
 *   OMP_NUM_THREADS=2 ./nas_is_floor B [BUCKET_BITS]
 *
 * Prints one JSON object: the class, threads, bucket bits, seconds of
 * the 10 timed ranks, Mop/s (10 N / seconds / 10^6, as NPB reports) and
 * whether the ranks were right.
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ITERATIONS = 10, MAX_THREADS = 256 };

static double uniform(uint64_t *x)
{
    *x = (*x * 1220703125ull) & ((1ull << 46) - 1);
    return (double)*x / (double)(1ull << 46);
}

/* x = x * a^steps mod 2^46, by repeated squaring (NPB's jump ahead). */
static uint64_t skip(uint64_t x, uint64_t steps)
{
    uint64_t a = 1220703125ull;
    for (; steps > 0; steps >>= 1) {
        if (steps & 1)
            x = (x * a) & ((1ull << 46) - 1);
        a = (a * a) & ((1ull << 46) - 1);
    }
    return x;
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "B";
    int log_keys, log_max;
    switch (name[0]) {
    case 'S': log_keys = 16, log_max = 11; break;
    case 'W': log_keys = 20, log_max = 16; break;
    case 'A': log_keys = 23, log_max = 19; break;
    case 'B': log_keys = 25, log_max = 21; break;
    case 'C': log_keys = 27, log_max = 23; break;
    default:
        fprintf(stderr, "usage: nas_is_floor S|W|A|B|C [BUCKET_BITS]\n");
        return 2;
    }
    int bits = argc > 2 ? atoi(argv[2]) : 10;
    if (bits < 1 || bits > 12 || bits > log_max) {
        fprintf(stderr, "nas_is_floor: bucket bits must be 1 to 12 and at most %d\n", log_max);
        return 2;
    }
    const size_t n = (size_t)1 << log_keys, max_key = (size_t)1 << log_max;
    const int shift = log_max - bits;
    const size_t buckets = (size_t)1 << bits, window = (size_t)1 << shift;
    int threads = omp_get_max_threads();
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;

    uint32_t *keys = malloc(n * sizeof *keys);
    uint32_t *moved = malloc(n * sizeof *moved);
    uint32_t *rank = malloc(max_key * sizeof *rank);
    uint64_t *count = calloc((size_t)threads * buckets, sizeof *count);
    if (!keys || !moved || !rank || !count) {
        fprintf(stderr, "nas_is_floor: out of memory\n");
        return 1;
    }
    double seconds = 0;

#pragma omp parallel num_threads(threads)
    {
        const int t = omp_get_thread_num();
        const size_t lo = n / threads * t, hi = t == threads - 1 ? n : n / threads * (t + 1);
        uint64_t x = skip(314159265ull, 4 * (uint64_t)lo);
        for (size_t i = lo; i < hi; i++) {
            double s = uniform(&x);
            s += uniform(&x);
            s += uniform(&x);
            s += uniform(&x);
            keys[i] = (uint32_t)((double)(max_key / 4) * s);
        }
        memset(moved + lo, 0, (hi - lo) * sizeof *moved); /* map the pages */
        uint64_t *mine = count + (size_t)t * buckets;
        uint32_t **cursor = malloc(buckets * sizeof *cursor);
        uint64_t *starts = malloc((buckets + 1) * sizeof *starts); /* this thread's copy */
        double start = 0;
        for (int it = 0; it <= ITERATIONS; it++) {
#pragma omp barrier
            if (t == 0 && it == 1)
                start = omp_get_wtime();
            if (it > 0 && t == 0) {
                keys[it] = (uint32_t)it;
                keys[it + 10] = (uint32_t)(max_key - it);
            }
#pragma omp barrier
            /* 1. Count by bucket. */
            memset(mine, 0, buckets * sizeof *mine);
            for (size_t i = lo; i < hi; i++)
                mine[keys[i] >> shift]++;
#pragma omp barrier
            /* 2. Bucket starts and owners (every thread alike, redundantly). */
            starts[0] = 0;
            for (size_t b = 0; b < buckets; b++) {
                uint64_t sum = 0;
                for (int q = 0; q < threads; q++) {
                    if (q == t)
                        cursor[b] = moved + starts[b] + sum;
                    sum += count[(size_t)q * buckets + b];
                }
                starts[b + 1] = starts[b] + sum;
            }
            /* Thread q takes the buckets up to where the running total
             * reaches (q + 1) N / T; this thread keeps its own run. */
            size_t b = 0, from_bucket = 0, to_bucket = buckets;
            uint64_t seen = 0;
            for (int q = 0; q < threads; q++) {
                if (q == t)
                    from_bucket = b;
                uint64_t goal = (uint64_t)n * (q + 1) / threads;
                while (b < buckets) {
                    uint64_t bucket = starts[b + 1] - starts[b];
                    if (seen + bucket > goal && q < threads - 1)
                        break;
                    seen += bucket;
                    b++;
                }
                if (q == t)
                    to_bucket = b;
            }
#pragma omp barrier
            /* 3. Move every key to its bucket's place. */
            for (size_t i = lo; i < hi; i++) {
                uint32_t k = keys[i];
                *cursor[k >> shift]++ = k;
            }
#pragma omp barrier
            /* 4. Count this thread's buckets, value by value, into ranks. */
            uint32_t running = (uint32_t)starts[from_bucket];
            for (size_t c = from_bucket; c < to_bucket; c++) {
                uint32_t *win = rank + c * window;
                memset(win, 0, window * sizeof *win);
                const uint32_t *from = moved + starts[c], *to = moved + starts[c + 1];
                for (const uint32_t *k = from; k < to; k++)
                    win[*k & (window - 1)]++;
                for (size_t v = 0; v < window; v++) {
                    uint32_t here = win[v];
                    win[v] = running;
                    running += here;
                }
            }
        }
#pragma omp barrier
        if (t == 0)
            seconds = omp_get_wtime() - start;
        free(cursor);
        free(starts);
    }

    /* Every value's rank against a sequential count of the final keys. */
    uint32_t *check = calloc(max_key, sizeof *check);
    int right = check != NULL;
    for (size_t i = 0; right && i < n; i++)
        check[keys[i]]++;
    uint32_t below = 0;
    for (size_t v = 0; right && v < max_key; v++) {
        right = rank[v] == below;
        below += check[v];
    }
    printf("{\"class\":\"%c\",\"threads\":%d,\"bucket_bits\":%d,\"seconds\":%.6f,"
           "\"mops\":%.1f,\"verified\":%s}\n",
           name[0], threads, bits, seconds, ITERATIONS * (double)n / seconds / 1e6,
           right ? "true" : "false");
    return right ? 0 : 1;
}
