// fuzz_support.hpp - what the fuzz targets share: reading typed values off the
// input, stating what must hold (a failed FUZZ_ASSERT aborts with a message, which
// libFuzzer reports as a crash and saves the input), and marking memory the code
// under test must not read (ASan poisoning; a no-op without ASan, where the
// explicit FUZZ_ASSERTs still check every bound).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__SANITIZE_ADDRESS__)
#define VIASTACK_FUZZ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VIASTACK_FUZZ_ASAN 1
#endif
#endif
#ifdef VIASTACK_FUZZ_ASAN
#include <sanitizer/asan_interface.h>
#define FUZZ_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define FUZZ_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define FUZZ_POISON(p, n) ((void)(p), (void)(n))
#define FUZZ_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define FUZZ_ASSERT(cond, ...)                                                                                         \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            std::fprintf(stderr, "%s:%d: invariant violated: %s: ", __FILE__, __LINE__, #cond);                        \
            std::fprintf(stderr, __VA_ARGS__);                                                                         \
            std::fputc('\n', stderr);                                                                                  \
            std::abort();                                                                                              \
        }                                                                                                              \
    } while (0)

namespace fuzz {

// Takes fixed-size values off the front of the input; zeros once it runs out.
struct Input {
    const uint8_t *p;
    size_t n;
    template <class T>
    T take() {
        T v{};
        const size_t k = n < sizeof(T) ? n : sizeof(T);
        std::memcpy(&v, p, k);
        p += k;
        n -= k;
        return v;
    }
};

} // namespace fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
