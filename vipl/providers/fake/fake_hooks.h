/* fake_hooks.h - fault injection into the fake VIPL provider (tests only).
 *
 * The fake provider (VIPL_PROVIDER=fake, devices "fake0", "fake1", ...) moves
 * every message in memory at post time.  These hooks make the next message(s),
 * or each message with a probability drawn from a seeded generator, suffer a
 * fault on the way, and break a connection as a failed link would.  What the
 * program then sees is what the VI Architecture says the VI's reliability
 * level makes of the fault (vipl/providers/fake/README.md has the table):
 *
 *   fault       Unreliable                     Reliable Delivery / Reception
 *   drop        lost: no receive completes     connection broken: both VIs in
 *                                              VIP_STATE_ERROR, descriptors flushed,
 *                                              VIP_ERROR_CONN_LOST / RDMA_TRANSPORT
 *   duplicate   delivered once (at most once)  delivered once
 *   reorder     overtaken by the next message  delivered in order
 *   delay n     arrives after n more posts     arrives after n more posts; later
 *               (later messages overtake it)   messages of the VI wait behind it
 *   corrupt     checksum fails: dropped        checksum fails: connection broken
 *
 * A "message" is what a send or an RDMA write puts on the wire; RDMA reads are
 * not faulted (only broken connections affect them).  A "post" is any
 * VipPostSend or VipPostRecv on any fake NIC of the process.
 *
 * Handles are the API's (VIP_VI_HANDLE); vi = NULL means every VI.  Functions
 * return VIP_SUCCESS, or VIP_INVALID_PARAMETER for a handle that is not a
 * live VI of the fake provider or an argument out of range.
 */
#ifndef VIASTACK_FAKE_HOOKS_H
#define VIASTACK_FAKE_HOOKS_H

#include <stdint.h>

#include "vipl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    VIPL_FAKE_DROP = 1,
    VIPL_FAKE_DUPLICATE,
    VIPL_FAKE_REORDER,
    VIPL_FAKE_DELAY,
    VIPL_FAKE_CORRUPT
} vipl_fake_fault;

/* The next `count` messages sent by vi (NULL: by any VI) suffer `fault`.
 * delay_posts is the delay of VIPL_FAKE_DELAY (ignored otherwise, >= 1). */
VIP_RETURN vipl_fake_fault_next(VIP_VI_HANDLE vi, vipl_fake_fault fault, unsigned count, unsigned delay_posts);

/* Every message sent by vi (NULL: any VI) suffers `fault` with probability
 * `probability` (0..1), drawn from a generator seeded with `seed`: the same
 * seed and the same program give the same faults. */
VIP_RETURN vipl_fake_fault_random(VIP_VI_HANDLE vi, vipl_fake_fault fault, double probability, uint64_t seed,
                                  unsigned delay_posts);

/* Removes every fault rule (messages already held still arrive). */
void vipl_fake_faults_clear(void);

/* Delivers every message a delay or reorder is holding, now. */
void vipl_fake_release_held(void);

/* Breaks vi's connection as a failed link would: both ends enter
 * VIP_STATE_ERROR, their posted descriptors complete with
 * VIP_STATUS_DESC_FLUSHED_ERROR, and each end's error callback gets
 * VIP_ERROR_CONN_LOST.  VIP_INVALID_STATE if vi is not connected. */
VIP_RETURN vipl_fake_break_connection(VIP_VI_HANDLE vi);

/* What the switchboard has done since the process started (or the last reset). */
typedef struct {
    uint64_t messages;             /* sends and RDMA writes put on the wire */
    uint64_t delivered;            /* placed at the target (receive or memory) */
    uint64_t dropped;              /* by a drop fault */
    uint64_t duplicates_discarded; /* second copies the target recognised */
    uint64_t reordered;            /* held by a reorder fault */
    uint64_t delayed;              /* held by a delay fault */
    uint64_t checksum_failures;    /* corrupted messages the target detected */
    uint64_t no_receive;           /* sends that found no receive posted */
    uint64_t connections_broken;   /* by a fault, an error or vipl_fake_break_connection */
} vipl_fake_stats;

void vipl_fake_get_stats(vipl_fake_stats *out);
void vipl_fake_reset_stats(void);

#ifdef __cplusplus
}
#endif

#endif /* VIASTACK_FAKE_HOOKS_H */
