// boot_test_child - a job program for launcher_test: does what argv says so the
// tests can provoke each launcher/bootstrap behaviour and check real outcomes.
//
//   env                      print rank/size/job and VIPL_* as the program sees them
//   exit R CODE [wait]       rank R exits CODE after the first barrier; the others
//                            pause (or, with "wait", block in a second barrier)
//   kill R SIG               every rank creates its own file viastack-<job>-test<r>;
//                            rank 0 prints the job id and how many job files it
//                            sees ("files=N"); after a barrier rank R
//                            raises SIG, the others block in a barrier
//   hang [ignore-term]       every rank prints "ready rank=R pid=P job=J", pauses forever
//   abort R CODE             rank R calls vipl_boot_abort(CODE); the others block in
//                            a barrier and report what it returned and how fast
//   abort-busy R CODE        as abort, but rank 0 is busy (sleeps 3 s) outside any
//                            collective meanwhile, then reports its barrier too
//   boot-timeout R           rank R never enters the barrier; the others report
//                            the timeout error and exit 5
//   print LINES              each rank prints LINES lines to stdout and to stderr
//   gather ITERS             allgather ITERS times with varying data, exit 0 if right
//   barrier-time ITERS       rank 0 prints the mean time of ITERS barriers in us
//   idle-wait MS             rank 0 sleeps MS ms before the barrier; every rank then
//                            prints the CPU time it used ("cpu-ms R T")
#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "vipl_boot.h"

