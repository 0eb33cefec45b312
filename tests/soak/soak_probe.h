/* soak_probe.h - what a soak rank measures about its own process, read from
 * /proc (Linux): open file descriptors, resident and peak resident memory,
 * and the job's shared-memory files.  Header-only C, used by am_soak.c and
 * splitc_soak.c; soak_driver.cpp parses the lines they print. */
#ifndef VIASTACK_SOAK_PROBE_H
#define VIASTACK_SOAK_PROBE_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Open descriptors of this process (entries of /proc/self/fd, minus the one
 * opendir itself holds while counting); -1 if /proc is not readable. */
static int soak_fd_count(void) {
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;
    if (!d) return -1;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n - 1;
}

/* A "Vm...:  <n> kB" field of /proc/self/status in kB; -1 if absent. */
static long soak_status_kb(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t len = strlen(field);
    long kb = -1;
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, len) == 0 && line[len] == ':') {
            kb = strtol(line + len + 1, NULL, 10);
            break;
        }
    fclose(f);
    return kb;
}
static long soak_rss_kb(void) { return soak_status_kb("VmRSS"); }
static long soak_hwm_kb(void) { return soak_status_kb("VmHWM"); }

/* Number of /dev/shm files named viastack-<job>-* (this job's wire and boot
 * segments) while the job runs, so the driver knows that the "none left
 * afterwards" check looked for names that did exist. */
static int soak_job_shm_files(void) {
    const char *job = getenv("VIASTACK_JOB");
    char prefix[200];
    DIR *d;
    struct dirent *e;
    int n = 0;
    if (!job) return 0;
    snprintf(prefix, sizeof prefix, "viastack-%s-", job);
    d = opendir("/dev/shm");
    if (!d) return -1;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) n++;
    closedir(d);
    return n;
}

/* Mappings of /dev/shm/viastack-* files in this process (/proc/self/maps
 * lines): non-zero while the job runs (the wire, the boot segment), and 0
 * once the layers are finalized, or they leaked a shared-memory mapping. */
static int soak_shm_mappings(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    int n = 0;
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "/dev/shm/viastack-")) n++;
    fclose(f);
    return n;
}

/* Random numbers for the shuffles (xorshift64*: the same sequence on every
 * run for a seed, no shared state with the program). */
static unsigned long long soak_rand(unsigned long long *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}
/* Fisher-Yates shuffle of n ints. */
static void soak_shuffle(int *a, long n, unsigned long long seed) {
    unsigned long long s = seed * 0x9E3779B97F4A7C15ull + 1;
    long i;
    for (i = n - 1; i > 0; i--) {
        long j = (long)(soak_rand(&s) % (unsigned long long)(i + 1));
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

#endif
