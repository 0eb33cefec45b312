/* fm_stream.c - a Fast Messages program written against the installed fm.h
 * only (the package checks build it with pkg-config and with find_package,
 * cmake/package-tests/run.cmake).  Run on 2 or more nodes:
 *
 *   vipl-run -n 2 ./fm_stream
 *
 * Every node sends node (me+1)%n one FM 2.x message of three pieces (a
 * header, 128 KB of a pattern, a trailer); the receiving handler reads it back
 * in pieces of other sizes (FM_receive suspends it until they arrive; the
 * large one may be RDMA-written into place), checks every byte and answers
 * with an FM 1.x FM_send_4.  Prints "fm_stream: node R verified N bytes from
 * node S" and exits 0 only if every check held. */
#include <fm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAYLOAD (128u * 1024u)
#define HANDLER_STREAM 1
#define HANDLER_ACK 2

static unsigned char out[PAYLOAD], in[PAYLOAD];
static volatile int g_received, g_acked;
static int g_bad;

static unsigned char pattern(unsigned sender, unsigned i) { return (unsigned char)(sender * 31u + i * 7u + (i >> 9)); }

static void ack(void *buf, unsigned size, unsigned sender) {
    int w[4];
    (void)sender;
    memcpy(w, buf, sizeof w);
    if (size != 16 || w[0] != (int)FM_nodeid() || w[1] != (int)PAYLOAD) g_bad++;
    g_acked = 1;
}

static int stream(FM_stream *s, unsigned sender) {
    unsigned hdr[2], trailer;
    /* the header in two pieces of 4 bytes where it was sent as one of 8 */
    if (FM_receive(&hdr[0], s, 4) != FM_OK || FM_receive(&hdr[1], s, 4) != FM_OK) g_bad++;
    if (hdr[0] != sender || hdr[1] != PAYLOAD) g_bad++;
    /* the payload in one piece where it was sent in two (a short one, then the rest) */
    if (FM_receive(in, s, PAYLOAD) != FM_OK) g_bad++;
    if (FM_receive(&trailer, s, sizeof trailer) != FM_OK || trailer != 0xfeedu) g_bad++;
    for (unsigned i = 0; i < PAYLOAD; i++)
        if (in[i] != pattern(sender, i)) {
            fprintf(stderr, "fm_stream: byte %u from node %u is %u, want %u\n", i, sender, in[i], pattern(sender, i));
            g_bad++;
            break;
        }
    if (FM_send_4(sender, ack, (int)sender, (int)PAYLOAD, 0, 0) != FM_OK) g_bad++;
    printf("fm_stream: node %u verified %u bytes from node %u\n", FM_nodeid(), (unsigned)(8 + PAYLOAD + 4), sender);
    g_received = 1;
    return FM_CONTINUE;
}

int main(void) {
    FM_set_handler(HANDLER_STREAM, stream);
    FM_set_buffer_handler(HANDLER_ACK, ack);
    if (FM_initialize() != FM_OK) {
        fprintf(stderr, "fm_stream: FM_initialize: %s\n", FM_error_name(FM_last_error()));
        return 1;
    }
    unsigned me = FM_nodeid(), n = FM_numnodes(), to = (me + 1) % n;
    for (unsigned i = 0; i < PAYLOAD; i++) out[i] = pattern(me, i);
    unsigned hdr[2] = {me, PAYLOAD}, trailer = 0xfeedu;
    FM_stream *s = FM_begin_message(to, (unsigned)(sizeof hdr + PAYLOAD + sizeof trailer), stream);
    if (!s || FM_send_piece(s, hdr, sizeof hdr) != FM_OK || FM_send_piece(s, out, 100) != FM_OK ||
        FM_send_piece(s, out + 100, PAYLOAD - 100) != FM_OK || FM_send_piece(s, &trailer, sizeof trailer) != FM_OK ||
        FM_end_message(s) != FM_OK) {
        fprintf(stderr, "fm_stream: send to node %u: %s\n", to, FM_error_name(FM_last_error()));
        return 1;
    }
    while (!g_received || !g_acked)
        if (FM_extract(FM_EXTRACT_ALL) < 0) {
            fprintf(stderr, "fm_stream: FM_extract: %s\n", FM_error_name(FM_last_error()));
            return 1;
        }
    if (FM_finalize() != FM_OK) g_bad++;
    return g_bad ? 1 : 0;
}
