// First-touch cost of memory (BENCHMARKS.md section 9 of 2026-11-24, now in git history): T threads each
// write a fresh mmap'd region of MIB/T MiB, then write it again; prints
// both rates and the time per 4 KiB page faulted in.
//
//   cc -O2 -pthread benchmarks/first_touch.c -o first_touch && ./first_touch 1024 16
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
static size_t per; static pthread_barrier_t bar;
static double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+t.tv_nsec*1e-9;}
static double fresh[64], warm[64];
static void *work(void *a){ long i=(long)a; char *m=mmap(0,per,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);
 pthread_barrier_wait(&bar); double t0=now(); memset(m,1,per); double t1=now(); pthread_barrier_wait(&bar);
 double t2=now(); memset(m,2,per); double t3=now(); fresh[i]=t1-t0; warm[i]=t3-t2; munmap(m,per); return 0;}
int main(int c,char**v){ size_t total=(size_t)atol(v[1])<<20; int T=atoi(v[2]); per=total/T; pthread_t th[64];
 pthread_barrier_init(&bar,0,T); for(long i=0;i<T;i++) pthread_create(&th[i],0,work,(void*)i); for(int i=0;i<T;i++) pthread_join(th[i],0);
 double f=0,w=0; for(int i=0;i<T;i++){ if(fresh[i]>f) f=fresh[i]; if(warm[i]>w) w=warm[i]; }
 printf("first_touch: %zu MiB over %d threads: first touch %.1f ms (%.2f GB/s, %.0f ns per 4K page per thread), again %.1f ms (%.2f GB/s)\n", total>>20, T, f*1e3, total/f/1e9, f/(per/4096)*1e9, w*1e3, total/w/1e9); return 0;}
