/*
 * outside_bip_errors.c - the errors bip.h documents, called as a user who
 * read only the header and [BIP] would: before bip_init, bad ranks, bad tags,
 * NULL buffers, sends over BIP_MAX_MESSAGE, the one-pending rule, tests and
 * waits with nothing pending, truncation of a small and of a long message
 * (both sides told), bip_finalize with a receive pending.  Each must return
 * its code, never crash or hang, and BIP must work normally afterwards (a
 * zero-length message and a last exchange are checked).
 *
 * Run: vipl-run -n 2|4 outside_bip_errors
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outside_bip.h"

int main(void) {
    char buf[64] = "hello";
    size_t len = 0;

    EXPECT(bip_mynode(), -1);
    EXPECT(bip_numnodes(), 0);
    EXPECT(bip_send(0, 0, buf, 4), BIP_ERR_NOT_INIT);
    EXPECT(bip_recv(0, buf, 4, &len), BIP_ERR_NOT_INIT);
    EXPECT(bip_isend(0, 0, buf, 4), BIP_ERR_NOT_INIT);
    EXPECT(bip_irecv(0, buf, 4), BIP_ERR_NOT_INIT);
    EXPECT(bip_stest(), BIP_ERR_NOT_INIT);
    EXPECT(bip_rwait(&len), BIP_ERR_NOT_INIT);

    outside_bip_start();
    int rc;
    int peer = (me + 1) % n;

    /* Bad ranks and tags, NULL buffers, too long: nothing starts. */
    EXPECT(bip_send(n, 0, buf, 4), BIP_ERR_BAD_DEST);
    EXPECT(bip_send(-1, 0, buf, 4), BIP_ERR_BAD_DEST);
    EXPECT(bip_isend(n + 7, 0, buf, 4), BIP_ERR_BAD_DEST);
    if (bip_eager_max(n) >= 0 || bip_eager_max(-1) >= 0) FAIL("bip_eager_max of a bad rank");
    EXPECT(bip_send(peer, BIP_NTAGS, buf, 4), BIP_ERR_BAD_TAG);
    EXPECT(bip_send(peer, -1, buf, 4), BIP_ERR_BAD_TAG);
    EXPECT(bip_recv(BIP_NTAGS, buf, 4, &len), BIP_ERR_BAD_TAG);
    EXPECT(bip_irecv(-5, buf, 4), BIP_ERR_BAD_TAG);
    EXPECT(bip_send(peer, 0, NULL, 4), BIP_ERR_NULL_BUF);
    EXPECT(bip_recv(0, NULL, 4, &len), BIP_ERR_NULL_BUF);
    EXPECT(bip_irecv(0, NULL, 4), BIP_ERR_NULL_BUF);
    EXPECT(bip_send(peer, 0, buf, (size_t)BIP_MAX_MESSAGE + 1), BIP_ERR_TOO_LONG);
    EXPECT(bip_isend(peer, 0, buf, (size_t)-1), BIP_ERR_TOO_LONG);

    /* Nothing pending. */
    EXPECT(bip_stest(), BIP_ERR_NO_PENDING);
    EXPECT(bip_swait(), BIP_ERR_NO_PENDING);
    EXPECT(bip_rtest(NULL, NULL), BIP_ERR_NO_PENDING);
    EXPECT(bip_rwait(&len), BIP_ERR_NO_PENDING);

    /* One pending receive: a second one is refused and changes nothing; a
     * finalize meanwhile is a state error. */
    char got[64];
    EXPECT(bip_irecv(20, got, sizeof got), BIP_OK);
    EXPECT(bip_irecv(21, buf, 4), BIP_ERR_PENDING);
    EXPECT(bip_recv(20, buf, 4, &len), BIP_ERR_PENDING);
    EXPECT(bip_finalize(), BIP_ERR_STATE);

    int left = (me + n - 1) % n;
    {
        /* Every rank sends its right neighbour: a zero-length message on tag
         * 20 (the receive above takes it), then the truncation cases. */
        EXPECT(bip_send(peer, 20, NULL, 0), BIP_OK);
        int src = bip_rwait(&len);
        if (src != left || len != 0) FAIL("zero-length: from %d len %zu", src, len);

        /* Small message into a smaller receive: first maxlen bytes, TRUNCATED, real length. */
        EXPECT(bip_send(peer, 22, "0123456789abcdef", 16), BIP_OK);
        memset(got, 0, sizeof got);
        len = 0;
        EXPECT(bip_recv(22, got, 10, &len), BIP_ERR_TRUNCATED);
        if (len != 16 || memcmp(got, "0123456789", 10) != 0 || got[10] != 0)
            FAIL("small truncation: len %zu, bytes %.16s", len, got);

        /* Long message into a smaller receive: refused before any data moves,
         * the sender's send fails with TRUNCATED as well.  The receive is
         * posted first so that the blocking long sends cannot wait for each other. */
        long eager = bip_eager_max(peer);
        size_t L = (size_t)eager + 100;
        char *big = malloc(L), *small = malloc(L);
        if (!big || !small) FAIL("malloc");
        memset(big, 'B', L);
        memset(small, 0, L);
        EXPECT(bip_irecv(23, small, L - 50), BIP_OK);
        EXPECT(bip_send(peer, 23, big, L), BIP_ERR_TRUNCATED);
        len = 0;
        rc = bip_rwait(&len);
        if (rc != BIP_ERR_TRUNCATED || len != L) FAIL("long truncation: rwait %d len %zu", rc, len);

        /* Still working: the same long message, received in full. */
        EXPECT(bip_irecv(23, small, L), BIP_OK);
        EXPECT(bip_isend(peer, 23, big, L), BIP_OK);
        EXPECT(bip_isend(peer, 23, big, L), BIP_ERR_PENDING);
        if (bip_swait() < 0) FAIL("bip_swait");
        src = bip_rwait(&len);
        if (src != left || len != L || memcmp(small, big, L) != 0) FAIL("long after truncation");
        free(big);
        free(small);
    }

    EXPECT(bip_finalize(), BIP_OK);
    if (me == 0) printf("outside_bip_errors: ok\n");
    return 0;
}
