/* bsplib-test: p=2 expect=abort "processor 1, superstep 1: bsp_sync/bsp_pop_reg: Processes 0 and 1 did not pop the same memory registration" */
#include <bsp.h>

int main(void)
{
    int x, y;
    bsp_begin(bsp_nprocs());
    bsp_push_reg(&x, sizeof x);
    bsp_push_reg(&y, sizeof y);
    bsp_sync();
    bsp_pop_reg(bsp_pid() == 0 ? &x : &y);
    bsp_sync();
    bsp_end();
    return 0;
}
