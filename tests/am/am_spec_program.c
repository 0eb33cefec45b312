/* am_spec_program.c - an AM-2 program written from the specification alone
 * (Mainwaring & Culler, "Active Message Applications Programming Interface
 * and Communication Subsystem Organization"), with the calling conventions of
 * the Berkeley AMUDP/AMMPI headers.  It is compiled unchanged as C (gcc,
 * clang) and as C++ (g++, clang++) with -Wall -Wextra -Werror and run on 1, 2,
 * 4 and 8 processes under vipl-run (tests/am/CMakeLists.txt).
 *
 * Every rank sends to its right neighbour, for every argument count 0..16:
 * a short request (answered by a short reply), a medium request (answered by
 * a medium reply echoing the data), a long request and an asynchronous long
 * request (each answered by a long reply into the requester's segment).  All
 * handlers check arguments, payload, placement, tag, source and destination.
 * The segment is set after start-up and the job synchronises by a barrier
 * before the first long message, as an AM-2 program may.  Then each rank
 * sleeps in AM_WaitSema until its left neighbour's message wakes it.
 *
 * A clean run prints one line from rank 0 and nothing else (the test runs
 * with $VIASTACK_AM_VERBOSE=1 and fails on any library message). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "am.h"
#include "am_spmd.h"

/* handler table layout: base + N for the N-argument handler */
#define H_SREQ 1
#define H_SREP 20
#define H_MREQ 40
#define H_MREP 60
#define H_LREQ 80
#define H_LREP 100
#define H_WAKE 130

#define SEGLEN (8u << 20)
/* One long message per argument count, n * 1000 + 3 bytes (< STRIDE), the
 * 16-argument one AM_MaxLong() bytes at the end of its half. */
#define STRIDE (70u * 1024u)

static uint8_t *seg;
static ep_t the_ep;
static eb_t the_eb;
static int me, np, left, right;
static int errors;
static int replies;  /* replies received by this rank */
static int requests; /* requests served by this rank */
static int wakes;
static tag_t job_tag;

static void error(const char *what, int n) {
    fprintf(stderr, "rank %d: %s (%d arguments)\n", me, what, n);
    errors++;
}

/* The value of argument i of an n-argument message sent by rank src. */
static int32_t arg_of(int src, int n, int i) {
    int32_t v = (int32_t)(src * 100000 + n * 100 + i);
    return (i % 2) ? -v : v;
}
static uint8_t byte_of(int src, int n, int kind, size_t i) {
    return (uint8_t)(i * 13u + (size_t)n * 7u + (size_t)src * 29u + (size_t)kind);
}
static void fill(uint8_t *p, size_t len, int src, int n, int kind) {
    size_t i;
    for (i = 0; i < len; i++) p[i] = byte_of(src, n, kind, i);
}
static int same(const void *buf, size_t len, int src, int n, int kind) {
    const uint8_t *p = (const uint8_t *)buf;
    size_t i;
    for (i = 0; i < len; i++)
        if (p[i] != byte_of(src, n, kind, i)) return 0;
    return 1;
}

static size_t medium_size(int n) {
    if (n == 16) return (size_t)AM_MaxMedium();
    if (n == 15) return AM_MaxMedium() > 4097 ? 4097 : (size_t)AM_MaxMedium() - 1;
    return (size_t)n * 61u;
}
static size_t long_size(int n) { return n == 16 ? (size_t)AM_MaxLong() : (size_t)n * 1000u + 3u; }
static uintptr_t request_offset(int n) { return (uintptr_t)n * STRIDE; }
static uintptr_t reply_offset(int n) { return SEGLEN / 2 + (uintptr_t)n * STRIDE; }

/* The rank a token's message came from, by endpoint name. */
static int source_rank(void *token) {
    en_t src, name;
    int r;
    if (AM_GetSourceEndpoint(token, &src) != AM_OK) return -1;
    for (r = 0; r < np; r++)
        if (AM_GetTranslationName(the_ep, r, &name) == AM_OK && memcmp(&name, &src, sizeof src) == 0) return r;
    return -1;
}

