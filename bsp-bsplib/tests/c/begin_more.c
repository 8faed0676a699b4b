/* bsplib-test: p=2 expect=success */
/* bsp_begin(P) with P above what is available (BSP_PROCS on threads,
 * mpirun's ranks under MPI): the section runs on all that is available,
 * as many processors as bsp_nprocs() said before it, on both transports. */
#include <stdio.h>
#include <bsp.h>

int main(void)
{
    int available = bsp_nprocs();
    bsp_begin(available + 3);
    int p = bsp_nprocs(), s = bsp_pid(), right = -1;
    if (p != available)
        printf("FAILED: processor %d sees %d processors, expected %d\n", s, p, available);
    bsp_push_reg(&right, sizeof right);
    bsp_sync();
    bsp_put((s + p - 1) % p, &s, &right, 0, sizeof s);
    bsp_sync();
    if (right != (s + 1) % p)
        printf("FAILED: processor %d got %d from its right\n", s, right);
    bsp_pop_reg(&right);
    bsp_end();
    if (bsp_nprocs() != available)
        printf("FAILED: after bsp_end, bsp_nprocs() is %d, expected %d\n", bsp_nprocs(), available);
    printf("done on %d processors\n", available);
    return 0;
}
