/* bsplib-test: p=2 expect=abort "superstep 0: bsp_get: Remote address was just registered" */
#include <bsp.h>

int main(void)
{
    int x = 0, y;
    bsp_begin(bsp_nprocs());
    bsp_push_reg(&x, sizeof x);
    bsp_get(1 - bsp_pid(), &x, 0, &y, sizeof y);
    bsp_sync();
    bsp_end();
    return 0;
}
