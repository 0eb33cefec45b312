/* mpi_check.h - failure reporting for the MPI test programs of tests/mpi.
 *
 * The programs are written as an outside user would write them, from the MPI
 * standard alone.  A failed check prints the rank, the place and what differed,
 * then aborts the whole job with exit code 1, so mpirun (and ctest) fail. */
#ifndef VIASTACK_TESTS_MPI_CHECK_H
#define VIASTACK_TESTS_MPI_CHECK_H

#include <mpi.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

static void check_fail(const char *file, int line, const char *fmt, ...) {
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "FAIL [rank %d] %s:%d: ", rank, file, line);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1); /* not reached: MPI_Abort does not return */
}

/* A condition that must hold; the message says what was expected. */
#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) check_fail(__FILE__, __LINE__, __VA_ARGS__);                                                      \
    } while (0)

/* An MPI call that must succeed (the programs set MPI_ERRORS_RETURN). */
#define MPI_OK(call)                                                                                                   \
    do {                                                                                                               \
        int rc_ = (call);                                                                                              \
        if (rc_ != MPI_SUCCESS) {                                                                                      \
            char msg_[MPI_MAX_ERROR_STRING];                                                                           \
            int len_ = 0;                                                                                              \
            MPI_Error_string(rc_, msg_, &len_);                                                                        \
            check_fail(__FILE__, __LINE__, "%s returned %d: %s", #call, rc_, msg_);                                    \
        }                                                                                                              \
    } while (0)

/* MPI_Init, errors returned (not fatal) so MPI_OK can name the failed call. */
static void check_init(int *argc, char ***argv, int *rank, int *size) {
    MPI_Init(argc, argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
}

/* The byte a sender puts at offset i of a message: depends on who sent it,
 * which message it is and where the byte is, so a misplaced, swapped or
 * stale byte shows. */
static inline unsigned char pattern_byte(int src, int seq, size_t i) {
    return (unsigned char)(src * 131u + (unsigned)seq * 29u + i * 7u + (i >> 9));
}

static inline void pattern_fill(unsigned char *buf, size_t n, int src, int seq) {
    for (size_t i = 0; i < n; i++) buf[i] = pattern_byte(src, seq, i);
}

/* Checks a received message, naming the first wrong byte and the caller. */
#define pattern_check(buf, n, src, seq, what) pattern_check_at(__FILE__, __LINE__, buf, n, src, seq, what)

static inline void pattern_check_at(const char *file, int line, const unsigned char *buf, size_t n, int src, int seq,
                                    const char *what) {
    for (size_t i = 0; i < n; i++) {
        if (buf[i] != pattern_byte(src, seq, i)) {
            check_fail(file, line,
                       "%s: %zu-byte message from rank %d (seq %d): byte %zu is "
                       "0x%02x, expected 0x%02x",
                       what, n, src, seq, i, buf[i], pattern_byte(src, seq, i));
        }
    }
}

/* Rank 0 says the program passed (after everyone got there). */
static inline void check_done(const char *prog, int rank, int size) {
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) printf("%s: %d ranks: all checks passed\n", prog, size);
    MPI_Finalize();
}

#endif
