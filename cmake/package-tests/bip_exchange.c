/* bip_exchange.c - a BIP program written against the installed bip.h only
 * (the package checks build it with pkg-config and with find_package,
 * cmake/package-tests/run.cmake).  Run on 2 or more ranks:
 *
 *   vipl-run -n 2 ./bip_exchange
 *
 * Ranks 0 and 1 exchange a small message (copied through the receiver's
 * buffers) and a 1 MB one (rendezvous, RDMA write into the posted receive
 * buffer), each receive posted before the send; every byte is checked.
 * Prints "bip_exchange: rank R received S and L bytes from rank P: verified"
 * and exits 0 only if every check held. */
#include <bip.h>
#include <stdio.h>
#include <stdlib.h>

#define SMALL 64
#define LONG (1u << 20)

static int check(const char *what, int rc) {
    if (rc < 0) {
        fprintf(stderr, "bip_exchange: %s: %s\n", what, bip_error_name(rc));
        exit(1);
    }
    return rc;
}

static unsigned char pattern(int rank, size_t i) { return (unsigned char)(rank * 13 + i * 5 + (i >> 11)); }

static size_t exchange(int me, int peer, int tag, size_t len, unsigned char *out, unsigned char *in) {
    size_t got = 0;
    for (size_t i = 0; i < len; i++) out[i] = pattern(me, i);
    check("bip_irecv", bip_irecv(tag, in, len));
    check("bip_send", bip_send(peer, tag, out, len));
    int src = check("bip_rwait", bip_rwait(&got));
    if (src != peer || got != len) {
        fprintf(stderr, "bip_exchange: tag %d: %zu bytes from rank %d, want %zu from rank %d\n", tag, got, src, len,
                peer);
        exit(1);
    }
    for (size_t i = 0; i < len; i++)
        if (in[i] != pattern(peer, i)) {
            fprintf(stderr, "bip_exchange: tag %d: byte %zu is %u, want %u\n", tag, i, in[i], pattern(peer, i));
            exit(1);
        }
    return got;
}

int main(void) {
    check("bip_init", bip_init());
    int me = bip_mynode(), n = bip_numnodes();
    if (n < 2) {
        fprintf(stderr, "bip_exchange: needs 2 ranks (vipl-run -n 2)\n");
        return 1;
    }
    if (me < 2) {
        unsigned char *out = malloc(LONG), *in = malloc(LONG);
        if (!out || !in) return 1;
        int peer = 1 - me;
        if (bip_eager_max(peer) >= (long)LONG) {
            fprintf(stderr, "bip_exchange: %u bytes would not take the rendezvous path\n", LONG);
            return 1;
        }
        size_t s = exchange(me, peer, 3, SMALL, out, in);
        size_t l = exchange(me, peer, 7, LONG, out, in);
        printf("bip_exchange: rank %d received %zu and %zu bytes from rank %d: verified\n", me, s, l, peer);
        free(out);
        free(in);
    }
    check("bip_finalize", bip_finalize());
    return 0;
}
