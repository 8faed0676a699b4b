/*
 * bsp.h: BSPlib for C programs, on the bsp runtime (crate bsp-bsplib).
 *
 * The API of "BSPlib: The BSP programming library" (Hill, McColl,
 * Stefanescu, Goudreau, Lang, Rao, Suel, Tsantilas, Bisseling; Parallel
 * Computing 24(14), 1998), with its int-based types. Build a program with
 *
 *     bsp-bsplib/bspcc prog.c -o prog           (or see README.md for cc)
 *
 * and run it on threads (`./prog`, bsp_begin(p) starts p threads) or, with
 * the library built with the mpi feature, one processor per rank
 * (`mpirun -np P ./prog`). README.md ("Running BSPlib programs") says what
 * threads mean for C globals, and how errors are reported.
 */
#ifndef BSP_BSPLIB_H
#define BSP_BSPLIB_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Processor ids and counts, and sizes in bytes (BSPlib 1998: int). */
typedef int bsp_pid_t;
typedef int bsp_nprocs_t;
typedef int bsp_size_t;

/* --- SPMD ---------------------------------------------------------- */

/* Declares the function that holds the SPMD section (bsp_begin ... bsp_end)
 * when it is not main; call it first in main. */
void bsp_init(void (*spmd_part)(void), int argc, char *argv[]);
/* Starts the SPMD section on (at most) maxprocs processors; the caller
 * goes on as processor 0. */
void bsp_begin(bsp_pid_t maxprocs);
/* Ends the SPMD section; only processor 0 goes on after it. */
void bsp_end(void);
/* The number of processors: inside the SPMD section, of the section;
 * before it, how many are available (BSP_PROCS, else the cores on threads;
 * the ranks under mpirun). */
bsp_pid_t bsp_nprocs(void);
/* This processor's id, 0 <= bsp_pid() < bsp_nprocs(). */
bsp_pid_t bsp_pid(void);
/* Seconds since bsp_begin on this processor. */
double bsp_time(void);
/* Ends the superstep: delivers every put, get and send requested in it. */
void bsp_sync(void);

/* Ends the whole computation with a printf-style message (from any
 * processor, inside or outside the SPMD section). */
void bsp_bsplib_abort_message(const char *message)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((noreturn))
#endif
    ;
static inline void bsp_vabort(const char *format, va_list ap)
{
    char message[4096];
    vsnprintf(message, sizeof message, format, ap);
    bsp_bsplib_abort_message(message);
}
#if defined(__GNUC__) || defined(__clang__)
static inline void bsp_abort(const char *format, ...)
    __attribute__((format(printf, 1, 2)));
#endif
static inline void bsp_abort(const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    bsp_vabort(format, ap);
    va_end(ap);
}
/* BSPonMPI's name for bsp_vabort. */
static inline void bsp_abort_va(const char *format, va_list ap)
{
    bsp_vabort(format, ap);
}

/* --- DRMA: registered memory, puts and gets ------------------------ */

/* Registers size bytes at addr (collectively, in the same order on every
 * processor; sizes may differ, NULL with 0 is allowed). Effective after
 * the next bsp_sync. */
void bsp_push_reg(const void *addr, bsp_size_t size);
/* Removes the most recent registration of addr (collectively), at the next
 * bsp_sync: the area is still usable in this superstep. */
void bsp_pop_reg(const void *addr);
/* Writes nbytes from src into processor pid's copy of the area registered
 * locally at dst, offset bytes in; src is copied now, the write lands at
 * the next bsp_sync, after that sync's gets. */
void bsp_put(bsp_pid_t pid, const void *src, void *dst, bsp_size_t offset,
             bsp_size_t nbytes);
/* As bsp_put (the standard lets the copy be taken at the call). */
void bsp_hpput(bsp_pid_t pid, const void *src, void *dst, bsp_size_t offset,
               bsp_size_t nbytes);
/* Reads nbytes of processor pid's copy of the area registered locally at
 * src, offset bytes in, into dst, during the next bsp_sync: the data as it
 * was before that sync's puts, written before them. */
void bsp_get(bsp_pid_t pid, const void *src, bsp_size_t offset, void *dst,
             bsp_size_t nbytes);
/* As bsp_get. */
void bsp_hpget(bsp_pid_t pid, const void *src, bsp_size_t offset, void *dst,
               bsp_size_t nbytes);

/* --- BSMP: messages ------------------------------------------------ */

/* Sets the tag size (bytes) of messages sent after the next bsp_sync,
 * collectively; returns the previous setting in *tag_nbytes. */
void bsp_set_tagsize(bsp_size_t *tag_nbytes);
/* Sends a message (a tag of the current tag size, and a payload) to pid,
 * received after the next bsp_sync. */
void bsp_send(bsp_pid_t pid, const void *tag, const void *payload,
              bsp_size_t payload_nbytes);
/* The messages left in the queue, and their payload bytes. */
void bsp_qsize(bsp_nprocs_t *nmessages, bsp_size_t *accum_nbytes);
/* The tag of the first message, and its payload's length in *status
 * (-1 when the queue is empty). */
void bsp_get_tag(bsp_size_t *status, void *tag);
/* Copies at most reception_nbytes of the first message's payload to
 * payload, and removes the message. */
void bsp_move(void *payload, bsp_size_t reception_nbytes);
/* Points *tag_ptr and *payload_ptr at the first message's tag and payload
 * (valid until the next bsp_sync), removes it, and returns the payload's
 * length (-1 when the queue is empty). */
bsp_size_t bsp_hpmove(void **tag_ptr, void **payload_ptr);

#ifdef __cplusplus
}
#endif

#endif /* BSP_BSPLIB_H */
