/* bsplib-test: p=2 expect=abort "superstep 1: bsp_put: Remote address" */
#include <bsp.h>

int main(void)
{
    int x = 0, y = 0;
    bsp_begin(bsp_nprocs());
    bsp_push_reg(&x, sizeof x);
    bsp_sync();
    bsp_put(1 - bsp_pid(), &x, &y, 0, sizeof x);
    bsp_sync();
    bsp_end();
    return 0;
}
