/* bsplib-test: p=3 expect=success */
/* bsp_begin(P) with P below what is available (BSP_PROCS on threads,
 * mpirun's ranks under MPI): P processors run the section; under MPI the
 * other ranks take no part and leave quietly, as under BSPonMPI. */
#include <stdio.h>
#include <bsp.h>

static int available;

static void spmd(void)
{
    bsp_begin(available - 1);
    int p = bsp_nprocs(), s = bsp_pid(), left = -1;
    /* Only processor 0 has read `available`: under MPI with bsp_init the
     * other ranks entered this function before main read it. */
    if (s == 0 && p != available - 1)
        printf("FAILED: processor %d sees %d processors, expected %d\n", s, p, available - 1);
    bsp_push_reg(&left, sizeof left);
    bsp_sync();
    bsp_put((s + 1) % p, &s, &left, 0, sizeof s);
    bsp_sync();
    if (left != (s + p - 1) % p)
        printf("FAILED: processor %d got %d from its left\n", s, left);
    bsp_pop_reg(&left);
    bsp_end();
}

int main(int argc, char **argv)
{
    bsp_init(spmd, argc, argv);
    available = bsp_nprocs();
    spmd();
    printf("done on %d of %d processors\n", bsp_nprocs(), available);
    return 0;
}
