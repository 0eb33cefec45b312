/*
 * am.h - Active Messages (AM-2, "AM-II") over the VI Architecture (VIPL).
 *
 * The application API of the AM-2 specification with the names, signatures,
 * types and constant values used by the public AM-2 implementations (the
 * Berkeley AMUDP/AMMPI "amx" family), so that AM-2 programs written for them
 * compile unchanged.  The mapping onto VIPL is the AMVIAv3 design of Begel,
 * Buonadonna, Culler and Gay (one VI per endpoint pair, k request credits,
 * two completion queues per bundle, RDMA write for long messages); see
 * docs/am.md.
 *
 * Threading: bundles are AM_SEQ (one thread at a time), as VIPL NICs are not
 * thread safe.  Handlers run inside AM_Poll (or inside a request call that
 * waits for resources); request handlers never nest inside other handlers.
 *
 * Endpoints connect in pairs: an endpoint must AM_Map every endpoint that
 * maps it (AMVIA's MAP objects are both ends of one VI connection).
 */
#ifndef VIASTACK_AM_H
#define VIASTACK_AM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- limits --------------------------------------------------------------- */
#define AMVIA 1
#define AMVIA_MAX_SHORT 16                 /* 32-bit handler arguments, >= 8 */
#define AMVIA_MAX_MEDIUM 65536             /* medium payload bytes: 4096 inline (the paper's 4K), larger by RDMA */
#define AMVIA_MAX_LONG 1048576             /* long payload bytes per message: one RDMA write where the NIC allows */
#define AMVIA_MAX_NUMHANDLERS 256          /* handler-table entries */
#define AMVIA_MAX_NUMTRANSLATIONS 256      /* default translation-table entries */
#define AMVIA_MAX_TRANSLATIONS_LIMIT 16384 /* AM_SetNumTranslations upper bound */
#define AMVIA_MAX_NICADDR 24               /* bytes of NIC address kept in an en_t */

/* ---- simple user-visible types ------------------------------------------- */
typedef uint64_t tag_t;    /* endpoint tag */
typedef uint8_t handler_t; /* handler index 0..255; 0 is the returned-message handler */
typedef int op_t;          /* opcode passed to the returned-message handler */

/* Endpoint name: the NIC address of the owning process and an endpoint id
 * unique in that process.  Plain data: exchange it with AM_SPMDAllGather or
 * any other channel. */
typedef struct {
    uint32_t id;                     /* endpoint id within its process */
    uint16_t addr_len;               /* bytes used in addr */
    uint8_t addr[AMVIA_MAX_NICADDR]; /* VIPL NIC address (opaque bytes, VipQueryNic's) */
    uint16_t reserved;
} en_t;

struct amvia_ep;
struct amvia_eb;
typedef struct amvia_ep *ep_t; /* endpoint */
typedef struct amvia_eb *eb_t; /* bundle */

/* Handler functions are stored untyped, as in the amx headers:
 *   short          void h(void *token, int32_t a0, ..., int32_t aN-1)
 *   medium, long   void h(void *token, void *buf, size_t nbytes, int32_t a0, ...)
 *   handler 0      void h(int status, op_t opcode, void *token)
 * (nbytes may also be declared int: it is passed as a size_t that fits an int.) */
typedef void (*amx_handler_fn_t)();

/* ---- user-visible constants ----------------------------------------------- */
#define AM_ALL 1  /* endpoint tag that accepts messages carrying any tag */
#define AM_NONE 0 /* endpoint tag that refuses every message (the initial tag) */

typedef enum {
    AM_NOEVENTS, /* no endpoint state transition generates an event */
    AM_NOTEMPTY, /* a message arriving at (or waiting in) the bundle is an event */
    AM_NUMEVENTMASKS
} amvia_eventmask_t;

typedef enum {
    AM_SEQ, /* sequential bundle access (supported) */
    AM_PAR, /* concurrent bundle access (refused: VIPL NICs are not thread safe) */
    AM_NUM_BUNDLE_MODES
} amvia_bundle_mode_t;

/* Return values of the API functions. */
#define AM_OK 0           /* function completed successfully */
#define AM_ERR_NOT_INIT 1 /* active message layer not initialized */
#define AM_ERR_BAD_ARG 2  /* invalid function parameter passed */
#define AM_ERR_RESOURCE 3 /* problem with requested resource */
#define AM_ERR_NOT_SENT 4 /* synchronous message not sent */
#define AM_ERR_IN_USE 5   /* resource currently in use */

