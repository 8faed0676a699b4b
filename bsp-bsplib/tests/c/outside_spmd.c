/* bsplib-test: p=2 expect=abort "bsp_pid: can only be called within SPMD section" */
#include <stdio.h>
#include <bsp.h>

int main(void)
{
    printf("%d\n", bsp_pid());
    return 0;
}
