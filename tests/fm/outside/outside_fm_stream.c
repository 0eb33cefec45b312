/*
 * outside_fm_stream.c - an FM 2.x program written from [FM2] and fm.h alone:
 * every node streams messages to node 0 (many senders, one receiver), each
 * composed of pieces of odd sizes (gather) and decomposed by the handler with
 * FM_receive into several buffers of other sizes (scatter).  Node 0's handler
 * answers each message from inside the handler: a one-packet FM 1.x FM_send_4
 * for short messages, an FM 2.x stream for long ones.  Senders wait for the
 * answers with FM_extract and a small byte budget.  Bodies span one packet,
 * several packets and (at 70001 bytes) enough for the handler's buffer to be
 * written by RDMA.  Every byte and the per-sender order are checked.
 *
 * Run: vipl-run -n 2|4 outside_fm_stream
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outside_fm.h"

#define NMSG 12
static const unsigned body_len[NMSG] = {0, 1, 7, 2031, 2032, 2033, 4099, 9999, 70001, 3, 16411, 100};

static unsigned char pattern(unsigned sender, unsigned seq, unsigned i) {
    return (unsigned char)(sender * 31u + seq * 7u + i * 13u + (i >> 8));
}

/* Message: header {seq (4), body length (4), a 3-byte marker}, body, a
 * 5-byte trailer "END!\0". */
struct hdr {
    uint32_t seq;
    uint32_t len;
};

/* Receiver state (node 0). */
static unsigned next_seq[64];
static unsigned received;

/* Sender state. */
static unsigned acks;
static unsigned long long ack_sum;

static void ack_handler(void *buf, unsigned size, unsigned sender);
static int long_ack_handler(FM_stream *s, unsigned sender);

static int data_handler(FM_stream *s, unsigned sender) {
    struct hdr h;
    char marker[3];
    char trailer[5];
    /* Header into two buffers: struct, then the 3 marker bytes. */
    if (FM_receive(&h, s, sizeof h) != FM_OK) FAIL("FM_receive header");
    if (FM_receive(marker, s, 3) != FM_OK) FAIL("FM_receive marker");
    if (memcmp(marker, "ABC", 3) != 0) FAIL("marker from %u", sender);
    if (h.seq != next_seq[sender]) FAIL("from %u: seq %u, expected %u", sender, h.seq, next_seq[sender]);
    if (h.len != body_len[h.seq % NMSG]) FAIL("from %u: len %u", sender, h.len);
    next_seq[sender]++;
    /* Handlers of different senders suspend and interleave: each its own buffer. */
    unsigned char *body_buf = malloc(h.len + 1);
    if (!body_buf) FAIL("malloc");
    /* Body in chunks of 13, 1, then the rest at once (RDMA-sized for 70001). */
    unsigned got = 0;
    unsigned first = h.len < 13 ? h.len : 13;
    if (FM_receive(body_buf, s, first) != FM_OK) FAIL("FM_receive body 13");
    got = first;
    if (got < h.len) {
        if (FM_receive(body_buf + got, s, 1) != FM_OK) FAIL("FM_receive body 1");
        got++;
    }
    if (got < h.len) {
        if (FM_receive(body_buf + got, s, h.len - got) != FM_OK) FAIL("FM_receive body rest");
        got = h.len;
    }
    /* Asking for more than the message holds (trailer is 5) is TOO_LONG and copies nothing. */
    memset(trailer, 'x', sizeof trailer);
    int rc = FM_receive(trailer, s, 6);
    if (rc != FM_ERR_TOO_LONG) FAIL("FM_receive past the end returned %d", rc);
    if (trailer[0] != 'x') FAIL("FM_receive past the end copied bytes");
    if (FM_receive(trailer, s, 5) != FM_OK) FAIL("FM_receive trailer");
    if (memcmp(trailer, "END!", 5) != 0) FAIL("trailer from %u seq %u", sender, h.seq);
    unsigned long long sum = 0;
    for (unsigned i = 0; i < h.len; i++) {
        if (body_buf[i] != pattern(sender, h.seq, i))
            FAIL("from %u seq %u: byte %u is %u, expected %u", sender, h.seq, i, body_buf[i],
                 pattern(sender, h.seq, i));
        sum += body_buf[i];
    }
    free(body_buf);
    received++;
    /* Answer from inside the handler. */
    if (h.len < 4000) {
        rc = FM_send_4(sender, ack_handler, (int)h.seq, (int)h.len, (int)(sum & 0x7fffffff), 42);
        if (rc != FM_OK) FAIL("FM_send_4 from handler: %s", FM_error_name(rc));
    } else {
        FM_stream *a = FM_begin_message(sender, 3 * 4 + 1, long_ack_handler);
        if (!a) FAIL("FM_begin_message from handler: %s", FM_error_name(FM_last_error()));
        uint32_t w[3] = {h.seq, h.len, (uint32_t)(sum & 0x7fffffff)};
        char z = 'z';
        if (FM_send_piece(a, &w[0], 4) != FM_OK || FM_send_piece(a, &z, 0) != FM_OK ||
            FM_send_piece(a, &w[1], 8) != FM_OK || FM_send_piece(a, &z, 1) != FM_OK)
            FAIL("FM_send_piece from handler");
        if (FM_end_message(a) != FM_OK) FAIL("FM_end_message from handler");
    }
    return FM_CONTINUE;
}

