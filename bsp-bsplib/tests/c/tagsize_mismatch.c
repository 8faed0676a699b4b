/* bsplib-test: p=3 expect=abort "superstep 0: bsp_sync/bsp_set_tagsize: Not all processes announced the same tag size" */
#include <bsp.h>

int main(void)
{
    bsp_begin(bsp_nprocs());
    bsp_size_t t = bsp_pid() == 2 ? 8 : 4;
    bsp_set_tagsize(&t);
    bsp_sync();
    bsp_sync();
    bsp_end();
    return 0;
}
