/* bsplib-test: p=2 status=3 expect=abort "processor 1, superstep 1: exited during a run (status 3)" */
/* A processor that calls exit in the middle of the section: the program
 * ends with one line naming it and its superstep, and with its status,
 * on threads as under MPI. */
#include <stdlib.h>
#include <bsp.h>

int main(void)
{
    bsp_begin(bsp_nprocs());
    bsp_sync();
    if (bsp_pid() == 1)
        exit(3);
    bsp_sync();
    bsp_end();
    return 0;
}
