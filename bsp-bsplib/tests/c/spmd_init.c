/* bsplib-test: p=4 expect=success */
/* bsp_init with a separate SPMD function, as in BSPedupack: main reads the
 * processor count into a global and calls the SPMD function. */
#include <stdio.h>
#include <bsp.h>

static int P;

static void spmd(void)
{
    bsp_begin(P);
    int p = bsp_nprocs(), s = bsp_pid(), sum = 0, i;
    int *all = NULL, mine = s + 1;
    int buf[64];
    all = buf;
    bsp_push_reg(all, p * (int)sizeof(int));
    bsp_sync();
    for (i = 0; i < p; i++)
        bsp_put(i, &mine, all, s * (int)sizeof(int), sizeof(int));
    bsp_sync();
    for (i = 0; i < p; i++)
        sum += all[i];
    bsp_pop_reg(all);
    bsp_sync();
    if (sum != p * (p + 1) / 2)
        printf("FAILED: processor %d sum %d\n", s, sum);
    else
        printf("processor %d sum %d\n", s, sum);
    bsp_end();
}

int main(int argc, char **argv)
{
    bsp_init(spmd, argc, argv);
    P = bsp_nprocs();
    spmd();
    printf("done on %d processors\n", bsp_nprocs());
    return 0;
}