namespace {

int usage() {
    std::fprintf(stderr, "boot_test_child: bad arguments (see the source for the actions)\n");
    return 64;
}

void init_or_die() {
    int rc = vipl_boot_init();
    if (rc != VIPL_BOOT_OK) {
        std::fprintf(stderr, "boot_test_child: vipl_boot_init failed: %d\n", rc);
        std::exit(70);
    }
}

// Creates /dev/shm/viastack-<job>-<what> the way a provider would.
void create_job_file(const std::string &what) {
    std::string name = std::string("/viastack-") + vipl_boot_job() + "-" + what;
    int fd = shm_open(name.c_str(), O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ftruncate(fd, 4096) != 0) {
        std::perror("shm_open");
        std::exit(71);
    }
    close(fd);
}

int count_job_files() {
    std::string prefix = std::string("viastack-") + vipl_boot_job() + "-";
    int n = 0;
    if (DIR *d = opendir("/dev/shm")) {
        while (struct dirent *e = readdir(d)) n += std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0;
        closedir(d);
    }
    return n;
}

void pause_forever() {
    for (;;) pause();
}

int gather(int iters) {
    const int n = vipl_boot_size(), me = vipl_boot_rank();
    std::vector<unsigned char> mine(VIPL_BOOT_MAX_ITEM), all(size_t(n) * VIPL_BOOT_MAX_ITEM);
    for (int it = 0; it < iters; ++it) {
        size_t len = size_t(it * 131) % (VIPL_BOOT_MAX_ITEM + 1);
        for (size_t i = 0; i < len; ++i) mine[i] = static_cast<unsigned char>(me * 7 + it * 3 + i);
        if (vipl_boot_allgather(mine.data(), len, all.data()) != VIPL_BOOT_OK) return 1;
        for (int r = 0; r < n; ++r)
            for (size_t i = 0; i < len; ++i)
                if (all[size_t(r) * len + i] != static_cast<unsigned char>(r * 7 + it * 3 + i)) {
                    std::fprintf(stderr, "gather: wrong byte from rank %d at iter %d\n", r, it);
                    return 1;
                }
    }
    return vipl_boot_finalize() == VIPL_BOOT_OK ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
    if (argc < 2) return usage();
    const std::string action = argv[1];
    auto arg = [&](int i) { return i < argc ? std::atoi(argv[i]) : -1; };

    if (action == "env") {
        init_or_die();
        const char *prov = std::getenv("VIPL_PROVIDER");
        const char *mode = std::getenv("VIPL_NICFW_MODE");
        std::printf("rank=%d size=%d job=%s provider=%s mode=%s\n", vipl_boot_rank(), vipl_boot_size(), vipl_boot_job(),
                    prov ? prov : "-", mode ? mode : "-");
        return vipl_boot_finalize() == VIPL_BOOT_OK ? 0 : 1;
    }
    if (action == "print") {
        init_or_die();
        for (int i = 0; i < arg(2); ++i) {
            std::printf("out %d of rank %d\n", i, vipl_boot_rank());
            std::fprintf(stderr, "err %d of rank %d\n", i, vipl_boot_rank());
        }
        return 0;
    }
    if (action == "nested") { // a library's init/finalize inside the program's
        init_or_die();
        if (vipl_boot_init() != VIPL_BOOT_OK || vipl_boot_finalize() != VIPL_BOOT_OK) return 1;
        int mine = vipl_boot_rank(), all[64] = {};
        if (vipl_boot_barrier() != VIPL_BOOT_OK || vipl_boot_allgather(&mine, sizeof mine, all) != VIPL_BOOT_OK) {
            std::fprintf(stderr, "rank %d: collectives failed after a library's vipl_boot_finalize\n", mine);
            return 2;
        }
        for (int r = 0; r < vipl_boot_size() && r < 64; ++r)
            if (all[r] != r) return 3;
        if (vipl_boot_finalize() != VIPL_BOOT_OK) return 4;
        return vipl_boot_barrier() == VIPL_BOOT_ERR_NOT_INIT ? 0 : 5;
    }
    if (action == "gather") {
        init_or_die();
        return gather(arg(2));
    }
    if (action == "hang") {
        // "hang ignore-term": only SIGKILL ends us (tests the launcher's escalation).
        if (argc > 2 && std::string(argv[2]) == "ignore-term") signal(SIGTERM, SIG_IGN);
        const char *job = std::getenv("VIASTACK_JOB");
        const char *rank = std::getenv("VIASTACK_RANK");
        std::printf("ready rank=%s pid=%d job=%s\n", rank ? rank : "-", getpid(), job ? job : "-");
        std::fflush(stdout);
        pause_forever();
    }
    init_or_die();
    const int me = vipl_boot_rank();
    if (action == "exit") {
        if (vipl_boot_barrier() != VIPL_BOOT_OK) return 1;
        if (me == arg(2)) return arg(3);
        if (argc > 4 && std::string(argv[4]) == "wait") return vipl_boot_barrier() == VIPL_BOOT_OK ? 0 : 1;
        pause_forever();
    }
    if (action == "kill") {
        create_job_file("test" + std::to_string(me));
        if (me == 0) {
            std::printf("job=%s\n", vipl_boot_job());
            std::fflush(stdout);
        }
        if (vipl_boot_barrier() != VIPL_BOOT_OK) return 1;
        if (me == 0) {
            std::printf("files=%d\n", count_job_files());
            std::fflush(stdout);
        }
        if (vipl_boot_barrier() != VIPL_BOOT_OK) return 1;
        if (me == arg(2)) raise(arg(3));
        vipl_boot_barrier();
        pause_forever();
    }
    if (action == "abort" || action == "abort-busy") {
        if (vipl_boot_barrier() != VIPL_BOOT_OK) return 1;
        if (me == arg(2)) vipl_boot_abort(arg(3), "test abort reason");
        // The pause is the scenario: rank 0 is busy (not in the barrier) when the abort comes.
        if (me == 0 && action == "abort-busy") usleep(3'000'000);
        auto t0 = std::chrono::steady_clock::now();
        int rc = vipl_boot_barrier();
        long ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
        std::fprintf(stderr, "peer %d: barrier returned %d after %ld ms\n", me, rc, ms);
        return 0;
    }
    if (action == "barrier-time") {
        const int iters = arg(2);
        vipl_boot_barrier();
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < iters; ++i)
            if (vipl_boot_barrier() != VIPL_BOOT_OK) return 1;
        double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
        if (me == 0) std::printf("barrier-us %.2f\n", us / iters);
        return vipl_boot_finalize() == VIPL_BOOT_OK ? 0 : 1;
    }
    if (action == "idle-wait") {
        // The pause is the scenario: the others must wait for rank 0 without using CPU.
        if (me == 0) usleep(static_cast<useconds_t>(arg(2)) * 1000);
        if (vipl_boot_barrier() != VIPL_BOOT_OK) return 1;
        struct rusage ru {};
        getrusage(RUSAGE_SELF, &ru);
        long cpu_ms =
            (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
        std::printf("cpu-ms %d %ld\n", me, cpu_ms);
        return vipl_boot_finalize() == VIPL_BOOT_OK ? 0 : 1;
    }
    if (action == "boot-timeout") {
        if (me == arg(2)) pause_forever();
        int rc = vipl_boot_barrier();
        std::fprintf(stderr, "peer %d: barrier returned %d\n", me, rc);
        return rc == VIPL_BOOT_ERR_TIMEOUT ? 5 : 6;
    }
    return usage();
}
