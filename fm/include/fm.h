/*
 * fm.h - Illinois Fast Messages 2.x over VIPL (docs/fm.md).
 *
 * The interface of Lauria, Pakin and Chien, "Efficient Layering for High
 * Speed Communication: Fast Messages 2.x" [FM2]: a message is a byte stream
 * the sender composes with any number of FM_send_piece calls and the
 * receiving handler decomposes with any number of FM_receive calls, piece
 * sizes independent on the two sides.  A handler starts when the first packet
 * of its message arrives; an FM_receive for bytes not yet arrived suspends
 * the handler (a user-level context, not a thread) until they do.
 * FM_extract(maxbytes) processes at most about maxbytes of incoming data
 * (rounded up to a packet), leaving the rest queued: receiver flow control.
 * FM 1.x's FM_send / FM_send_4 [FM1] are kept as a compatibility subset.
 * Layer interleaving: a handler's FM_receive for a large part of a message
 * that has not arrived yet names its buffer, and the sender writes that part
 * into it by RDMA (VIASTACK_FM_RDMA_MIN; docs/fm.md).
 *
 * Guarantees: reliable, in-order delivery per sender (handlers of one
 * sender's messages start in the order the messages were begun) and
 * sender-side flow control with credits sized from the receiver's posted
 * buffers; a layer above needs no retransmission or reordering of its own.
 *
 * Processes are the ranks of a job started with `vipl-run -n N prog`
 * (vipl_boot.h); a process started alone is a job of one and can send to
 * itself.  Single-threaded: every call from one thread.
 */
#ifndef FM_H
#define FM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes (0 or positive: success). */
#define FM_OK 0
#define FM_ERR_NOT_INIT -1        /* FM_initialize was not called (or failed) */
#define FM_ERR_BAD_ARG -2         /* NULL buffer or stream, stream of the wrong direction, ... */
#define FM_ERR_BAD_DEST -3        /* destination is not a node of the job */
#define FM_ERR_UNKNOWN_HANDLER -4 /* handler not registered with FM_set_handler / FM_set_buffer_handler */
#define FM_ERR_TOO_LONG -5        /* more bytes than the message holds, or over a limit */
#define FM_ERR_RESOURCE -6        /* NIC, memory or connection failure (message on stderr) */
#define FM_ERR_STATE -7           /* call not allowed now (e.g. FM_receive outside its handler) */

/* What a handler returns (the value is not interpreted). */
#define FM_CONTINUE 0

/* Handler ids are 0 .. FM_MAX_HANDLERS-1. */
#define FM_MAX_HANDLERS 256
/* Largest message of FM_begin_message (bytes). */
#define FM_MAX_MESSAGE 0x7fffffffu
/* FM_extract(FM_EXTRACT_ALL): process everything that has arrived (FM 1.x's FM_extract()). */
#define FM_EXTRACT_ALL 0xffffffffu

typedef struct FM_stream FM_stream;

/* FM 2.x handler: runs when the first packet of its message arrives and reads
 * the message with FM_receive. */
typedef int (*FM_handler)(FM_stream *stream, unsigned sender);
/* FM 1.x handler: the whole message (at most FM_max_buffer_message() bytes)
 * in a buffer valid until the handler returns. */
typedef void (*FM_buffer_handler)(void *buf, unsigned size, unsigned sender);

/* Joins the job (vipl_boot), opens the NIC (VIPL_PROVIDER chooses the
 * provider, VIASTACK_FM_NIC the device) and connects one VI to every node,
 * itself included.  Collective.  Handlers may be registered before or after,
 * but every node must register a handler before a message naming it arrives. */
int FM_initialize(void);
/* Collective: waits until this node's sends have left, then tears down.
 * Messages not yet extracted are dropped.  Idempotent. */
int FM_finalize(void);
/* This node's number and the number of nodes (valid after FM_initialize). */
unsigned FM_nodeid(void);
unsigned FM_numnodes(void);