/* Status codes passed to the returned-message handler (handler 0). */
#define EBADARGS 1        /* arguments to request or reply function invalid */
#define EBADENTRY 2       /* translation-table index selected an unbound entry */
#define EBADTAG 3         /* sender's tag did not match the receiver's endpoint tag */
#define EBADHANDLER 4     /* invalid index into the receiver's handler table */
#define EBADSEGOFF 5      /* offset into the destination segment invalid */
#define EBADLENGTH 6      /* bulk transfer goes beyond the segment's end */
#define EBADENDPOINT 7    /* destination endpoint does not exist */
#define ECONGESTION 8     /* congestion at destination endpoint */
#define EUNREACHABLE 9    /* destination endpoint unreachable */
#define EREPLYREJECTED 10 /* destination endpoint refused reply message */

/* Opcodes passed to the returned-message handler. */
#define AM_REQUEST_M 1
#define AM_REQUEST_IM 2
#define AM_REQUEST_XFER_M 3
#define AM_REPLY_M 4
#define AM_REPLY_IM 5
#define AM_REPLY_XFER_M 6

/* ---- system parameters ----------------------------------------------------- */
#define AM_MaxShort() AMVIA_MAX_SHORT
#define AM_MaxMedium() AMVIA_MAX_MEDIUM
#define AM_MaxLong() AMVIA_MAX_LONG
#define AM_MaxNumHandlers() AMVIA_MAX_NUMHANDLERS
#define AM_MaxNumTranslations(trans) (*(trans) = AMVIA_MAX_TRANSLATIONS_LIMIT, AM_OK)
int AM_MaxSegLength(uintptr_t *nbytes);

/* ---- initialization / termination ----------------------------------------- */
int AM_Init(void);      /* opens the VIPL NIC; idempotent (counted) */
int AM_Terminate(void); /* frees every bundle and endpoint, closes the NIC */

/* ---- bundles and endpoints --------------------------------------------------- */
int AM_AllocateBundle(int type, eb_t *endb);
int AM_FreeBundle(eb_t bundle);
int AM_AllocateEndpoint(eb_t bundle, ep_t *endp, en_t *endpoint_name);
int AM_FreeEndpoint(ep_t ea);
/* Allowed while the endpoint has no MAP connections (VIs are bound to their
 * bundle's completion queues when created); AM_ERR_RESOURCE otherwise. */
int AM_MoveEndpoint(ep_t ea, eb_t from_bundle, eb_t to_bundle);

int AM_SetSeg(ep_t ea, void *addr, uintptr_t nbytes);
int AM_GetSeg(ep_t ea, void **addr, uintptr_t *nbytes);
int AM_SetTag(ep_t ea, tag_t tag);
int AM_GetTag(ep_t ea, tag_t *tag);

/* ---- translation table ------------------------------------------------------ */
int AM_Map(ep_t ea, int index, en_t name, tag_t tag);
int AM_MapAny(ep_t ea, int *index, en_t name, tag_t tag);
int AM_UnMap(ep_t ea, int index);
int AM_GetTranslationInuse(ep_t ea, int index); /* AM_OK if in use, AM_ERR_RESOURCE if not */
int AM_GetTranslationTag(ep_t ea, int index, tag_t *tag);
int AM_GetTranslationName(ep_t ea, int index, en_t *name);
int AM_GetNumTranslations(ep_t ea, int *ntrans);
int AM_SetNumTranslations(ep_t ea, int ntrans);
/* n_outstanding_requests sets k, the request credits of MAPs created after the
 * call (0 = default: 32 where registering memory does not pin it, 8 where it does; larger than AMVIA_MAX_CREDITS gives AMVIA_MAX_CREDITS);
 * n_endpoints is advisory. */
int AM_SetExpectedResources(ep_t ea, int n_endpoints, int n_outstanding_requests);
#define AMVIA_MAX_CREDITS 64

/* ---- handler table -------------------------------------------------------------- */
int _AM_SetHandler(ep_t ea, handler_t handler, amx_handler_fn_t function);
int _AM_SetHandlerAny(ep_t ea, handler_t *handler, amx_handler_fn_t function);
#define AM_SetHandler(ea, handler, function) _AM_SetHandler((ea), (handler), (amx_handler_fn_t)(function))
#define AM_SetHandlerAny(ea, handler, function) _AM_SetHandlerAny((ea), (handler), (amx_handler_fn_t)(function))
#define AM_GetNumHandlers(ep, pnhandlers) ((ep) ? ((*(pnhandlers) = AMVIA_MAX_NUMHANDLERS), AM_OK) : AM_ERR_BAD_ARG)
#define AM_SetNumHandlers(ep, nhandlers)                                                                               \
    ((ep) ? ((nhandlers) == AMVIA_MAX_NUMHANDLERS ? AM_OK : AM_ERR_RESOURCE) : AM_ERR_BAD_ARG)

