/* viastack_log.h - the C face of viastack's diagnostics (docs/logging.md).
 *
 * Every library and tool of viastack reports errors and warnings through one
 * facility (vipl/log): levels from $VIASTACK_LOG (off|error|warn|info|debug|
 * trace, default warn), a "[rank R] " prefix once the job rank is known, one
 * write(2) per line on stderr.  C sources (compiler-rt/src/rt_main.c) use
 * these; C++ sources use viastack_log.hpp.  Not on any hot path. */
#ifndef VIASTACK_LOG_H
#define VIASTACK_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

/* Layers: the logger names vipl, nicfw, verbs, boot, launcher, am, splitc, logp, fm, bip. */
enum {
    VIASTACK_LOG_VIPL = 0,
    VIASTACK_LOG_NICFW,
    VIASTACK_LOG_VERBS,
    VIASTACK_LOG_BOOT,
    VIASTACK_LOG_LAUNCHER,
    VIASTACK_LOG_AM,
    VIASTACK_LOG_SPLITC,
    VIASTACK_LOG_LOGP,
    VIASTACK_LOG_FM,
    VIASTACK_LOG_BIP,
    VIASTACK_LOG_NLAYERS
};
/* Levels, most verbose first (the spdlog order). */
enum {
    VIASTACK_LOG_TRACE = 0,
    VIASTACK_LOG_DEBUG,
    VIASTACK_LOG_INFO,
    VIASTACK_LOG_WARN,
    VIASTACK_LOG_ERROR,
    VIASTACK_LOG_OFF
};

/* Nonzero if a message of this level from this layer would be printed. */
int viastack_log_enabled(int layer, int level);
/* Prints one printf-formatted line (no trailing newline needed). */
void viastack_log(int layer, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The job rank for the "[rank R] " prefix (the boot layer calls it; -1 = none). */
void viastack_log_set_rank(int rank);

#ifdef __cplusplus
}
#endif
#endif
