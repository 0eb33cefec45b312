/*
 * am_amx.h - the names of Berkeley's AMUDP and AMMPI core headers (amudp.h,
 * ammpi.h) that programs written for them use beyond the AM-2 API, mapped
 * onto viastack's AM.  Included by am.h; define AMVIA_NO_AMUDP_NAMES to keep
 * the AMUDP_* and AMMPI_* spellings out (the AMVIA_* and AMX_* ones stay).
 *
 * What is provided and what is left out, with the reasons: docs/am.md,
 * "The amx, AMUDP and AMMPI names".
 */
#ifndef VIASTACK_AM_AMX_H
#define VIASTACK_AM_AMX_H

#include <stdarg.h>

#include "am.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Non-error output switch.  viastack's AM prints nothing but errors (and the
 * verbose-mode diagnostics), so there is nothing for it to silence; it is
 * kept so programs that set it build and run unchanged. */
extern int AMVIA_SilentMode;

/* The translation-table index at which the receiving endpoint maps the
 * message's sender (in an SPMD job: the sender's rank), from a handler's
 * token.  AM_OK, or AM_ERR_BAD_ARG for a token that is not live or a sender
 * the endpoint has not mapped. */
int AMVIA_GetSourceId(void *token, int *srcid);

/* AM_Map / AM_MapAny taking the endpoint name by address (AMMPI's entry
 * points behind its AM_Map macros). */
int AMVIA_MapByAddress(ep_t ea, int index, en_t *name, tag_t tag);
int AMVIA_MapAnyByAddress(ep_t ea, int *index, en_t *name, tag_t tag);

/* The amx generic entry points behind the N-argument forms: numargs 32-bit
 * arguments follow as variadic ints (or in a va_list).  Each checks numargs
 * (0..AM_MaxShort(), AM_ERR_BAD_ARG otherwise) and calls the AMVIA_* form of
 * am.h, so the semantics are those of AM_RequestN and friends. */
int AMVIA_RequestV(ep_t ep, int dest, handler_t h, int numargs, ...);
int AMVIA_RequestIV(ep_t ep, int dest, handler_t h, void *source_addr, int nbytes, int numargs, ...);
int AMVIA_RequestXferV(ep_t ep, int dest, handler_t h, void *source_addr, int nbytes, uintptr_t dest_offset, int async,
                       int numargs, ...);
int AMVIA_ReplyV(void *token, handler_t h, int numargs, ...);
int AMVIA_ReplyIV(void *token, handler_t h, void *source_addr, int nbytes, int numargs, ...);
int AMVIA_ReplyXferV(void *token, handler_t h, void *source_addr, int nbytes, uintptr_t dest_offset, int numargs, ...);
int AMVIA_RequestVA(ep_t ep, int dest, handler_t h, int numargs, va_list argptr);
int AMVIA_RequestIVA(ep_t ep, int dest, handler_t h, void *source_addr, int nbytes, int numargs, va_list argptr);
int AMVIA_RequestXferVA(ep_t ep, int dest, handler_t h, void *source_addr, int nbytes, uintptr_t dest_offset, int async,
                        int numargs, va_list argptr);
int AMVIA_ReplyVA(void *token, handler_t h, int numargs, va_list argptr);
int AMVIA_ReplyIVA(void *token, handler_t h, void *source_addr, int nbytes, int numargs, va_list argptr);
int AMVIA_ReplyXferVA(void *token, handler_t h, void *source_addr, int nbytes, uintptr_t dest_offset, int numargs,
                      va_list argptr);

/* Client hooks run before and after every user handler of ep (request,
 * reply, all categories; not handler 0): pre gets the category, whether it is
 * a request, the handler index, the token, the payload (buf, nbytes; NULL, 0
 * for a short message) and the arguments; post the category and whether it
 * was a request.  They may read the token (AM_GetSourceEndpoint, ...) but
 * must not send or poll.  NULL for none.  AM_OK, AM_ERR_BAD_ARG for a bad ep.
 * Without hooks the dispatch pays one predicted branch for each. */
typedef void (*amvia_preHandlerCallback_t)(amvia_category_t cat, int isReq, int handlerId, void *token, void *buf,
                                           size_t nbytes, int numargs, uint32_t *args);
typedef void (*amvia_postHandlerCallback_t)(amvia_category_t cat, int isReq);
int AMVIA_SetHandlerCallbacks(ep_t ep, amvia_preHandlerCallback_t pre, amvia_postHandlerCallback_t post);

#define amx_category_t amvia_category_t

