/* ofi_check.h - the libfabric test programs' failure reports: FAIL prints the
 * rank (a `rank` variable of the including program), file and line, and
 * exits 1; CHECK fails a call returning a negative fi_errno; EXPECT_RC fails
 * a call that does not return exactly `want`. */
#ifndef VIASTACK_TESTS_OFI_CHECK_H
#define VIASTACK_TESTS_OFI_CHECK_H

#include <rdma/fi_errno.h>

#include <stdio.h>
#include <stdlib.h>

#define FAIL(...)                                                                                                      \
    do {                                                                                                               \
        fprintf(stderr, "[%d] FAIL %s:%d: ", rank, __FILE__, __LINE__);                                                \
        fprintf(stderr, __VA_ARGS__);                                                                                  \
        fputc('\n', stderr);                                                                                           \
        exit(1);                                                                                                       \
    } while (0)
#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        long rc_ = (long)(call);                                                                                       \
        if (rc_ < 0) FAIL("%s = %ld (%s)", #call, rc_, fi_strerror((int)-rc_));                                        \
    } while (0)
#define EXPECT_RC(call, want)                                                                                          \
    do {                                                                                                               \
        long rc_ = (long)(call);                                                                                       \
        if (rc_ != (want)) FAIL("%s = %ld (%s), expected %ld", #call, rc_, fi_strerror((int)-rc_), (long)(want));      \
    } while (0)

#endif
