/* bsplib-test: p=2 expect=abort "processor 1, superstep 1: bsp_end:" */
#include <bsp.h>

int main(void)
{
    int x = 0;
    bsp_begin(bsp_nprocs());
    bsp_push_reg(&x, sizeof x);
    bsp_sync();
    if (bsp_pid() == 1)
        bsp_put(0, &x, &x, 0, sizeof x);
    bsp_end();
    return 0;
}
