/* mpi_p2p - point-to-point: blocking and nonblocking send/receive, wildcards
 * (MPI_ANY_SOURCE, MPI_ANY_TAG) and the non-overtaking rule, probes, Sendrecv,
 * messages from 0 B to 16 MiB at odd sizes and unaligned addresses, and many
 * requests outstanding at once.  Any rank count >= 2. */
#include "mpi_check.h"

#include <stdint.h>
#include <string.h>

static int rank, size;

/* Sizes on both sides of every eager/rendezvous threshold a transport may use
 * (powers of two, one either side), odd sizes, up to 16 MiB. */
static const size_t sizes[] = {
    0,     1,     2,      3,      7,      8,      63,     64,      65,      255,     1000,    1023,    1024,    1025,
    4095,  4096,  4097,   8191,   8192,   8193,   12289,  16383,   16384,   16385,   32767,   32768,   32769,   65535,
    65536, 65537, 131071, 131072, 131073, 262147, 524288, 1048575, 1048576, 1048579, 4194309, 8388608, 16777216};
enum { NSIZES = sizeof sizes / sizeof sizes[0] };

/* A buffer at an address `misalign` bytes past a 64-byte boundary, with guard
 * bytes after it that no receive may touch. */
typedef struct {
    unsigned char *base, *p;
    size_t n;
} buf_t;
enum { GUARD = 64, GUARD_BYTE = 0xA5 };

static buf_t buf_make(size_t n, size_t misalign) {
    buf_t b;
    b.base = malloc(n + 128 + GUARD);
    CHECK(b.base != NULL && misalign < 64, "cannot allocate %zu bytes", n);
    b.p = (unsigned char *)(((uintptr_t)b.base + 63) & ~(uintptr_t)63) + misalign;
    b.n = n;
    memset(b.p, 0, n);
    memset(b.p + n, GUARD_BYTE, GUARD);
    return b;
}

static void buf_check_guard(const buf_t *b, const char *what) {
    for (size_t i = 0; i < GUARD; i++)
        CHECK(b->p[b->n + i] == GUARD_BYTE, "%s: receive wrote past the end of a %zu-byte buffer (guard byte %zu)",
              what, b->n, i);
}

/* Pairs (0,1), (2,3), ... exchange every size with blocking calls: the even
 * rank sends first, the odd one receives first.  An odd last rank sits out. */
static void test_blocking(void) {
    int partner = rank ^ 1;
    if (partner >= size) return;
    for (int k = 0; k < NSIZES; k++) {
        size_t n = sizes[k];
        buf_t s = buf_make(n, (size_t)k % 7), r = buf_make(n, (size_t)(k * 3 + 1) % 8);
        pattern_fill(s.p, n, rank, k);
        MPI_Status st;
        if (rank % 2 == 0) {
            MPI_OK(MPI_Send(s.p, (int)n, MPI_BYTE, partner, k, MPI_COMM_WORLD));
            MPI_OK(MPI_Recv(r.p, (int)n, MPI_BYTE, partner, k, MPI_COMM_WORLD, &st));
        } else {
            MPI_OK(MPI_Recv(r.p, (int)n, MPI_BYTE, partner, k, MPI_COMM_WORLD, &st));
            MPI_OK(MPI_Send(s.p, (int)n, MPI_BYTE, partner, k, MPI_COMM_WORLD));
        }
        int count;
        MPI_OK(MPI_Get_count(&st, MPI_BYTE, &count));
        CHECK(count == (int)n && st.MPI_SOURCE == partner && st.MPI_TAG == k,
              "blocking: status says %d bytes from %d tag %d, expected %zu from %d tag %d", count, st.MPI_SOURCE,
              st.MPI_TAG, n, partner, k);
        pattern_check(r.p, n, partner, k, "blocking");
        buf_check_guard(&r, "blocking");
        free(s.base);
        free(r.base);
    }
}

