/* isolation_probe - run by isolation_test as a throw-away second user (setpriv):
 * acts as another local user attacking a job's shared-memory files.
 *
 *   isolation_probe open PATH...      try to open (read, write, read-write) and
 *                                     map every PATH; exit 0 if every attempt
 *                                     was refused, 3 if any succeeded
 *   isolation_probe plant-file PATH   pre-create PATH as this user, mode 0666
 *   isolation_probe plant-link PATH TARGET   pre-create PATH as a symlink to TARGET
 * Plain C and libc only: it is copied to a directory the other user can read. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int try_open(const char *path) {
    static const int modes[] = {O_RDONLY, O_WRONLY, O_RDWR};
    static const char *names[] = {"O_RDONLY", "O_WRONLY", "O_RDWR"};
    int opened = 0;
    for (int i = 0; i < 3; ++i) {
        int fd = open(path, modes[i] | O_CLOEXEC);
        if (fd < 0) {
            printf("probe: uid %d: open(%s, %s) refused: %s\n", (int)getuid(), path, names[i], strerror(errno));
            continue;
        }
        opened = 1;
        printf("probe: uid %d: open(%s, %s) SUCCEEDED\n", (int)getuid(), path, names[i]);
        void *p = mmap(NULL, 4096, modes[i] == O_RDWR ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
        if (p != MAP_FAILED) {
            printf("probe: ... and mapped it\n");
            munmap(p, 4096);
        }
        close(fd);
    }
    return opened;
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "open") == 0) {
        int any = 0;
        for (int i = 2; i < argc; ++i) any |= try_open(argv[i]);
        return any ? 3 : 0;
    }
    if (argc == 3 && strcmp(argv[1], "plant-file") == 0) {
        umask(0);
        int fd = open(argv[2], O_RDWR | O_CREAT | O_EXCL, 0666);
        if (fd < 0) {
            fprintf(stderr, "probe: cannot create %s: %s\n", argv[2], strerror(errno));
            return 1;
        }
        close(fd);
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "plant-link") == 0) {
        if (symlink(argv[3], argv[2]) != 0) {
            fprintf(stderr, "probe: cannot link %s: %s\n", argv[2], strerror(errno));
            return 1;
        }
        return 0;
    }
    fprintf(stderr, "usage: isolation_probe open PATH... | plant-file PATH | plant-link PATH TARGET\n");
    return 2;
}
