/* bsplib-test: p=3 expect=success */
/* Messages: tag sizes effective at the next sync, qsize, get_tag, move,
 * hpmove (aligned pointers), order by source pid then send order. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <bsp.h>

#define CHECK(c) do { if (!(c)) { printf("FAILED on %d at line %d: %s\n", bsp_pid(), __LINE__, #c); return 1; } } while (0)

static int run(void)
{
    int p = bsp_nprocs(), s = bsp_pid(), i, n, bytes, status;
    bsp_size_t ts = sizeof(int);
    bsp_set_tagsize(&ts);
    CHECK(ts == 0); /* the previous setting */
    /* Sent now: still with tag size 0. */
    bsp_send(0, NULL, &s, sizeof s);
    bsp_sync();
    if (s == 0) {
        bsp_qsize(&n, &bytes);
        CHECK(n == p && bytes == p * (int)sizeof(int));
        for (i = 0; i < p; i++) {
            int v = -1;
            bsp_get_tag(&status, NULL);
            CHECK(status == (int)sizeof(int));
            bsp_move(&v, sizeof v);
            CHECK(v == i); /* by source pid */
        }
        bsp_get_tag(&status, NULL);
        CHECK(status == -1);
    }
    /* Now tags are ints: two messages to every processor, payloads of
     * s + 1 doubles. */
    for (i = 0; i < p; i++) {
        int tag = 10 * s + 1;
        double pay[8];
        int k;
        for (k = 0; k < 8; k++) pay[k] = s + k / 10.0;
        bsp_send(i, &tag, pay, (s + 1) * (int)sizeof(double));
        tag++;
        bsp_send(i, &tag, NULL, 0);
    }
    bsp_sync();
    bsp_qsize(&n, &bytes);
    CHECK(n == 2 * p);
    CHECK(bytes == (int)sizeof(double) * p * (p + 1) / 2);
    for (i = 0; i < p; i++) {
        void *tp, *pp;
        int tag = 0;
        bsp_get_tag(&status, &tag);
        CHECK(tag == 10 * i + 1);
        CHECK(status == (i + 1) * (int)sizeof(double));
        CHECK(bsp_hpmove(&tp, &pp) == (i + 1) * (int)sizeof(double));
        CHECK(((uintptr_t)pp % sizeof(double)) == 0 && ((uintptr_t)tp % sizeof(int)) == 0);
        CHECK(*(int *)tp == 10 * i + 1);
        CHECK(((double *)pp)[i] == i + i / 10.0);
        CHECK(bsp_hpmove(&tp, &pp) == 0);
        CHECK(*(int *)tp == 10 * i + 2);
    }
    CHECK(bsp_hpmove((void **)&n, (void **)&bytes) == -1);
    /* Messages not taken are gone after the next sync. */
    bsp_send(s, &s, NULL, 0);
    bsp_sync();
    bsp_sync();
    bsp_qsize(&n, &bytes);
    CHECK(n == 0 && bytes == 0);
    return 0;
}

int main(void)
{
    bsp_begin(bsp_nprocs());
    int rc = run();
    if (rc == 0) printf("processor %d ok\n", bsp_pid());
    bsp_end();
    return rc;
}
