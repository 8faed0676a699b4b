/* bsplib-test: p=2 expect=abort "superstep 0: bsp_pop_reg: memory at address" */
#include <bsp.h>

int main(void)
{
    int x;
    bsp_begin(bsp_nprocs());
    bsp_pop_reg(&x);
    bsp_sync();
    bsp_end();
    return 0;
}