/* A receive buffer larger than the message: the count is the message's, the
 * bytes after it are untouched.  Synchronous send (MPI_Ssend) included. */
static void test_short_message(void) {
    int partner = rank ^ 1;
    if (partner >= size) return;
    for (int k = 0; k < NSIZES; k += 4) {
        size_t n = sizes[k];
        buf_t s = buf_make(n, 3), r = buf_make(n + 1000, 5);
        pattern_fill(s.p, n, rank, k);
        MPI_Status st;
        MPI_Request req;
        MPI_OK(MPI_Irecv(r.p, (int)n + 1000, MPI_BYTE, partner, 7, MPI_COMM_WORLD, &req));
        MPI_OK(MPI_Ssend(s.p, (int)n, MPI_BYTE, partner, 7, MPI_COMM_WORLD));
        MPI_OK(MPI_Wait(&req, &st));
        int count;
        MPI_OK(MPI_Get_count(&st, MPI_BYTE, &count));
        CHECK(count == (int)n, "short message: count %d, expected %zu", count, n);
        pattern_check(r.p, n, partner, k, "short message");
        for (size_t i = n; i < n + 1000; i++)
            CHECK(r.p[i] == 0, "short message: byte %zu past a %zu-byte message was written", i, n);
        free(s.base);
        free(r.base);
    }
}

/* Every rank sends every other rank NMSG messages of mixed sizes at once,
 * all receives posted first in reverse tag order; then Waitall. */
static void test_nonblocking_all_pairs(void) {
    enum { NMSG = 48 };
    int npeer = size - 1, nreq = 2 * npeer * NMSG;
    MPI_Request *req = malloc(sizeof *req * (size_t)nreq);
    MPI_Status *st = malloc(sizeof *st * (size_t)nreq);
    unsigned char **sb = calloc((size_t)nreq, sizeof *sb), **rb = calloc((size_t)nreq, sizeof *rb);
    CHECK(req && st && sb && rb, "out of memory");
    int q = 0;
    for (int p = 0; p < size; p++) {
        if (p == rank) continue;
        for (int m = NMSG - 1; m >= 0; m--) {
            size_t n = sizes[(m * 5 + p) % (NSIZES - 6)];
            rb[q] = malloc(n + 1);
            MPI_OK(MPI_Irecv(rb[q] + 1, (int)n, MPI_BYTE, p, m, MPI_COMM_WORLD, &req[q]));
            q++;
        }
    }
    for (int p = 0; p < size; p++) {
        if (p == rank) continue;
        for (int m = 0; m < NMSG; m++) {
            size_t n = sizes[(m * 5 + rank) % (NSIZES - 6)];
            sb[q] = malloc(n + 1);
            pattern_fill(sb[q] + 1, n, rank, m);
            MPI_OK(MPI_Isend(sb[q] + 1, (int)n, MPI_BYTE, p, m, MPI_COMM_WORLD, &req[q]));
            q++;
        }
    }
    MPI_OK(MPI_Waitall(nreq, req, st));
    q = 0;
    for (int p = 0; p < size; p++) {
        if (p == rank) continue;
        for (int m = NMSG - 1; m >= 0; m--, q++) {
            size_t n = sizes[(m * 5 + p) % (NSIZES - 6)];
            int count;
            MPI_OK(MPI_Get_count(&st[q], MPI_BYTE, &count));
            CHECK(count == (int)n && st[q].MPI_SOURCE == p && st[q].MPI_TAG == m,
                  "all pairs: %d bytes from %d tag %d, expected %zu from %d tag %d", count, st[q].MPI_SOURCE,
                  st[q].MPI_TAG, n, p, m);
            pattern_check(rb[q] + 1, n, p, m, "all pairs");
        }
    }
    for (int i = 0; i < nreq; i++) {
        free(sb[i]);
        free(rb[i]);
    }
    free(sb);
    free(rb);
    free(req);
    free(st);
}

