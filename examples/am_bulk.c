/*
 * am_bulk.c - Active Messages bulk transfer: AM_RequestXfer moves a block of
 * data straight into the destination's segment (an RDMA write), then runs a
 * handler there that sees where it landed.
 *
 *   vipl-run -n 2 ./am_bulk
 *
 * Each process registers a segment at start-up (AM_SPMDStartupSeg); rank 0
 * sends 64 KiB into rank 1's segment at offset 4096, rank 1's handler checks
 * the bytes and replies.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <am.h>
#include <am_spmd.h>

#define SEG_BYTES (1 << 20)
#define XFER_BYTES (64 * 1024)
#define OFFSET 4096

#define H_ARRIVED 1
#define H_ACK 2

static volatile int arrived, acked;
static int good;

static void arrived_handler(void *token, void *buf, size_t nbytes, int32_t seed) {
    const uint8_t *p = buf;
    good = nbytes == XFER_BYTES;
    for (size_t i = 0; good && i < nbytes; i++) good = p[i] == (uint8_t)(seed + i);
    arrived = 1;
    AM_Reply1(token, H_ACK, good);
}

static void ack_handler(void *token, int32_t ok) {
    (void)token;
    good = ok;
    acked = 1;
}

int main(int argc, char **argv) {
    void *seg = aligned_alloc(4096, SEG_BYTES);
    memset(seg, 0, SEG_BYTES);
    eb_t eb;
    ep_t ep;
    if (AM_SPMDStartupSeg(&argc, &argv, seg, SEG_BYTES, &eb, &ep) != AM_OK) return 1;
    AM_SetHandler(ep, H_ARRIVED, arrived_handler);
    AM_SetHandler(ep, H_ACK, ack_handler);
    AM_SPMDBarrier();

    int me = AM_SPMDMyProc();
    if (AM_SPMDNumProcs() < 2) {
        fprintf(stderr, "am_bulk needs two processes: vipl-run -n 2 am_bulk\n");
        AM_SPMDExit(1);
    }
    if (me == 0) {
        uint8_t *src = malloc(XFER_BYTES);
        for (size_t i = 0; i < XFER_BYTES; i++) src[i] = (uint8_t)(7 + i);
        int rc = AM_RequestXfer1(ep, 1, OFFSET, H_ARRIVED, src, XFER_BYTES, 7);
        if (rc != AM_OK) {
            fprintf(stderr, "AM_RequestXfer1: %s\n", AMVIA_ErrorName(rc));
            AM_SPMDExit(1);
        }
        while (!acked) AM_Poll(eb);
        printf("am_bulk: %d bytes into rank 1's segment at offset %d: %s\n", XFER_BYTES, OFFSET,
               good ? "verified" : "CORRUPT");
        free(src);
    } else if (me == 1) {
        while (!arrived) AM_Poll(eb);
    }
    AM_SPMDExit(me == 0 && !good ? 1 : 0);
    return 0;
}