/* ---- events ------------------------------------------------------------------------ */
int AM_GetEventMask(eb_t eb, int *mask);
int AM_SetEventMask(eb_t eb, int mask);
/* Blocks (VipCQWait on the bundle's receive CQ, no spinning) until the event
 * set by AM_SetEventMask occurs; the mask then returns to AM_NOEVENTS. */
int AM_WaitSema(eb_t eb);

/* ---- message interrogation (valid inside handlers) --------------------------------- */
int AM_GetSourceEndpoint(void *token, en_t *gan);
int AM_GetDestEndpoint(void *token, ep_t *endp);
int AM_GetMsgTag(void *token, tag_t *tagp);

/* ---- poll ------------------------------------------------------------------------ */
int AM_Poll(eb_t bundle);

/* ---- requests and replies: the six entry points behind the N-argument forms ---- */
int AMVIA_Request(ep_t ep, int dest, handler_t h, int nargs, const int32_t *args);
int AMVIA_RequestI(ep_t ep, int dest, handler_t h, void *src, size_t nbytes, int nargs, const int32_t *args);
int AMVIA_RequestXfer(ep_t ep, int dest, handler_t h, void *src, size_t nbytes, uintptr_t dest_offset, int async,
                      int nargs, const int32_t *args);
int AMVIA_Reply(void *token, handler_t h, int nargs, const int32_t *args);
int AMVIA_ReplyI(void *token, handler_t h, void *src, size_t nbytes, int nargs, const int32_t *args);
int AMVIA_ReplyXfer(void *token, handler_t h, void *src, size_t nbytes, uintptr_t dest_offset, int nargs,
                    const int32_t *args);
/* AM-2's get (AM_GetXferN): nbytes from the segment of the endpoint at
 * translation index dest, at source_offset, into the caller's segment at
 * dest_offset; then h runs on the caller as a reply handler of the long
 * shape, buf = segment + dest_offset.  A request (it takes a credit, may not
 * be sent from a handler); the peer's layer answers it with a long reply
 * (AM_ReplyXfer's path).  A source range outside the peer's current segment
 * or a tag mismatch comes back to the caller's handler 0 (EBADSEGOFF,
 * EBADLENGTH, EBADTAG, opcode AM_REQUEST_XFER_M); a destination range outside
 * the caller's segment as EBADLENGTH/EBADSEGOFF (opcode AM_REPLY_XFER_M). */
int AMVIA_GetXfer(ep_t ep, int dest, uintptr_t source_offset, handler_t h, uintptr_t dest_offset, size_t nbytes,
                  int nargs, const int32_t *args);

/* ---- viastack extensions ------------------------------------------------------- */
/* Design selector (Table 2 of the AMVIA paper): 3 = AMVIAv3 (one VI per MAP,
 * one credit counter, RDMA for long), 1 = AMVIAv1 (three VIs per MAP - short,
 * medium, long - each with its own credits; a reply travels on its request's
 * VI and must fit that VI's buffers).  Default from $VIASTACK_AM_LAYOUT
 * ("v1"/"v3") or the CMake option AM_DEFAULT_LAYOUT; applies to bundles
 * allocated afterwards. */
int AMVIA_SetLayout(int version);
int AMVIA_GetLayout(void);
/* Print error-path diagnostics to stderr (also $VIASTACK_AM_VERBOSE=1). */
extern int AMVIA_VerboseErrors;
#define AMX_VerboseErrors AMVIA_VerboseErrors   /* the amx spelling */
#define AMUDP_VerboseErrors AMVIA_VerboseErrors /* AMUDP's older spelling */
/* The VIPL NIC handle AM uses (VIP_NIC_HANDLE), for programs that also use VIPL. */
void *AMVIA_NicHandle(void);
/* Memory for segments and long-message sources that the NIC moves cheaply
 * (as UCX's ucp_mem_map): on the emulated NIC a shared-memory segment the peer's
 * NIC maps once, so a long message (an RDMA write) from it is one memcpy instead of one
 * cross-memory-attach copy (docs/am.md, "Data path").  Zeroed and page aligned;
 * any memory works as a segment or source, this is only faster.  Between
 * AM_Init and AM_Terminate; NULL (with a verbose-mode message) for nbytes 0,
 * before AM_Init, or when no memory is left.  AMVIA_FreeMem frees it (after
 * AM_SetSeg moved off it, before AM_Terminate): AM_OK, or AM_ERR_BAD_ARG for
 * memory that is not from AMVIA_AllocMem. */