/* Rank 0 receives everything the others send with MPI_ANY_SOURCE and
 * MPI_ANY_TAG.  Messages from one sender must arrive in the order sent
 * (non-overtaking), whatever their tags and sizes. */
static void test_wildcards(void) {
    enum { NMSG = 200 };
    if (rank != 0) {
        for (int m = 0; m < NMSG; m++) {
            size_t n = 8 + (size_t)((m * 37 + rank * 11) % 3) * (m % 5 == 0 ? 40000 : 100);
            unsigned char *b = malloc(n);
            pattern_fill(b + sizeof m, n - sizeof m, rank, m);
            memcpy(b, &m, sizeof m);
            MPI_OK(MPI_Send(b, (int)n, MPI_BYTE, 0, m % 7, MPI_COMM_WORLD));
            free(b);
        }
        return;
    }
    int *next = calloc((size_t)size, sizeof *next);
    unsigned char *b = malloc(100000);
    for (int got = 0; got < NMSG * (size - 1); got++) {
        MPI_Status st;
        MPI_OK(MPI_Recv(b, 100000, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        int src = st.MPI_SOURCE, m, count;
        CHECK(src > 0 && src < size, "wildcards: source %d out of range", src);
        memcpy(&m, b, sizeof m);
        CHECK(m == next[src], "wildcards: from rank %d got message %d, expected %d (overtaken)", src, m, next[src]);
        CHECK(st.MPI_TAG == m % 7, "wildcards: tag %d, expected %d", st.MPI_TAG, m % 7);
        size_t n = 8 + (size_t)((m * 37 + src * 11) % 3) * (m % 5 == 0 ? 40000 : 100);
        MPI_OK(MPI_Get_count(&st, MPI_BYTE, &count));
        CHECK(count == (int)n, "wildcards: %d bytes, expected %zu", count, n);
        pattern_check(b + sizeof m, n - sizeof m, src, m, "wildcards");
        next[src]++;
    }
    free(b);
    free(next);
}

/* The receiver learns size, source and tag from MPI_Probe / MPI_Iprobe /
 * MPI_Mprobe before receiving; a probe does not consume the message. */
static void test_probe(void) {
    enum { NMSG = 30 };
    int partner = rank ^ 1;
    if (partner >= size) return;
    if (rank % 2 == 0) {
        for (int m = 0; m < NMSG; m++) {
            size_t n = sizes[(m * 7) % NSIZES] % 3000000;
            unsigned char *b = malloc(n + 1);
            pattern_fill(b, n, rank, m);
            MPI_OK(MPI_Send(b, (int)n, MPI_BYTE, partner, 100 + m, MPI_COMM_WORLD));
            free(b);
        }
        return;
    }
    for (int m = 0; m < NMSG; m++) {
        MPI_Status st;
        if (m % 3 == 0) {
            MPI_OK(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        } else if (m % 3 == 1) {
            int flag = 0;
            while (!flag) MPI_OK(MPI_Iprobe(partner, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
            /* A second probe sees the same message. */
            MPI_Status st2;
            MPI_OK(MPI_Probe(partner, st.MPI_TAG, MPI_COMM_WORLD, &st2));
            CHECK(st2.MPI_TAG == st.MPI_TAG, "probe: second probe saw tag %d, first %d", st2.MPI_TAG, st.MPI_TAG);
        }
        int count;
        size_t n = sizes[(m * 7) % NSIZES] % 3000000;
        unsigned char *b = malloc(n + 1);
        if (m % 3 == 2) {
            MPI_Message msg;
            MPI_OK(MPI_Mprobe(partner, MPI_ANY_TAG, MPI_COMM_WORLD, &msg, &st));
            MPI_OK(MPI_Get_count(&st, MPI_BYTE, &count));
            CHECK(count == (int)n, "mprobe: count %d, expected %zu", count, n);
            MPI_OK(MPI_Mrecv(b, count, MPI_BYTE, &msg, &st));
        } else {
            MPI_OK(MPI_Get_count(&st, MPI_BYTE, &count));
            CHECK(count == (int)n && st.MPI_SOURCE == partner && st.MPI_TAG == 100 + m,
                  "probe: %d bytes from %d tag %d, expected %zu from %d tag %d", count, st.MPI_SOURCE, st.MPI_TAG, n,
                  partner, 100 + m);
            MPI_OK(MPI_Recv(b, count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st));
        }
        CHECK(st.MPI_TAG == 100 + m, "probe: received tag %d, expected %d", st.MPI_TAG, 100 + m);
        pattern_check(b, n, partner, m, "probe");
        free(b);
    }
}

/* A ring shift with MPI_Sendrecv and MPI_Sendrecv_replace (every rank sends
 * and receives at once, no deadlock whatever the size). */
static void test_sendrecv(void) {
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int k = 0; k < NSIZES; k += 2) {
        size_t n = sizes[k];
        buf_t s = buf_make(n, 1), r = buf_make(n, 2);
        pattern_fill(s.p, n, rank, k);
        MPI_Status st;
        MPI_OK(MPI_Sendrecv(s.p, (int)n, MPI_BYTE, right, k, r.p, (int)n, MPI_BYTE, left, k, MPI_COMM_WORLD, &st));
        CHECK(st.MPI_SOURCE == left, "sendrecv: source %d, expected %d", st.MPI_SOURCE, left);
        pattern_check(r.p, n, left, k, "sendrecv");
        buf_check_guard(&r, "sendrecv");
        MPI_OK(MPI_Sendrecv_replace(s.p, (int)n, MPI_BYTE, left, k + 1, right, k + 1, MPI_COMM_WORLD, &st));
        pattern_check(s.p, n, right, k, "sendrecv_replace");
        free(s.base);
        free(r.base);
    }
}

/* 1000 small messages each way between partners, completed with
 * MPI_Testsome and MPI_Waitany in whatever order they finish. */
static void test_many_outstanding(void) {
    enum { N = 1000, LEN = 24 };
    int partner = rank ^ 1;
    if (partner >= size) return;
    static unsigned char sb[N][LEN], rb[N][LEN];
    MPI_Request req[2 * N];
    for (int i = 0; i < N; i++) {
        pattern_fill(sb[i], LEN, rank, i);
        MPI_OK(MPI_Irecv(rb[i], LEN, MPI_BYTE, partner, i, MPI_COMM_WORLD, &req[i]));
    }
    for (int i = 0; i < N; i++) MPI_OK(MPI_Isend(sb[i], LEN, MPI_BYTE, partner, i, MPI_COMM_WORLD, &req[N + i]));
    int done = 0, idx[2 * N];
    MPI_Status st[2 * N];
    while (done < N) {
        int outcount;
        MPI_OK(MPI_Testsome(2 * N, req, &outcount, idx, st));
        CHECK(outcount != MPI_UNDEFINED, "testsome: no active request left after %d", done);
        done += outcount;
    }
    while (done < 2 * N) {
        int i;
        MPI_OK(MPI_Waitany(2 * N, req, &i, st));
        CHECK(i != MPI_UNDEFINED, "waitany: no active request left after %d", done);
        done++;
    }
    for (int i = 0; i < N; i++) pattern_check(rb[i], LEN, partner, i, "many outstanding");
}

int main(int argc, char **argv) {
    check_init(&argc, &argv, &rank, &size);
    CHECK(size >= 2, "needs at least 2 ranks, got %d", size);
    test_blocking();
    test_short_message();
    test_nonblocking_all_pairs();
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    test_wildcards();
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    test_probe();
    test_sendrecv();
    test_many_outstanding();
    check_done("mpi_p2p", rank, size);
    return 0;
}
