/* bsplib-test: p=2 expect=abort "bsp_begin: May be called only once" */
#include <bsp.h>

int main(void)
{
    bsp_begin(bsp_nprocs());
    bsp_begin(bsp_nprocs());
    bsp_end();
    return 0;
}
