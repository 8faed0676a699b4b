/* bsplib-test: p=2 expect=abort "processor 1, superstep 1: bsp_put: Writes 4 bytes beyond registered range" */
#include <bsp.h>

int main(void)
{
    int x[2] = {0, 0};
    bsp_begin(bsp_nprocs());
    bsp_push_reg(x, bsp_pid() == 0 ? sizeof(int) : 2 * sizeof(int));
    bsp_sync();
    if (bsp_pid() == 1)
        bsp_put(0, x, x, 0, 2 * sizeof(int));
    bsp_sync();
    bsp_end();
    return 0;
}