/* Checks common to every handler: tag, destination endpoint, arguments. */
static void check_message(void *token, int n, const int32_t *v, int src, int delta) {
    tag_t t = 0;
    ep_t dest = NULL;
    int i;
    if (AM_GetMsgTag(token, &t) != AM_OK || t != job_tag) error("wrong message tag", n);
    if (AM_GetDestEndpoint(token, &dest) != AM_OK || dest != the_ep) error("wrong destination endpoint", n);
    for (i = 0; i < n; i++)
        if (v[i] != arg_of(src, n, i) + delta) error("wrong argument", n);
}

/* ---- the handlers, one per kind and argument count ---------------------------------- */
#define P_0
#define P_1 P_0, int32_t a0
#define P_2 P_1, int32_t a1
#define P_3 P_2, int32_t a2
#define P_4 P_3, int32_t a3
#define P_5 P_4, int32_t a4
#define P_6 P_5, int32_t a5
#define P_7 P_6, int32_t a6
#define P_8 P_7, int32_t a7
#define P_9 P_8, int32_t a8
#define P_10 P_9, int32_t a9
#define P_11 P_10, int32_t a10
#define P_12 P_11, int32_t a11
#define P_13 P_12, int32_t a12
#define P_14 P_13, int32_t a13
#define P_15 P_14, int32_t a14
#define P_16 P_15, int32_t a15
/* the arguments as array elements (trailing comma, so "{ V_n 0 }" is never empty) */
#define V_0
#define V_1 V_0 a0,
#define V_2 V_1 a1,
#define V_3 V_2 a2,
#define V_4 V_3 a3,
#define V_5 V_4 a4,
#define V_6 V_5 a5,
#define V_7 V_6 a6,
#define V_8 V_7 a7,
#define V_9 V_8 a8,
#define V_10 V_9 a9,
#define V_11 V_10 a10,
#define V_12 V_11 a11,
#define V_13 V_12 a12,
#define V_14 V_13 a13,
#define V_15 V_14 a14,
#define V_16 V_15 a15,
/* the arguments plus one, as call arguments */
#define R_0
#define R_1 R_0, a0 + 1
#define R_2 R_1, a1 + 1
#define R_3 R_2, a2 + 1
#define R_4 R_3, a3 + 1
#define R_5 R_4, a4 + 1
#define R_6 R_5, a5 + 1
#define R_7 R_6, a6 + 1
#define R_8 R_7, a7 + 1
#define R_9 R_8, a8 + 1
#define R_10 R_9, a9 + 1
#define R_11 R_10, a10 + 1
#define R_12 R_11, a11 + 1
#define R_13 R_12, a12 + 1
#define R_14 R_13, a13 + 1
#define R_15 R_14, a14 + 1
#define R_16 R_15, a15 + 1