static unsigned long long expected_sum(unsigned seq) {
    unsigned long long sum = 0;
    for (unsigned i = 0; i < body_len[seq % NMSG]; i++) sum += pattern(me, seq, i);
    return sum & 0x7fffffff;
}

static void ack_handler(void *buf, unsigned size, unsigned sender) {
    int w[4];
    if (size != 16) FAIL("FM_send_4 handler got %u bytes", size);
    if (sender != 0) FAIL("ack from %u", sender);
    memcpy(w, buf, 16);
    if ((unsigned)w[0] != acks) FAIL("ack seq %d, expected %u", w[0], acks);
    if ((unsigned)w[1] != body_len[acks % NMSG] || w[3] != 42) FAIL("ack words");
    if ((unsigned long long)w[2] != expected_sum(acks)) FAIL("ack checksum");
    ack_sum += (unsigned)w[2];
    acks++;
}

static int long_ack_handler(FM_stream *s, unsigned sender) {
    uint32_t w[3];
    char z;
    if (sender != 0) FAIL("long ack from %u", sender);
    if (FM_receive(w, s, 12) != FM_OK || FM_receive(&z, s, 1) != FM_OK) FAIL("long ack receive");
    if (FM_receive(&z, s, 0) != FM_OK) FAIL("FM_receive of 0 bytes at the end");
    if (z != 'z' || w[0] != acks || w[1] != body_len[acks % NMSG] || w[2] != expected_sum(acks))
        FAIL("long ack %u: %u %u %u", acks, w[0], w[1], w[2]);
    acks++;
    return FM_CONTINUE;
}

static void send_message(unsigned seq, const unsigned char *body) {
    unsigned len = body_len[seq % NMSG];
    struct hdr h = {seq, len};
    unsigned total = sizeof h + 3 + len + 5;
    FM_stream *s = FM_begin_message(0, total, data_handler);
    if (!s) FAIL("FM_begin_message: %s", FM_error_name(FM_last_error()));
    /* Header in pieces of 3, 0, 5 bytes; marker with the first body bytes. */
    const unsigned char *hp = (const unsigned char *)&h;
    if (FM_send_piece(s, hp, 3) != FM_OK) FAIL("piece");
    if (FM_send_piece(s, hp, 0) != FM_OK) FAIL("zero piece");
    if (FM_send_piece(s, hp + 3, 5) != FM_OK) FAIL("piece");
    if (FM_send_piece(s, "ABC", 3) != FM_OK) FAIL("piece");
    /* Body in pieces of growing odd sizes. */
    unsigned off = 0, step = 1;
    while (off < len) {
        unsigned n = len - off < step ? len - off : step;
        int rc = FM_send_piece(s, body + off, n);
        if (rc != FM_OK) FAIL("body piece at %u: %s", off, FM_error_name(rc));
        off += n;
        step = step * 3 + 2;
    }
    if (FM_send_piece(s, "END!", 5) != FM_OK) FAIL("trailer piece");
    /* One byte more than announced is TOO_LONG. */
    int rc = FM_send_piece(s, "x", 1);
    if (rc != FM_ERR_TOO_LONG) FAIL("piece past the announced length returned %d", rc);
    if (FM_end_message(s) != FM_OK) FAIL("FM_end_message");
}

int main(void) {
    outside_fm_start();
    int rc;
    if (nodes > 64) FAIL("too many nodes");
    if (FM_set_handler(1, data_handler) != FM_OK || FM_set_buffer_handler(2, ack_handler) != FM_OK ||
        FM_set_handler(3, long_ack_handler) != FM_OK)
        FAIL("FM_set_handler");

    unsigned rounds = 3;
    unsigned nsend = rounds * NMSG;
    unsigned expect = me == 0 ? (nodes - 1) * nsend : 0;
    if (me != 0) {
        unsigned char *body = malloc(80000);
        if (!body) FAIL("malloc");
        for (unsigned seq = 0; seq < nsend; seq++) {
            for (unsigned i = 0; i < body_len[seq % NMSG]; i++) body[i] = pattern(me, seq, i);
            send_message(seq, body);
            /* Drain answers with a small budget: at most about one packet a call. */
            int got;
            while ((got = FM_extract(64)) > 0)
                if ((unsigned)got > FM_max_buffer_message())
                    FAIL("FM_extract(64) processed %d bytes, more than one packet", got);
            if (got < 0) FAIL("FM_extract: %s", FM_error_name(got));
        }
        while (acks < nsend) {
            int got = FM_extract(100);
            if (got < 0) FAIL("FM_extract: %s", FM_error_name(got));
            if ((unsigned)got > FM_max_buffer_message()) FAIL("FM_extract(100) processed %d", got);
        }
        free(body);
    } else {
        while (received < expect) {
            int got = FM_extract(3000);
            if (got < 0) FAIL("FM_extract: %s", FM_error_name(got));
        }
        for (unsigned n = 1; n < nodes; n++)
            if (next_seq[n] != nsend) FAIL("from %u: %u messages", n, next_seq[n]);
    }
    if (FM_suspended_handlers() != 0) FAIL("%u handlers still suspended", FM_suspended_handlers());
    rc = FM_finalize();
    if (rc != FM_OK) FAIL("FM_finalize: %s", FM_error_name(rc));
    if (me == 0) printf("outside_fm_stream: %u messages from %u senders checked\n", received, nodes - 1);
    return 0;
}