/* Handler table: function pointers differ between processes, so a message
 * carries the handler's id.  Every node registers the same function under the
 * same id; the senders name the function, FM translates it. */
int FM_set_handler(unsigned id, FM_handler fn);
int FM_set_buffer_handler(unsigned id, FM_buffer_handler fn);

/* ---- FM 2.x ------------------------------------------------------------ */
/* Starts a message of exactly `length` bytes to node dest for handler.
 * Returns NULL on error (FM_last_error() says which). */
FM_stream *FM_begin_message(unsigned dest, unsigned length, FM_handler handler);
/* Appends len bytes (any number of calls, any sizes; len 0 is allowed).
 * Waits for credits when the receiver's buffers are full, extracting
 * incoming messages meanwhile. */
int FM_send_piece(FM_stream *stream, const void *buf, unsigned len);
/* Ends the message; every byte announced must have been sent.  The stream
 * is invalid afterwards. */
int FM_end_message(FM_stream *stream);
/* In a handler: the next len bytes of the message into buf, suspending the
 * handler until they have arrived.  Asking for more than the message still
 * holds is FM_ERR_TOO_LONG (nothing is copied).  Bytes a handler leaves
 * unread are discarded when it returns. */
int FM_receive(void *buf, FM_stream *stream, unsigned len);
/* Processes incoming data: at most about maxbytes (whole packets, at least
 * one if any has arrived).  Returns the payload bytes processed (>= 0), or an
 * error code. */
int FM_extract(unsigned maxbytes);

/* ---- FM 1.x compatibility ---------------------------------------------- */
/* One-packet message for a buffer handler: size <= FM_max_buffer_message(). */
int FM_send(unsigned dest, FM_buffer_handler handler, const void *buf, unsigned size);
/* Four words for a buffer handler (it gets 16 bytes: i0..i3). */
int FM_send_4(unsigned dest, FM_buffer_handler handler, int i0, int i1, int i2, int i3);
unsigned FM_max_buffer_message(void);

/* ---- memory -------------------------------------------------------------- */
/* Memory for message buffers that the NIC moves cheaply: on the emulated NIC
 * a shared-memory segment the peer's NIC maps once, so a long message's RDMA
 * write into a handler's buffer (or from a sender's piece) of it is one
 * memcpy instead of a cross-memory-attach system call (docs/fm.md,
 * "Rendezvous").  Zeroed and page aligned; any memory works, this is only
 * faster.  Between FM_initialize and FM_finalize (which frees what is
 * left); NULL (FM_last_error says why) before FM_initialize, for 0 bytes or
 * when no memory is left.  FM_free_mem frees it: FM_OK, or FM_ERR_BAD_ARG
 * for memory that is not from FM_alloc_mem. */
void *FM_alloc_mem(size_t bytes);
int FM_free_mem(void *addr);

/* ---- diagnostics --------------------------------------------------------- */
/* The code of the last call that failed (FM_begin_message returns NULL). */
int FM_last_error(void);
const char *FM_error_name(int code);
/* Handlers suspended in FM_receive at this moment. */
unsigned FM_suspended_handlers(void);
/* Message bytes this node has received by RDMA straight into the buffers
 * handlers named with FM_receive (layer interleaving; docs/fm.md). */
unsigned long long FM_rdma_bytes(void);
/* Message bytes this node has sent as descriptor data segments naming the
 * caller's pieces in place, not copied into packet buffers (gather;
 * VIASTACK_FM_GATHER_MIN, docs/fm.md "Gather"). */
unsigned long long FM_gathered_bytes(void);
/* Times a wait of this node gave its CPU away by sleeping in VipCQWait
 * (VIASTACK_WAIT=block; docs/fm.md "Waiting"); 0 under spin and yield. */
unsigned long long FM_blocked_waits(void);

#ifdef __cplusplus
}
#endif
#endif /* FM_H */
