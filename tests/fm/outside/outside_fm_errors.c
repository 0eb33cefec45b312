/*
 * outside_fm_errors.c - the errors fm.h and docs/fm.md document, called as a
 * user who read only the header would: before FM_initialize, bad nodes,
 * unregistered handlers, too many bytes, zero-length pieces, FM_receive
 * outside a handler, FM_end_message before all bytes, FM_finalize from a
 * handler, an FM_send over one packet.  Each must return its code (never
 * crash or hang), and FM must go on working afterwards: node 0 then sends
 * node 1 a burst of FM 1.x messages and node 1 extracts them with a budget
 * of one byte, checking that each call processes about one packet.
 *
 * Run: vipl-run -n 2 outside_fm_errors  (also works as a job of one)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outside_fm.h"

static FM_stream *saved_stream;
static int handler_checks;
static unsigned burst_got;
static unsigned burst_bytes;

static void never_registered(void *buf, unsigned size, unsigned sender) {
    (void)buf, (void)size, (void)sender;
    FAIL("an unregistered handler ran");
}

static int check_handler(FM_stream *s, unsigned sender) {
    char b[8];
    (void)sender;
    EXPECT(FM_receive(NULL, s, 4), FM_ERR_BAD_ARG);
    EXPECT(FM_receive(b, NULL, 4), FM_ERR_BAD_ARG);
    EXPECT(FM_receive(b, s, 0), FM_OK);
    EXPECT(FM_receive(b, s, 9), FM_ERR_TOO_LONG);
    EXPECT(FM_receive(b, s, 8), FM_OK);
    if (memcmp(b, "12345678", 8) != 0) FAIL("handler bytes");
    EXPECT(FM_receive(b, s, 1), FM_ERR_TOO_LONG);
    EXPECT(FM_finalize(), FM_ERR_STATE);
    saved_stream = s;
    handler_checks++;
    return FM_CONTINUE;
}

static int zero_got;
static int zero_handler(FM_stream *s, unsigned sender) {
    char b;
    (void)sender;
    EXPECT(FM_receive(&b, s, 0), FM_OK);
    EXPECT(FM_receive(&b, s, 1), FM_ERR_TOO_LONG);
    zero_got++;
    return FM_CONTINUE;
}

static void burst_handler(void *buf, unsigned size, unsigned sender) {
    const unsigned char *p = buf;
    if (sender != 0 || size != 1500) FAIL("burst message of %u bytes from %u", size, sender);
    for (unsigned i = 0; i < size; i++)
        if (p[i] != (unsigned char)(burst_got + i)) FAIL("burst %u byte %u", burst_got, i);
    burst_got++;
    burst_bytes += size;
}

int main(void) {
    char buf[16] = "12345678";

    /* Before FM_initialize. */
    EXPECT(FM_send_4(0, burst_handler, 1, 2, 3, 4), FM_ERR_NOT_INIT);
    if (FM_begin_message(0, 4, check_handler) != NULL) FAIL("FM_begin_message before init");
    EXPECT(FM_last_error(), FM_ERR_NOT_INIT);
    EXPECT(FM_extract(FM_EXTRACT_ALL), FM_ERR_NOT_INIT);

    outside_fm_start();
    int rc;
    unsigned peer = (me + 1) % nodes;

    EXPECT(FM_set_handler(FM_MAX_HANDLERS, check_handler), FM_ERR_BAD_ARG);
    EXPECT(FM_set_handler(1, check_handler), FM_OK);
    EXPECT(FM_set_buffer_handler(2, burst_handler), FM_OK);
    EXPECT(FM_set_handler(3, zero_handler), FM_OK);

    /* Bad destinations. */
    EXPECT(FM_send_4(nodes, burst_handler, 1, 2, 3, 4), FM_ERR_BAD_DEST);
    EXPECT(FM_send(nodes + 100, burst_handler, buf, 4), FM_ERR_BAD_DEST);
    if (FM_begin_message(nodes, 4, check_handler) != NULL) FAIL("FM_begin_message to a bad node");
    EXPECT(FM_last_error(), FM_ERR_BAD_DEST);
    if (FM_begin_message((unsigned)-1, 4, check_handler) != NULL) FAIL("FM_begin_message to node -1");
    EXPECT(FM_last_error(), FM_ERR_BAD_DEST);

    /* Handlers not registered, or registered as the other kind. */
    EXPECT(FM_send_4(peer, never_registered, 1, 2, 3, 4), FM_ERR_UNKNOWN_HANDLER);
    if (FM_begin_message(peer, 4, (FM_handler)(void (*)(void))never_registered) != NULL) FAIL("unregistered handler");
    EXPECT(FM_last_error(), FM_ERR_UNKNOWN_HANDLER);
    EXPECT(FM_send(peer, (FM_buffer_handler)(void (*)(void))check_handler, buf, 4), FM_ERR_UNKNOWN_HANDLER);

    /* Too long. */
    unsigned big = FM_max_buffer_message();
    char *bigbuf = calloc(1, big + 1);
    if (!bigbuf) FAIL("calloc");
    EXPECT(FM_send(peer, burst_handler, bigbuf, big + 1), FM_ERR_TOO_LONG);
    EXPECT(FM_send(peer, burst_handler, NULL, 4), FM_ERR_BAD_ARG);
    if (FM_begin_message(peer, FM_MAX_MESSAGE + 1u, check_handler) != NULL) FAIL("message over FM_MAX_MESSAGE");
    EXPECT(FM_last_error(), FM_ERR_TOO_LONG);

    /* FM_receive outside a handler. */
    EXPECT(FM_receive(buf, NULL, 4), FM_ERR_BAD_ARG);

    /* A stream: NULL pieces, zero-length pieces, too many bytes, ending early. */
    FM_stream *s = FM_begin_message(peer, 8, check_handler);
    if (!s) FAIL("FM_begin_message: %s", FM_error_name(FM_last_error()));
    EXPECT(FM_receive(buf, s, 4), FM_ERR_BAD_ARG); /* a sending stream */
    EXPECT(FM_send_piece(NULL, buf, 4), FM_ERR_BAD_ARG);
    EXPECT(FM_send_piece(s, NULL, 4), FM_ERR_BAD_ARG);
    EXPECT(FM_send_piece(s, buf, 0), FM_OK);
    EXPECT(FM_send_piece(s, NULL, 0), FM_OK);
    EXPECT(FM_send_piece(s, buf, 3), FM_OK);
    EXPECT(FM_end_message(s), FM_ERR_STATE);
    EXPECT(FM_send_piece(s, buf + 3, 6), FM_ERR_TOO_LONG);
    EXPECT(FM_send_piece(s, buf + 3, 5), FM_OK);
    EXPECT(FM_send_piece(s, buf, 0), FM_OK);
    EXPECT(FM_send_piece(s, buf, 1), FM_ERR_TOO_LONG);
    EXPECT(FM_end_message(s), FM_OK);
    EXPECT(FM_end_message(NULL), FM_ERR_BAD_ARG);

    /* A message of zero bytes is a message: its handler runs. */
    FM_stream *z = FM_begin_message(peer, 0, zero_handler);
    if (!z) FAIL("FM_begin_message of 0 bytes: %s", FM_error_name(FM_last_error()));
    EXPECT(FM_send_piece(z, buf, 0), FM_OK);
    EXPECT(FM_end_message(z), FM_OK);

    /* Wait for the peer's check message and its empty message. */
    while (handler_checks < 1 || zero_got < 1) {
        rc = FM_extract(FM_EXTRACT_ALL);
        if (rc < 0) FAIL("FM_extract: %s", FM_error_name(rc));
    }
    /* The stream the handler had is over: FM_receive on it now is a state error. */
    EXPECT(FM_receive(buf, saved_stream, 1), FM_ERR_STATE);

    /* A budgeted burst, node 0 to node 1 (or to itself in a job of one). */
    enum { BURST = 6 };
    unsigned target = nodes > 1 ? 1 : 0;
    if (me == 0) {
        for (unsigned m = 0; m < BURST; m++) {
            for (unsigned i = 0; i < 1500; i++) bigbuf[i] = (char)(m + i);
            EXPECT(FM_send(target, burst_handler, bigbuf, 1500), FM_OK);
        }
    }
    if (me == target) {
        while (burst_got < BURST) {
            unsigned before = burst_bytes;
            rc = FM_extract(1);
            if (rc < 0) FAIL("FM_extract(1): %s", FM_error_name(rc));
            if (rc > 1500 || burst_bytes - before > 1500)
                FAIL("FM_extract(1) processed %d bytes (%u of the burst), more than one packet", rc,
                     burst_bytes - before);
        }
    }
    free(bigbuf);
    EXPECT(FM_finalize(), FM_OK);
    EXPECT(FM_finalize(), FM_OK); /* idempotent */
    if (me == 0) printf("outside_fm_errors: ok\n");
    return 0;
}
