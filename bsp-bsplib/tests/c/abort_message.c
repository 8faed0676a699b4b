/* bsplib-test: p=3 expect=abort "processor 1, superstep 1: input of 42 is out of range" */
#include <bsp.h>

int main(void)
{
    bsp_begin(bsp_nprocs());
    bsp_sync();
    if (bsp_pid() == 1)
        bsp_abort("input of %d is out of range\n", 42);
    bsp_sync();
    bsp_sync();
    bsp_end();
    return 0;
}