void *AMVIA_AllocMem(size_t nbytes);
int AMVIA_FreeMem(void *addr);
/* Name of an AM_ERR_* return code / E* status ("AM_ERR_BAD_ARG", "EBADTAG"). */
const char *AMVIA_ErrorName(int rc);
const char *AMVIA_StatusName(int status);

/* ---- statistics (the amx extension: AMUDP/AMMPI's amudp_stats_t shape) -------------
 * Every endpoint counts the user messages it sends and receives, by category
 * (AMVIA_Short/Medium/Long index the arrays).  Plain per-endpoint counters
 * (bundles are AM_SEQ), so counting costs a few additions per message.
 * Layer-internal messages (credit returns, barrier, segment and bounce-ring
 * exchanges, goodbyes) are not counted.  Field meanings:
 *   RequestsSent/RepliesSent            messages handed to the NIC
 *   RequestsReceived/RepliesReceived    messages that arrived, counted before
 *                                       the handler runs (refused ones too)
 *   ReturnedMessages                    calls of handler 0 on this endpoint
 *   *Retransmitted, RepliesSquashed,    always 0: VI connections are reliable
 *   OutOfOrder*                         and ordered (kept for the AMUDP shape)
 *   RequestMin/Max/SumLatency           0: latency is not collected
 *   Request/ReplyDataBytesSent          4 * nargs + payload bytes
 *   Request/ReplyTotalBytesSent         bytes the NIC moved: message (header,
 *                                       arguments, payload or trailer) plus any
 *                                       RDMA-written payload (longs, mediums
 *                                       above 4096 bytes)
 *   TotalBytesSent                      sum of the two Total arrays
 *   CreditStalls                        requests that found no request credit
 *                                       and had to wait (or, async, gave up)
 *   SendSlotStalls                      sends that found no free send descriptor */
typedef enum { AMVIA_Short = 0, AMVIA_Medium = 1, AMVIA_Long = 2, AMVIA_NumCategories = 3 } amvia_category_t;
typedef struct {
    uint64_t RequestsSent[AMVIA_NumCategories];
    uint64_t RepliesSent[AMVIA_NumCategories];
    uint64_t RequestsRetransmitted[AMVIA_NumCategories];
    uint64_t RepliesRetransmitted[AMVIA_NumCategories];
    uint64_t RepliesSquashed[AMVIA_NumCategories];
    uint64_t RequestsReceived[AMVIA_NumCategories];
    uint64_t RepliesReceived[AMVIA_NumCategories];
    uint64_t ReturnedMessages;
    uint64_t OutOfOrderRequests;
    uint64_t OutOfOrderReplies;
    uint64_t RequestMinLatency;
    uint64_t RequestMaxLatency;
    uint64_t RequestSumLatency;
    uint64_t RequestDataBytesSent[AMVIA_NumCategories];
    uint64_t ReplyDataBytesSent[AMVIA_NumCategories];
    uint64_t RequestTotalBytesSent[AMVIA_NumCategories];
    uint64_t ReplyTotalBytesSent[AMVIA_NumCategories];
    uint64_t TotalBytesSent;
    /* viastack additions */
    uint64_t CreditStalls;
    uint64_t SendSlotStalls;
    uint64_t Endpoints; /* endpoints summed into this record (1 for one endpoint) */
} amvia_stats_t;

/* All zero but Endpoints (0): the starting value of a running sum. */
extern const amvia_stats_t AMVIA_initial_stats;
/* Copies ep's counters.  AM_ERR_BAD_ARG for a bad ep or NULL stats. */
int AMVIA_GetEndpointStatistics(ep_t ep, amvia_stats_t *stats);
/* Zeroes ep's counters. */
int AMVIA_ResetEndpointStatistics(ep_t ep);
/* runningsum += newvalues (field by field; Endpoints adds up). */
int AMVIA_AggregateStatistics(amvia_stats_t *runningsum, amvia_stats_t *newvalues);
/* Writes stats in readable "Name: value" lines to fp (a FILE *, may be NULL)
 * and returns the same text in a static buffer rewritten by each call.
 * globalAnalysis: stats is a sum over every endpoint of the job, so sent and
 * received counts must balance; the imbalance is printed. */
