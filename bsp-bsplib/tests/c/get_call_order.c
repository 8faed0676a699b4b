/* bsplib-test: p=3 expect=success */
/* Gets into the same local bytes land in the order they were called, not
 * by source pid: each processor gets from the highest pid down into one
 * int, so the get from processor 0, called last, wins; a last get that
 * overlaps half of two ints wins on those bytes. */
#include <stdio.h>
#include <string.h>
#include <bsp.h>

#define CHECK(c) do { if (!(c)) { printf("FAILED on %d at line %d: %s\n", bsp_pid(), __LINE__, #c); return 1; } } while (0)

static int run(void)
{
    int p = bsp_nprocs(), s = bsp_pid(), q;
    unsigned char mine[4], into[8];
    memset(mine, s + 1, sizeof mine);
    memset(into, 0, sizeof into);
    bsp_push_reg(mine, sizeof mine);
    bsp_sync();
    for (q = p - 1; q >= 0; q--)
        bsp_get(q, mine, 0, into, 4);
    bsp_get(p - 1, mine, 0, into + 2, 4);
    bsp_sync();
    CHECK(into[0] == 1 && into[1] == 1);
    for (q = 2; q < 6; q++)
        CHECK(into[q] == p);
    CHECK(into[6] == 0 && into[7] == 0);
    bsp_pop_reg(mine);
    bsp_sync();
    return 0;
}

int main(void)
{
    bsp_begin(bsp_nprocs());
    int rc = run();
    bsp_end();
    return rc;
}
