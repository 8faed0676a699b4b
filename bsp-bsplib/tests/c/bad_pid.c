/* bsplib-test: p=2 expect=abort "processor 0, superstep 1: bsp_get: The source process ID does not exist" */
#include <bsp.h>

int main(void)
{
    int x = 0, y;
    bsp_begin(bsp_nprocs());
    bsp_push_reg(&x, sizeof x);
    bsp_sync();
    if (bsp_pid() == 0)
        bsp_get(bsp_nprocs(), &x, 0, &y, sizeof y);
    bsp_sync();
    bsp_end();
    return 0;
}