const char *AMVIA_DumpStatistics(void *fp, amvia_stats_t *stats, int globalAnalysis);

/* Prints "viastack AM: fatal error (rank R): <message>" and ends the whole
 * job (vipl_boot_abort, exit code 1); never returns. */
void AMVIA_FatalErr(const char *msg, ...)
#ifdef __GNUC__
    __attribute__((__format__(__printf__, 1, 2), __noreturn__))
#endif
    ;

/* The amx names (AMUDP/AMMPI and GASNet spell them so). */
#define amx_stats_t amvia_stats_t
#define AMX_initial_stats AMVIA_initial_stats
#define AMX_GetEndpointStatistics AMVIA_GetEndpointStatistics
#define AMX_ResetEndpointStatistics AMVIA_ResetEndpointStatistics
#define AMX_AggregateStatistics AMVIA_AggregateStatistics
#define AMX_DumpStatistics AMVIA_DumpStatistics
#define AMX_FatalErr AMVIA_FatalErr

/* Long messages: AM_RequestXferN and AM_ReplyXferN return once the NIC has
 * read the source buffer (the RDMA write completed), so it may be reused at
 * once.  AM_RequestXferAsyncN returns AM_ERR_IN_USE instead of blocking for
 * credits or descriptors, and may return before the source was read: leave
 * the source unchanged until the destination handler has run (e.g. until its
 * reply arrives).  Source pages are registered through a registration cache. */

/* ---- the N-argument forms (N = 0..16) --------------------------------------------
 * Argument order is the AM-2 specification's (and the amx headers'):
 *   AM_RequestN(ep, dest, handler, a0..)
 *   AM_RequestIN(ep, dest, handler, source_addr, nbytes, a0..)
 *   AM_RequestXferN / AM_RequestXferAsyncN(ep, dest, dest_offset, handler, source_addr, nbytes, a0..)
 *   AM_ReplyN(token, handler, a0..)
 *   AM_ReplyIN(token, handler, source_addr, nbytes, a0..)
 *   AM_ReplyXferN(token, dest_offset, handler, source_addr, nbytes, a0..)
 *   AM_GetXferN(ep, dest, source_offset, handler, dest_offset, nbytes, a0..)
 * Arguments are converted to int32_t as by a call to a function taking int32
 * arguments; each form is a real (inline) function, so a call in the wrong
 * order is a compile-time error or warning rather than a silent misdelivery. */
#define AMVIA_P0
#define AMVIA_P1 AMVIA_P0, int32_t a0
#define AMVIA_P2 AMVIA_P1, int32_t a1
#define AMVIA_P3 AMVIA_P2, int32_t a2
#define AMVIA_P4 AMVIA_P3, int32_t a3
#define AMVIA_P5 AMVIA_P4, int32_t a4
#define AMVIA_P6 AMVIA_P5, int32_t a5
#define AMVIA_P7 AMVIA_P6, int32_t a6
#define AMVIA_P8 AMVIA_P7, int32_t a7
#define AMVIA_P9 AMVIA_P8, int32_t a8
#define AMVIA_P10 AMVIA_P9, int32_t a9
#define AMVIA_P11 AMVIA_P10, int32_t a10
#define AMVIA_P12 AMVIA_P11, int32_t a11
#define AMVIA_P13 AMVIA_P12, int32_t a12
#define AMVIA_P14 AMVIA_P13, int32_t a13
#define AMVIA_P15 AMVIA_P14, int32_t a14
#define AMVIA_P16 AMVIA_P15, int32_t a15
/* Initializer lists with a trailing comma, so "{ AMVIA_Ln 0 }" is never empty. */
#define AMVIA_L0
#define AMVIA_L1 AMVIA_L0 a0,
#define AMVIA_L2 AMVIA_L1 a1,
#define AMVIA_L3 AMVIA_L2 a2,
#define AMVIA_L4 AMVIA_L3 a3,
#define AMVIA_L5 AMVIA_L4 a4,
#define AMVIA_L6 AMVIA_L5 a5,
#define AMVIA_L7 AMVIA_L6 a6,
#define AMVIA_L8 AMVIA_L7 a7,
#define AMVIA_L9 AMVIA_L8 a8,
#define AMVIA_L10 AMVIA_L9 a9,
#define AMVIA_L11 AMVIA_L10 a10,
#define AMVIA_L12 AMVIA_L11 a11,
#define AMVIA_L13 AMVIA_L12 a12,
#define AMVIA_L14 AMVIA_L13 a13,
#define AMVIA_L15 AMVIA_L14 a14,
#define AMVIA_L16 AMVIA_L15 a15,

