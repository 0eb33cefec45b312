/* amx_names.c - every public function and variable name of AMUDP's and
 * AMMPI's core and SPMD headers (amudp.h, amudp_spmd.h, ammpi.h,
 * ammpi_spmd.h) that viastack provides, by address, built against the
 * installed package through the two-line forwarding headers in amx/.
 * Names left out (UDP and MPI knobs, AMUDP's spawn functions) are listed
 * with the reasons in docs/am.md; a program using one fails to compile here
 * rather than at run time.  Run as a job of one, it prints the count. */
#include <ammpi.h>
#include <ammpi_spmd.h>
#include <amudp.h>
#include <amudp_spmd.h>
#include <stdio.h>

typedef void (*any_fn)(void);
#define F(name) (any_fn)(name)

static const any_fn functions[] = {
    /* AM-2 core, as both headers declare it */
    F(AM_MaxSegLength),
    F(AM_Init),
    F(AM_Terminate),
    F(AM_AllocateBundle),
    F(AM_AllocateEndpoint),
    F(AM_FreeBundle),
    F(AM_FreeEndpoint),
    F(AM_MoveEndpoint),
    F(AM_GetSeg),
    F(AM_SetSeg),
    F(AM_GetTag),
    F(AM_SetTag),
    F(AM_Map),
    F(AM_MapAny),
    F(AM_UnMap),
    F(AM_GetTranslationInuse),
    F(AM_GetTranslationTag),
    F(AM_GetTranslationName),
    F(AM_GetNumTranslations),
    F(AM_SetNumTranslations),
    F(AM_SetExpectedResources),
    F(_AM_SetHandler),
    F(_AM_SetHandlerAny),
    F(AM_GetEventMask),
    F(AM_SetEventMask),
    F(AM_WaitSema),
    F(AM_GetSourceEndpoint),
    F(AM_GetDestEndpoint),
    F(AM_GetMsgTag),
    F(AM_Poll),
    /* AMUDP core */
    F(AMUDP_GetSourceId),
    F(AMUDP_GetEndpointStatistics),
    F(AMUDP_ResetEndpointStatistics),
    F(AMUDP_AggregateStatistics),
    F(AMUDP_DumpStatistics),
    F(AMUDP_FatalErr),
    F(AMUDP_Request),
    F(AMUDP_RequestI),
    F(AMUDP_RequestXfer),
    F(AMUDP_Reply),
    F(AMUDP_ReplyI),
    F(AMUDP_ReplyXfer),
    F(AMUDP_RequestVA),
    F(AMUDP_RequestIVA),
    F(AMUDP_RequestXferVA),
    F(AMUDP_ReplyVA),
    F(AMUDP_ReplyIVA),
    F(AMUDP_ReplyXferVA),
    F(AMUDP_SetHandlerCallbacks),
    /* AMMPI core */
    F(AMMPI_GetSourceId),
    F(AMMPI_Map),
    F(AMMPI_MapAny),
    F(AMMPI_GetEndpointStatistics),
    F(AMMPI_ResetEndpointStatistics),
    F(AMMPI_AggregateStatistics),
    F(AMMPI_DumpStatistics),
    F(AMMPI_Request),
    F(AMMPI_RequestI),
    F(AMMPI_RequestXfer),
    F(AMMPI_Reply),
    F(AMMPI_ReplyI),
    F(AMMPI_ReplyXfer),
    F(AMMPI_RequestVA),
    F(AMMPI_RequestIVA),
    F(AMMPI_RequestXferVA),
    F(AMMPI_ReplyVA),
    F(AMMPI_ReplyIVA),
    F(AMMPI_ReplyXferVA),
    F(AMMPI_SetHandlerCallbacks),
    /* amx */
    F(AMX_GetEndpointStatistics),
    F(AMX_ResetEndpointStatistics),
    F(AMX_AggregateStatistics),
    F(AMX_DumpStatistics),
    F(AMX_FatalErr),
    /* AM-2 GetXfer */
    F(AM_GetXfer0),
    F(AM_GetXfer1),
    F(AM_GetXfer8),
    F(AM_GetXfer16),
    /* AMUDP SPMD */
    F(AMUDP_SPMDStartup),
    F(AMUDP_SPMDExit),
    F(AMUDP_SPMDSetExitCallback),
    F(AMUDP_SPMDIsWorker),
    F(AMUDP_SPMDNumProcs),
    F(AMUDP_SPMDMyProc),
    F(AMUDP_SPMDBarrier),
    F(AMUDP_SPMDgetenvMaster),
    F(AMUDP_SPMDAllGather),
    /* AMMPI SPMD */
    F(AMMPI_SPMDStartup),
    F(AMMPI_SPMDExit),
    F(AMMPI_SPMDSetExitCallback),
    F(AMMPI_SPMDSetThreadMode),
    F(AMMPI_SPMDIsWorker),
    F(AMMPI_SPMDNumProcs),
    F(AMMPI_SPMDMyProc),
    F(AMMPI_SPMDBarrier),
    F(AMMPI_SPMDAllGather),
    F(AMMPI_SPMDBroadcast),
    /* amx SPMD (AMX_SPMDStartup is a function-like macro in both originals) */
    F(AMX_SPMDgetenvMaster),
    F(AMX_SPMDBarrier),
    F(AMX_SPMDNumProcs),
    F(AMX_SPMDMyProc),
    F(AMX_SPMDExit),
    F(AMX_SPMDSetExitCallback),
    F(AMX_SPMDIsWorker),
    F(AMX_SPMDAllGather),
};

