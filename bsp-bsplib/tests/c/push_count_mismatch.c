/* bsplib-test: p=3 expect=abort "processor 1, superstep 1: bsp_sync/bsp_push_reg: Not all processes registered the same number of memory blocks" */
#include <bsp.h>

int main(void)
{
    int x;
    bsp_begin(bsp_nprocs());
    bsp_sync();
    if (bsp_pid() == 0)
        bsp_push_reg(&x, sizeof x);
    bsp_sync();
    bsp_sync();
    bsp_end();
    return 0;
}
