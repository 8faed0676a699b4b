/* bsplib-test: p=3 expect=success */
/* bsp_begin as main's first statement, without bsp_init: every processor
 * runs main up to bsp_end; only processor 0 goes on after it. */
#include <stdio.h>
#include <stdlib.h>
#include <bsp.h>

int main(void)
{
    bsp_begin(bsp_nprocs());
    int p = bsp_nprocs(), s = bsp_pid();
    if (s < 0 || s >= p || p != atoi(getenv("BSPLIB_TEST_P"))) {
        printf("FAILED: pid %d of %d\n", s, p);
        return 1;
    }
    double t0 = bsp_time();
    bsp_sync();
    if (bsp_time() < t0) {
        printf("FAILED: time went back\n");
        return 1;
    }
    printf("processor %d of %d\n", s, p);
    bsp_end();
    printf("after bsp_end: %d processors\n", bsp_nprocs());
    return 0;
}