#define AMVIA_DEFINE_FORMS(N)                                                                                          \
    static inline int AM_Request##N(ep_t ep, int dest, handler_t h AMVIA_P##N) {                                       \
        const int32_t args_[N + 1] = {AMVIA_L##N 0};                                                                   \
        return AMVIA_Request(ep, dest, h, N, args_);                                                                   \
    }                                                                                                                  \
    static inline int AM_RequestI##N(ep_t ep, int dest, handler_t h, void *src, size_t nbytes AMVIA_P##N) {            \
        const int32_t args_[N + 1] = {AMVIA_L##N 0};                                                                   \
        return AMVIA_RequestI(ep, dest, h, src, nbytes, N, args_);                                                     \
    }                                                                                                                  \
    static inline int AM_RequestXfer##N(ep_t ep, int dest, uintptr_t dest_offset, handler_t h, void *src,              \
                                        size_t nbytes AMVIA_P##N) {                                                    \
        const int32_t args_[N + 1] = {AMVIA_L##N 0};                                                                   \
        return AMVIA_RequestXfer(ep, dest, h, src, nbytes, dest_offset, 0, N, args_);                                  \
    }                                                                                                                  \
    static inline int AM_RequestXferAsync##N(ep_t ep, int dest, uintptr_t dest_offset, handler_t h, void *src,         \
                                             size_t nbytes AMVIA_P##N) {                                               \
        const int32_t args_[N + 1] = {AMVIA_L##N 0};                                                                   \
        return AMVIA_RequestXfer(ep, dest, h, src, nbytes, dest_offset, 1, N, args_);                                  \
    }                                                                                                                  \
    static inline int AM_Reply##N(void *token, handler_t h AMVIA_P##N) {                                               \
        const int32_t args_[N + 1] = {AMVIA_L##N 0};                                                                   \
        return AMVIA_Reply(token, h, N, args_);                                                                        \
    }                                                                                                                  \
    static inline int AM_ReplyI##N(void *token, handler_t h, void *src, size_t nbytes AMVIA_P##N) {                    \
        const int32_t args_[N + 1] = {AMVIA_L##N 0};                                                                   \
        return AMVIA_ReplyI(token, h, src, nbytes, N, args_);                                                          \
    }                                                                                                                  \
    static inline int AM_ReplyXfer##N(void *token, uintptr_t dest_offset, handler_t h, void *src,                      \
                                      size_t nbytes AMVIA_P##N) {                                                      \
        const int32_t args_[N + 1] = {AMVIA_L##N 0};                                                                   \
        return AMVIA_ReplyXfer(token, h, src, nbytes, dest_offset, N, args_);                                          \
    }                                                                                                                  \
    static inline int AM_GetXfer##N(ep_t ep, int dest, uintptr_t source_offset, handler_t h, uintptr_t dest_offset,    \
                                    size_t nbytes AMVIA_P##N) {                                                        \
        const int32_t args_[N + 1] = {AMVIA_L##N 0};                                                                   \
        return AMVIA_GetXfer(ep, dest, source_offset, h, dest_offset, nbytes, N, args_);                               \
    }

AMVIA_DEFINE_FORMS(0)
AMVIA_DEFINE_FORMS(1)
AMVIA_DEFINE_FORMS(2)
AMVIA_DEFINE_FORMS(3)
AMVIA_DEFINE_FORMS(4)
AMVIA_DEFINE_FORMS(5)
AMVIA_DEFINE_FORMS(6)
AMVIA_DEFINE_FORMS(7)
AMVIA_DEFINE_FORMS(8)
AMVIA_DEFINE_FORMS(9)
AMVIA_DEFINE_FORMS(10)
AMVIA_DEFINE_FORMS(11)
AMVIA_DEFINE_FORMS(12)
AMVIA_DEFINE_FORMS(13)
AMVIA_DEFINE_FORMS(14)
AMVIA_DEFINE_FORMS(15)
AMVIA_DEFINE_FORMS(16)

#ifdef __cplusplus
}
#endif

#include "am_amx.h" /* the AMUDP/AMMPI core names beyond AM-2 */

#endif /* VIASTACK_AM_H */