static const void *variables[] = {
    &AMUDP_VerboseErrors, &AMUDP_SilentMode,  &AMUDP_initial_stats,   &AMUDP_SPMDkillmyprocess,
    &AMMPI_VerboseErrors, &AMMPI_SilentMode,  &AMMPI_initial_stats,   &AMMPI_SPMDkillmyprocess,
    &AMX_VerboseErrors,   &AMX_initial_stats, &AMX_SPMDkillmyprocess,
};

/* Types and constants, used as the originals' programs use them. */
static int types_and_constants(void) {
    amudp_stats_t s1;
    ammpi_stats_t s2;
    amx_stats_t s3;
    amudp_handler_fn_t h1 = 0;
    ammpi_handler_fn_t h2 = 0;
    amx_handler_fn_t h3 = 0;
    amudp_spawnfn_t sp1 = 0;
    spawnfn_t sp2 = 0;
    amudp_exitcallback_t cb = 0;
    AMUDP_preHandlerCallback_t pre1 = 0;
    AMMPI_postHandlerCallback_t post2 = 0;
    amudp_category_t c1 = amudp_Long;
    ammpi_category_t c2 = ammpi_Medium;
    int sum = AMUDP_MAX_SHORT + AMMPI_MAX_SHORT + (AMUDP_MAX_MEDIUM > 0) + (AMMPI_MAX_LONG > 0) +
        (AMUDP_MAX_NUMHANDLERS == 256) + (AMMPI_MAX_NUMTRANSLATIONS > 0) + (AMUDP_MAX_SEGLENGTH > 0) +
        (AMMPI_MAX_NETWORKDEPTH > 0) + (AMUDP_MAX_SPMDPROCS > 0) + amudp_NumCategories + ammpi_NumCategories + (int)c1 +
        (int)c2 + AM_SEQ + AM_NOTEMPTY;
    (void)s1, (void)s2, (void)s3, (void)h1, (void)h2, (void)h3, (void)sp1, (void)sp2, (void)cb, (void)pre1, (void)post2;
    return sum;
}

int main(void) {
    size_t nf = sizeof functions / sizeof functions[0], nv = sizeof variables / sizeof variables[0];
    for (size_t i = 0; i < nf; i++)
        if (!functions[i]) return 1;
    for (size_t i = 0; i < nv; i++)
        if (!variables[i]) return 1;
    printf("amx_names: %zu functions, %zu variables, constants %d\n", nf, nv, types_and_constants());
    return 0;
}