#ifndef AMVIA_NO_AMUDP_NAMES
/* Limits under the AMUDP/AMMPI constant names: viastack's values. */
#define AMUDP_MAX_SHORT AMVIA_MAX_SHORT
#define AMUDP_MAX_MEDIUM AMVIA_MAX_MEDIUM
#define AMUDP_MAX_LONG AMVIA_MAX_LONG
#define AMUDP_MAX_NUMHANDLERS AMVIA_MAX_NUMHANDLERS
#define AMUDP_MAX_NUMTRANSLATIONS AMVIA_MAX_TRANSLATIONS_LIMIT
#define AMUDP_MAX_SEGLENGTH ((uintptr_t)-1)
#define AMUDP_MAX_NETWORKDEPTH 64 /* request credits per MAP (AM_SetExpectedResources caps there) */
#define AMUDP_MAX_SPMDPROCS AMVIA_MAX_TRANSLATIONS_LIMIT
#define AMMPI_MAX_SHORT AMUDP_MAX_SHORT
#define AMMPI_MAX_MEDIUM AMUDP_MAX_MEDIUM
#define AMMPI_MAX_LONG AMUDP_MAX_LONG
#define AMMPI_MAX_NUMHANDLERS AMUDP_MAX_NUMHANDLERS
#define AMMPI_MAX_NUMTRANSLATIONS AMUDP_MAX_NUMTRANSLATIONS
#define AMMPI_MAX_SEGLENGTH AMUDP_MAX_SEGLENGTH
#define AMMPI_MAX_NETWORKDEPTH AMUDP_MAX_NETWORKDEPTH
#define AMMPI_MAX_SPMDPROCS AMUDP_MAX_SPMDPROCS

/* Types. */
#define amudp_handler_fn_t amx_handler_fn_t
#define ammpi_handler_fn_t amx_handler_fn_t
#define amudp_category_t amvia_category_t
#define ammpi_category_t amvia_category_t
#define amudp_Short AMVIA_Short
#define amudp_Medium AMVIA_Medium
#define amudp_Long AMVIA_Long
#define amudp_NumCategories AMVIA_NumCategories
#define ammpi_Short AMVIA_Short
#define ammpi_Medium AMVIA_Medium
#define ammpi_Long AMVIA_Long
#define ammpi_NumCategories AMVIA_NumCategories
#define amudp_eventmask_t amvia_eventmask_t
#define ammpi_eventmask_t amvia_eventmask_t
#define amudp_bundle_mode_t amvia_bundle_mode_t
#define ammpi_bundle_mode_t amvia_bundle_mode_t
#define ammpi_stats_t amvia_stats_t

/* Variables and entry points. */
#define AMUDP_SilentMode AMVIA_SilentMode
#define AMMPI_SilentMode AMVIA_SilentMode
#define AMMPI_VerboseErrors AMVIA_VerboseErrors
#define AMUDP_GetSourceId AMVIA_GetSourceId
#define AMMPI_GetSourceId AMVIA_GetSourceId
#define AMUDP_SetHandlerCallbacks AMVIA_SetHandlerCallbacks
#define AMMPI_SetHandlerCallbacks AMVIA_SetHandlerCallbacks
#define AMUDP_preHandlerCallback_t amvia_preHandlerCallback_t
#define AMUDP_postHandlerCallback_t amvia_postHandlerCallback_t
#define AMMPI_preHandlerCallback_t amvia_preHandlerCallback_t
#define AMMPI_postHandlerCallback_t amvia_postHandlerCallback_t
#define AMMPI_Map AMVIA_MapByAddress
#define AMMPI_MapAny AMVIA_MapAnyByAddress
#define AMMPI_initial_stats AMVIA_initial_stats
#define AMMPI_GetEndpointStatistics AMVIA_GetEndpointStatistics
#define AMMPI_ResetEndpointStatistics AMVIA_ResetEndpointStatistics
#define AMMPI_AggregateStatistics AMVIA_AggregateStatistics
#define AMMPI_DumpStatistics AMVIA_DumpStatistics
#define AMMPI_FatalErr AMVIA_FatalErr
#define AMUDP_Request AMVIA_RequestV
#define AMUDP_RequestI AMVIA_RequestIV
#define AMUDP_RequestXfer AMVIA_RequestXferV
#define AMUDP_Reply AMVIA_ReplyV
#define AMUDP_ReplyI AMVIA_ReplyIV
#define AMUDP_ReplyXfer AMVIA_ReplyXferV
#define AMUDP_RequestVA AMVIA_RequestVA
#define AMUDP_RequestIVA AMVIA_RequestIVA
#define AMUDP_RequestXferVA AMVIA_RequestXferVA
#define AMUDP_ReplyVA AMVIA_ReplyVA
#define AMUDP_ReplyIVA AMVIA_ReplyIVA
#define AMUDP_ReplyXferVA AMVIA_ReplyXferVA
#define AMMPI_Request AMVIA_RequestV
#define AMMPI_RequestI AMVIA_RequestIV
#define AMMPI_RequestXfer AMVIA_RequestXferV
#define AMMPI_Reply AMVIA_ReplyV
#define AMMPI_ReplyI AMVIA_ReplyIV
#define AMMPI_ReplyXfer AMVIA_ReplyXferV
#define AMMPI_RequestVA AMVIA_RequestVA
#define AMMPI_RequestIVA AMVIA_RequestIVA
#define AMMPI_RequestXferVA AMVIA_RequestXferVA
#define AMMPI_ReplyVA AMVIA_ReplyVA
#define AMMPI_ReplyIVA AMVIA_ReplyIVA
#define AMMPI_ReplyXferVA AMVIA_ReplyXferVA
#endif /* AMVIA_NO_AMUDP_NAMES */

#ifdef __cplusplus
}
#endif
#endif /* VIASTACK_AM_AMX_H */
