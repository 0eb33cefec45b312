// global_ptr.cpp - the C++ embedding (splitc/splitc.hpp): global_ptr<T> to
// another processor's static data, read and written like a reference.
//
//   vipl-run -n 3 ./global_ptr
//
// `counter` is static data: linked non-PIE (viastack::splitc_main does), it
// is at the same address in every process, so toglobal(p, &counter) names
// processor p's copy.  Every processor adds its rank + 1 to processor 0's
// counter under a turn-taking barrier loop; processor 0 checks the sum.
#include <cstdio>

#include <splitc/splitc.hpp>

static long counter;

extern "C" int splitc_main(int, char **) {
    using splitc::myproc;
    using splitc::procs;
    splitc::global_ptr<long> root = splitc::toglobal(0, &counter);
    for (int turn = 0; turn < procs(); ++turn) {
        if (turn == myproc()) *root += myproc() + 1; // a remote read, then a remote write
        splitc::barrier();
    }
    long want = long(procs()) * (procs() + 1) / 2;
    if (myproc() == 0) std::printf("global_ptr: counter on processor 0 = %ld (want %ld)\n", long(*root), want);
    return long(*root) == want ? 0 : 1;
}
