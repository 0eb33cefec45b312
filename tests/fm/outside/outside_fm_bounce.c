/*
 * outside_fm_bounce.c - FM 1.x handlers that send, written from [FM1]/[FM2]
 * and fm.h alone: every node starts BALLS balls (FM_send_4 to its right
 * neighbour); each buffer handler passes the ball on to its own right
 * neighbour with FM_send_4 from inside the handler, HOPS times, and the node
 * where a ball ends tells every node.  With more balls in flight than a
 * link's credits, handlers wait for credits inside FM_send_4 and extract, so
 * handlers of the same link nest.
 *
 * Regression test: a nested handler's credit was owed before its buffer was
 * reposted at every nesting level (not only at the one the receive queue has
 * room for), so a node's left neighbour could send more packets than the
 * receive queue held: VIP_ERROR_RECVQ_EMPTY and FM_ERR_RESOURCE on 4 nodes.
 *
 * Run: vipl-run -n 2|4 outside_fm_bounce [hops (100)] [balls (120)]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outside_fm.h"

static int hops = 100, balls = 120;
static int ended;           /* "ball ended" notices received */
static unsigned char *seen; /* per ball (origin * balls + id): ended once */
static long passed;

static void ended_handler(void *buf, unsigned size, unsigned sender);

/* words: origin, ball id, hops so far, a check word */
static void ball_handler(void *buf, unsigned size, unsigned sender) {
    int w[4];
    if (size != 16) FAIL("ball of %u bytes", size);
    memcpy(w, buf, 16);
    if (sender != (me + nodes - 1) % nodes) FAIL("ball from %u", sender);
    if (w[0] < 0 || (unsigned)w[0] >= nodes || w[1] < 0 || w[1] >= balls || w[2] < 0 || w[2] > hops)
        FAIL("ball words %d %d %d", w[0], w[1], w[2]);
    if (w[3] != w[0] * 1000003 + w[1] * 7 + w[2]) FAIL("ball check word");
    /* A ball that has made h hops is at node origin + 1 + h. */
    if ((unsigned)(w[0] + 1 + w[2]) % nodes != me) FAIL("ball at the wrong node");
    passed++;
    int rc;
    if (w[2] == hops) {
        for (unsigned d = 0; d < nodes; d++)
            if ((rc = FM_send_4(d, ended_handler, w[0], w[1], 0, 0)) != FM_OK)
                FAIL("FM_send_4(ended) in a handler: %s", FM_error_name(rc));
        return;
    }
    int h = w[2] + 1;
    rc = FM_send_4((me + 1) % nodes, ball_handler, w[0], w[1], h, w[0] * 1000003 + w[1] * 7 + h);
    if (rc != FM_OK) FAIL("FM_send_4 in a handler: %s", FM_error_name(rc));
}

static void ended_handler(void *buf, unsigned size, unsigned sender) {
    int w[4];
    (void)sender;
    if (size != 16) FAIL("notice of %u bytes", size);
    memcpy(w, buf, 16);
    unsigned k = (unsigned)w[0] * (unsigned)balls + (unsigned)w[1];
    if (seen[k]) FAIL("ball %d/%d ended twice", w[0], w[1]);
    seen[k] = 1;
    ended++;
}

int main(int argc, char **argv) {
    if (argc > 1) hops = atoi(argv[1]);
    if (argc > 2) balls = atoi(argv[2]);
    outside_fm_start();
    int rc;
    if (FM_set_buffer_handler(1, ball_handler) != FM_OK || FM_set_buffer_handler(2, ended_handler) != FM_OK)
        FAIL("FM_set_buffer_handler");
    seen = calloc(nodes * (unsigned)balls, 1);
    if (!seen) FAIL("calloc");
    for (int b = 0; b < balls; b++) {
        rc = FM_send_4((me + 1) % nodes, ball_handler, (int)me, b, 0, (int)me * 1000003 + b * 7);
        if (rc != FM_OK) FAIL("FM_send_4: %s", FM_error_name(rc));
    }
    /* Every node hears of every ball's end, so no ball is still moving when
     * all nodes get here. */
    while (ended < (int)nodes * balls) {
        rc = FM_extract(FM_EXTRACT_ALL);
        if (rc < 0) FAIL("FM_extract: %s", FM_error_name(rc));
    }
    rc = FM_finalize();
    if (rc != FM_OK) FAIL("FM_finalize: %s", FM_error_name(rc));
    if (me == 0)
        printf("outside_fm_bounce: %d balls x %d hops on %u nodes, %ld passed here\n", balls, hops, nodes, passed);
    free(seen);
    return 0;
}
