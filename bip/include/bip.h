/*
 * bip.h - BIP, the Basic Interface for Parallelism of Prylli and Tourancheau
 * ("Protocol design for high performance networking: a Myrinet experience",
 * [BIP]), over VIPL (vipl.h).  docs/bip.md.
 *
 * A job of n processes numbered 0..n-1 (started by `vipl-run -n N prog`,
 * vipl_boot.h).  Tagged messages: a send names the destination and a tag
 * (one of BIP_NTAGS receive queues at the destination); a receive names only
 * a tag and takes the next message of that queue from any source.  Messages
 * of one sender on one tag are received in the order they were sent.
 * Delivery is reliable.
 *
 * Protocol (chosen by message length):
 *   - small messages (<= bip_eager_max(dest) bytes) are copied into buffers
 *     the receiver provides (a fixed number per sender, set by the receiver:
 *     VIASTACK_BIP_SMALL_BUFFERS); a send does not wait for the receive and
 *     blocks only when those buffers are full;
 *   - long messages move by rendezvous ("ready mode"): the data moves only
 *     once the receive is posted, by RDMA write straight into the receive
 *     buffer (zero copy), in fragments sized by length from a measured
 *     table (bip_fragment_size).
 *   So a long bip_send completes only when the destination posts a matching
 *   receive: post the receive (bip_irecv) before a blocking send that may
 *   wait for the peer's own long send.
 *
 * One pending send and one pending receive per process, as BIP specifies:
 * a bip_isend while a send is pending (or a bip_send then) returns
 * BIP_ERR_PENDING, likewise for receives.  Sends and receives are
 * independent of each other.  Layers above queue if they need more.
 *
 * Return codes: BIP_OK (0) or a negative BIP_ERR_*; bip_error_name() names
 * them; VIASTACK_BIP_VERBOSE=1 prints every failure with its reason.
 */
#ifndef BIP_H
#define BIP_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BIP_NTAGS 64               /* tags 0 .. BIP_NTAGS-1 */
#define BIP_MAX_MESSAGE (1u << 30) /* bytes; larger sends are BIP_ERR_TOO_LONG */

#define BIP_OK 0
#define BIP_ERR_NOT_INIT -1   /* bip_init was not called (or failed) */
#define BIP_ERR_BAD_DEST -2   /* destination is not a rank of the job */
#define BIP_ERR_BAD_TAG -3    /* tag outside 0 .. BIP_NTAGS-1 */
#define BIP_ERR_NULL_BUF -4   /* NULL buffer with a non-zero length */
#define BIP_ERR_TOO_LONG -5   /* send longer than BIP_MAX_MESSAGE */
#define BIP_ERR_TRUNCATED -6  /* the message is longer than the receive's maxlen (both sides are told) */
#define BIP_ERR_PENDING -7    /* a send (receive) is already pending: one of each per process */
#define BIP_ERR_NO_PENDING -8 /* test/wait with no send (receive) pending */
#define BIP_ERR_RESOURCE -9   /* NIC, memory, connection, or the peer failed */
#define BIP_ERR_STATE -10     /* bip_finalize with a send or receive pending */

/* Joins the job, opens the NIC, connects a VI to every rank.  Collective. */
int bip_init(void);
/* Collective: every message sent is delivered (or discarded if never
 * received), then tears down.  BIP_ERR_STATE while a send or receive is
 * pending. */
int bip_finalize(void);
int bip_mynode(void);   /* this process's rank (-1 before bip_init) */
int bip_numnodes(void); /* ranks in the job (0 before bip_init) */

/* Blocking send: returns once buf may be reused (a small message is copied
 * out; a long one has been written into the receiver's buffer). */
int bip_send(int dest, int tag, const void *buf, size_t len);
/* Blocking receive of the next message on tag, from any rank.  Returns the
 * source rank (>= 0) and sets *len (may be NULL) to the message length; or
 * a negative BIP_ERR_*.  A message longer than maxlen is BIP_ERR_TRUNCATED
 * (*len says its length; a small one's first maxlen bytes are in buf, a long
 * one is not transferred and its sender gets BIP_ERR_TRUNCATED too). */
int bip_recv(int tag, void *buf, size_t maxlen, size_t *len);

/* Non-blocking: start, then test (1 done, 0 not yet, < 0 error) or wait. */
int bip_isend(int dest, int tag, const void *buf, size_t len);
int bip_stest(void);
int bip_swait(void);
int bip_irecv(int tag, void *buf, size_t maxlen);
/* Done: returns 1 and sets *source / *len (either may be NULL). */
int bip_rtest(int *source, size_t *len);
/* Returns the source rank (>= 0) and sets *len, or a negative BIP_ERR_*. */
int bip_rwait(size_t *len);

/* The largest message sent to dest by copying (the switch point to
 * rendezvous), as dest's buffers allow; < 0 on error. */
long bip_eager_max(int dest);
/* The RDMA fragment size used for a long message of len bytes. */
size_t bip_fragment_size(size_t len);
/* Memory for message buffers that the NIC moves cheaply: on the emulated NIC
 * a shared-memory segment the peer's NIC maps once, so a long message written
 * into a receive buffer of it is one memcpy instead of a cross-memory-attach
 * system call per fragment (docs/bip.md).  Zeroed and page aligned; any
 * memory works, this is only faster.  Between bip_init and bip_finalize
 * (which frees what is left); NULL before bip_init, for 0 bytes or when no
 * memory is left.  bip_free_mem: BIP_OK, BIP_ERR_NOT_INIT, or
 * BIP_ERR_NULL_BUF for memory that is not from bip_alloc_mem (no receive or
 * send may be pending on it). */
void *bip_alloc_mem(size_t bytes);
int bip_free_mem(void *addr);
/* Bytes this process received by RDMA write into posted buffers. */
unsigned long long bip_rdma_bytes(void);

const char *bip_error_name(int code);

#ifdef __cplusplus
}
#endif
#endif /* BIP_H */