#define HANDLERS(N)                                                                                                    \
    static void sreq##N(void *token P_##N) {                                                                           \
        const int32_t v[N + 1] = {V_##N 0};                                                                            \
        check_message(token, N, v, left, 0);                                                                           \
        requests++;                                                                                                    \
        if (AM_Reply##N(token, H_SREP + N R_##N) != AM_OK) error("AM_Reply failed", N);                                \
    }                                                                                                                  \
    static void srep##N(void *token P_##N) {                                                                           \
        const int32_t v[N + 1] = {V_##N 0};                                                                            \
        check_message(token, N, v, me, 1);                                                                             \
        replies++;                                                                                                     \
    }                                                                                                                  \
    static void mreq##N(void *token, void *buf, size_t nbytes P_##N) {                                                 \
        const int32_t v[N + 1] = {V_##N 0};                                                                            \
        check_message(token, N, v, left, 0);                                                                           \
        if (source_rank(token) != left) error("medium: wrong source endpoint", N);                                     \
        if (nbytes != medium_size(N) || !same(buf, nbytes, left, N, 1)) error("medium data", N);                       \
        requests++;                                                                                                    \
        if (AM_ReplyI##N(token, H_MREP + N, buf, nbytes R_##N) != AM_OK) error("AM_ReplyI failed", N);                 \
    }                                                                                                                  \
    static void mrep##N(void *token, void *buf, size_t nbytes P_##N) {                                                 \
        const int32_t v[N + 1] = {V_##N 0};                                                                            \
        check_message(token, N, v, me, 1);                                                                             \
        if (nbytes != medium_size(N) || !same(buf, nbytes, me, N, 1)) error("medium reply data", N);                   \
        replies++;                                                                                                     \
    }                                                                                                                  \
    static void lreq##N(void *token, void *buf, size_t nbytes P_##N) {                                                 \
        const int32_t v[N + 1] = {V_##N 0};                                                                            \
        check_message(token, N, v, left, 0);                                                                           \
        if (source_rank(token) != left) error("long: wrong source endpoint", N);                                       \
        if ((uint8_t *)buf != seg + request_offset(N)) error("long data misplaced", N);                                \
        if (nbytes != long_size(N) || !same(buf, nbytes, left, N, 2)) error("long data", N);                           \
        requests++;                                                                                                    \
        if (AM_ReplyXfer##N(token, reply_offset(N), H_LREP + N, buf, nbytes R_##N) != AM_OK)                           \
            error("AM_ReplyXfer failed", N);                                                                           \
    }                                                                                                                  \
    static void lrep##N(void *token, void *buf, size_t nbytes P_##N) {                                                 \
        const int32_t v[N + 1] = {V_##N 0};                                                                            \
        check_message(token, N, v, me, 1);                                                                             \
        if ((uint8_t *)buf != seg + reply_offset(N)) error("long reply misplaced", N);                                 \
        if (nbytes != long_size(N) || !same(buf, nbytes, me, N, 2)) error("long reply data", N);                       \
        replies++;                                                                                                     \
    }

HANDLERS(0)
HANDLERS(1)
HANDLERS(2)
HANDLERS(3)
HANDLERS(4)
HANDLERS(5)
HANDLERS(6)
HANDLERS(7)
HANDLERS(8)
HANDLERS(9)
HANDLERS(10)
HANDLERS(11)
HANDLERS(12)
HANDLERS(13)
HANDLERS(14)
HANDLERS(15)
HANDLERS(16)

static void wake(void *token, int32_t code) {
    check_message(token, 1, &code, left, 77 - arg_of(left, 1, 0));
    wakes++;
}

static void returned(int status, op_t opcode, void *token) {
    (void)token;
    fprintf(stderr, "rank %d: message returned: status %d, opcode %d\n", me, status, opcode);
    errors++;
}

#define SET(N)                                                                                                         \
    rc |= AM_SetHandler(the_ep, H_SREQ + N, sreq##N) | AM_SetHandler(the_ep, H_SREP + N, srep##N) |                    \
        AM_SetHandler(the_ep, H_MREQ + N, mreq##N) | AM_SetHandler(the_ep, H_MREP + N, mrep##N) |                      \
        AM_SetHandler(the_ep, H_LREQ + N, lreq##N) | AM_SetHandler(the_ep, H_LREP + N, lrep##N)

/* The sends for one argument count, A = the argument list a(0)..a(N-1). */
#define A_0
#define A_1 A_0, arg_of(me, n, 0)
#define A_2 A_1, arg_of(me, n, 1)
#define A_3 A_2, arg_of(me, n, 2)
#define A_4 A_3, arg_of(me, n, 3)
#define A_5 A_4, arg_of(me, n, 4)
#define A_6 A_5, arg_of(me, n, 5)
#define A_7 A_6, arg_of(me, n, 6)
#define A_8 A_7, arg_of(me, n, 7)
#define A_9 A_8, arg_of(me, n, 8)
#define A_10 A_9, arg_of(me, n, 9)
#define A_11 A_10, arg_of(me, n, 10)
#define A_12 A_11, arg_of(me, n, 11)
#define A_13 A_12, arg_of(me, n, 12)
#define A_14 A_13, arg_of(me, n, 13)
#define A_15 A_14, arg_of(me, n, 14)
#define A_16 A_15, arg_of(me, n, 15)
#define SEND(N)                                                                                                        \
    case N:                                                                                                            \
        if (kind == 0) return AM_Request##N(the_ep, right, H_SREQ + N A_##N);                                          \
        if (kind == 1) return AM_RequestI##N(the_ep, right, H_MREQ + N, src, len A_##N);                               \
        if (kind == 2) return AM_RequestXfer##N(the_ep, right, request_offset(N), H_LREQ + N, src, len A_##N);         \
        return AM_RequestXferAsync##N(the_ep, right, request_offset(N), H_LREQ + N, src, len A_##N);

// One case per SEND: clang-format cannot lay out a list of macro calls stably.
// clang-format off
static int send_one(int kind, int n, void *src, size_t len) {
    switch (n) {
        SEND(0) SEND(1) SEND(2) SEND(3) SEND(4) SEND(5) SEND(6) SEND(7) SEND(8)
        SEND(9) SEND(10) SEND(11) SEND(12) SEND(13) SEND(14) SEND(15) SEND(16)
    }
    return AM_ERR_BAD_ARG;
}
// clang-format on

static void wait_for(int *counter, int value) {
    while (*counter < value) AM_Poll(the_eb);
}

int main(int argc, char **argv) {
    static const char *const kinds[] = {"AM_Request", "AM_RequestI", "AM_RequestXfer", "AM_RequestXferAsync"};
    uint8_t *src;
    void *got_seg = NULL;
    uintptr_t got_len = 0;
    tag_t t = 0;
    int n, kind, rc = AM_OK, mask = -1, sent = 0;

    if (AM_SPMDStartup(&argc, &argv, &the_eb, &the_ep) != AM_OK) return 1;
    me = AM_SPMDMyProc();
    np = AM_SPMDNumProcs();
    left = (me + np - 1) % np;
    right = (me + 1) % np;
    job_tag = AM_SPMDGetTag();
    if (AM_GetTag(the_ep, &t) != AM_OK || t != job_tag) error("AM_GetTag", 0);
    if (AM_GetTranslationTag(the_ep, right, &t) != AM_OK || t != job_tag) error("AM_GetTranslationTag", 0);
    if (AM_MaxShort() < 16 || AM_MaxMedium() < 512 || AM_MaxLong() < 8192) error("AM limits", 0);

    SET(0);
    SET(1);
    SET(2);
    SET(3);
    SET(4);
    SET(5);
    SET(6);
    SET(7);
    SET(8);
    SET(9);
    SET(10);
    SET(11);
    SET(12);
    SET(13);
    SET(14);
    SET(15);
    SET(16);
    rc |= AM_SetHandler(the_ep, H_WAKE, wake);
    rc |= AM_SetHandler(the_ep, 0, returned);
    if (rc != AM_OK) error("AM_SetHandler", 0);

    /* The segment comes after start-up: every peer learns of it only now. */
    seg = (uint8_t *)malloc(SEGLEN);
    src = (uint8_t *)malloc((size_t)AM_MaxLong() > STRIDE ? (size_t)AM_MaxLong() : STRIDE);
    if (!seg || !src) return 1;
    memset(seg, 0, SEGLEN);
    if (AM_SetSeg(the_ep, seg, SEGLEN) != AM_OK) error("AM_SetSeg", 0);
    if (AM_GetSeg(the_ep, &got_seg, &got_len) != AM_OK || got_seg != seg || got_len != SEGLEN)
        error("AM_GetSeg after AM_SetSeg", 0);
    AM_SPMDBarrier();

    for (n = 0; n <= 16; n++)
        for (kind = 0; kind < 4; kind++) {
            size_t len = kind == 0 ? 0 : kind == 1 ? medium_size(n) : long_size(n);
            fill(src, len, me, n, kind == 1 ? 1 : 2);
            do rc = send_one(kind, n, src, len);
            while (kind == 3 && rc == AM_ERR_IN_USE && AM_Poll(the_eb) == AM_OK);
            if (rc != AM_OK) {
                fprintf(stderr, "rank %d: %s%d returned %d\n", me, kinds[kind], n, rc);
                errors++;
                continue;
            }
            /* the reply means the data arrived: src may be refilled */
            wait_for(&replies, ++sent);
        }
    wait_for(&requests, sent);
    AM_SPMDBarrier();

    /* Sleep until the left neighbour's message arrives (AM_NOTEMPTY is one-shot). */
    if (AM_Request1(the_ep, right, H_WAKE, 77) != AM_OK) error("AM_Request1 (wake)", 1);
    while (!wakes) {
        if (AM_SetEventMask(the_eb, AM_NOTEMPTY) != AM_OK || AM_GetEventMask(the_eb, &mask) != AM_OK ||
            mask != AM_NOTEMPTY)
            error("AM_SetEventMask/AM_GetEventMask", 0);
        if (AM_WaitSema(the_eb) != AM_OK) error("AM_WaitSema", 0);
        AM_Poll(the_eb);
    }
    AM_SPMDBarrier();
    if (me == 0)
        printf("am_spec_program: %d processes, %d messages each way per rank, %d errors on rank 0\n", np, sent, errors);
    free(src);
    AM_SPMDExit(errors ? 1 : 0);
    return 0;
}
