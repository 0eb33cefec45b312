// replay_main.cpp - runs a fuzz target's LLVMFuzzerTestOneInput on files (or every
// file of directories) given on the command line, for builds without libFuzzer:
// the committed corpora and regression inputs run as ordinary ctest tests in
// every build, the sanitizer builds included.
#include <dirent.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_support.hpp"

namespace {
int run_file(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
        return 1;
    }
    std::vector<unsigned char> buf((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(buf.data(), buf.size());
    return 0;
}
} // namespace

int main(int argc, char **argv) {
    int files = 0, bad = 0;
    for (int i = 1; i < argc; ++i) {
        struct stat st {};
        if (stat(argv[i], &st) != 0) {
            std::fprintf(stderr, "replay: no such file or directory: %s\n", argv[i]);
            return 2;
        }
        if (!S_ISDIR(st.st_mode)) {
            bad += run_file(argv[i]);
            ++files;
            continue;
        }
        DIR *d = opendir(argv[i]);
        while (dirent *e = d ? readdir(d) : nullptr) {
            if (e->d_name[0] == '.') continue;
            bad += run_file(std::string(argv[i]) + "/" + e->d_name);
            ++files;
        }
        if (d) closedir(d);
    }
    std::printf("replay: %d inputs ran, every invariant held\n", files);
    return bad || files == 0 ? 1 : 0;
}
