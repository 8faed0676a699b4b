/* bsplib-test: p=3 expect=success */
/* Puts and gets: registration order, different sizes and NULL, delivery
 * at the sync, gets read before the superstep's puts and land before them,
 * puts by source pid, hp variants, and a registration popped in the
 * superstep of its last use. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bsp.h>

#define CHECK(c) do { if (!(c)) { printf("FAILED on %d at line %d: %s\n", bsp_pid(), __LINE__, #c); return 1; } } while (0)

static int run(void)
{
    int p = bsp_nprocs(), s = bsp_pid(), i;
    int x = s, y = -1, z[8];
    int *big = calloc((size_t)(s + 1), sizeof(int));
    for (i = 0; i < 8; i++) z[i] = 100 * s + i;
    bsp_push_reg(&x, sizeof x);
    bsp_push_reg(s == 0 ? NULL : (void *)big, s == 0 ? 0 : (s + 1) * (int)sizeof(int));
    bsp_push_reg(z, sizeof z);
    bsp_sync();

    /* A put is buffered: changing the source after the call changes nothing. */
    int v = 1000 + s;
    bsp_put((s + 1) % p, &v, &x, 0, sizeof v);
    v = -7;
    /* A get reads the value before this superstep's puts. */
    bsp_get((s + 1) % p, &x, 0, &y, sizeof y);
    bsp_sync();
    CHECK(x == 1000 + (s + p - 1) % p);
    CHECK(y == (s + 1) % p);

    /* Puts to one place land by source pid: the highest pid wins. */
    bsp_put(0, &s, z, 0, sizeof s);
    /* A get into z[1] lands before a put into z[1]. */
    bsp_get(s, z, 5 * (int)sizeof(int), &z[1], sizeof(int));
    bsp_put(s, &v, z, 1 * (int)sizeof(int), sizeof v);
    bsp_sync();
    if (s == 0) CHECK(z[0] == p - 1);
    CHECK(z[1] == -7);

    /* hp variants, to processors whose areas differ in size. */
    if (s > 0) {
        int w = 42 + s;
        bsp_hpput(s, &w, big, s * (int)sizeof(int), sizeof w);
    }
    int got = 0;
    bsp_hpget(p - 1, z, 7 * (int)sizeof(int), &got, sizeof got);
    bsp_sync();
    if (s > 0) CHECK(big[s] == 42 + s);
    CHECK(got == 100 * (p - 1) + 7);

    /* Pop in the superstep of the last put to it: still delivered. */
    bsp_put((s + 1) % p, &s, &x, 0, sizeof s);
    bsp_pop_reg(&x);
    bsp_sync();
    CHECK(x == (s + p - 1) % p);
    bsp_pop_reg(s == 0 ? NULL : (void *)big);
    bsp_pop_reg(z);
    bsp_sync();
    free(big);
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
