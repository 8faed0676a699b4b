/* bsplib-test: p=3 expect=abort "superstep 2: bsp_sync/bsp_end: Some processes have called bsp_sync, while others have called bsp_end instead" */
#include <bsp.h>

int main(void)
{
    bsp_begin(bsp_nprocs());
    bsp_sync();
    bsp_sync();
    if (bsp_pid() == 1)
        bsp_sync();
    bsp_end();
    return 0;
}
