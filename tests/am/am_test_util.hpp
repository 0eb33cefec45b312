// am_test_util.hpp - helpers shared by the AM suites: calling the public
// N-argument forms (AM_Request0..16, ...) with a runtime N, handlers with N
// int32 arguments generated per N, argument patterns, and bounded polling.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <utility>

#include "am.h"

namespace amtest {

// ---- runtime N -> AM_<Form>N(prefix..., v[0], ..., v[N-1]) -------------------------
#define AMT_V1 , v[0]
#define AMT_V2 AMT_V1, v[1]
#define AMT_V3 AMT_V2, v[2]
#define AMT_V4 AMT_V3, v[3]
#define AMT_V5 AMT_V4, v[4]
#define AMT_V6 AMT_V5, v[5]
#define AMT_V7 AMT_V6, v[6]
#define AMT_V8 AMT_V7, v[7]
#define AMT_V9 AMT_V8, v[8]
#define AMT_V10 AMT_V9, v[9]
#define AMT_V11 AMT_V10, v[10]
#define AMT_V12 AMT_V11, v[11]
#define AMT_V13 AMT_V12, v[12]
#define AMT_V14 AMT_V13, v[13]
#define AMT_V15 AMT_V14, v[14]
#define AMT_V16 AMT_V15, v[15]
#define AMT_SWITCH(N, FORM, ...)                                                                                       \
    switch (N) {                                                                                                       \
    case 0: return FORM##0(__VA_ARGS__);                                                                               \
    case 1: return FORM##1(__VA_ARGS__ AMT_V1);                                                                        \
    case 2: return FORM##2(__VA_ARGS__ AMT_V2);                                                                        \
    case 3: return FORM##3(__VA_ARGS__ AMT_V3);                                                                        \
    case 4: return FORM##4(__VA_ARGS__ AMT_V4);                                                                        \
    case 5: return FORM##5(__VA_ARGS__ AMT_V5);                                                                        \
    case 6: return FORM##6(__VA_ARGS__ AMT_V6);                                                                        \
    case 7: return FORM##7(__VA_ARGS__ AMT_V7);                                                                        \
    case 8: return FORM##8(__VA_ARGS__ AMT_V8);                                                                        \
    case 9: return FORM##9(__VA_ARGS__ AMT_V9);                                                                        \
    case 10: return FORM##10(__VA_ARGS__ AMT_V10);                                                                     \
    case 11: return FORM##11(__VA_ARGS__ AMT_V11);                                                                     \
    case 12: return FORM##12(__VA_ARGS__ AMT_V12);                                                                     \
    case 13: return FORM##13(__VA_ARGS__ AMT_V13);                                                                     \
    case 14: return FORM##14(__VA_ARGS__ AMT_V14);                                                                     \
    case 15: return FORM##15(__VA_ARGS__ AMT_V15);                                                                     \
    case 16: return FORM##16(__VA_ARGS__ AMT_V16);                                                                     \
    default: return -1;                                                                                                \
    }

inline int request(int n, ep_t ep, int dest, handler_t h, const int32_t *v) { AMT_SWITCH(n, AM_Request, ep, dest, h) }
inline int request_i(int n, ep_t ep, int dest, handler_t h, void *src, size_t nb, const int32_t *v) {
    AMT_SWITCH(n, AM_RequestI, ep, dest, h, src, nb)
}
inline int request_xfer(int n, ep_t ep, int dest, handler_t h, void *src, size_t nb, uintptr_t off, const int32_t *v) {
    AMT_SWITCH(n, AM_RequestXfer, ep, dest, off, h, src, nb)
}
inline int request_xfer_async(int n, ep_t ep, int dest, handler_t h, void *src, size_t nb, uintptr_t off,
                              const int32_t *v) {
    AMT_SWITCH(n, AM_RequestXferAsync, ep, dest, off, h, src, nb)
}
inline int reply(int n, void *tok, handler_t h, const int32_t *v) { AMT_SWITCH(n, AM_Reply, tok, h) }
inline int reply_i(int n, void *tok, handler_t h, void *src, size_t nb, const int32_t *v) {
    AMT_SWITCH(n, AM_ReplyI, tok, h, src, nb)
}
inline int reply_xfer(int n, void *tok, handler_t h, void *src, size_t nb, uintptr_t off, const int32_t *v) {
    AMT_SWITCH(n, AM_ReplyXfer, tok, off, h, src, nb)
}

// ---- handlers with N int32 arguments ------------------------------------------------
// Handlers of kind K (0 short request, 1 short reply, 2 bulk request, 3 bulk
// reply) record what they got in a Received and call g_on[K].
enum Kind { kShortReq = 0, kShortRep = 1, kBulkReq = 2, kBulkRep = 3 };
struct Received {
    void *token;
    void *buf;
    size_t nbytes;
    int nargs;
    int32_t args[17];
};
using Callback = std::function<void(const Received &)>;
inline Callback g_on[4]; // set by each test

template <size_t>
using Arg = int32_t;

template <int K, size_t N, size_t... I>
void short_handler(void *token, Arg<I>... a) {
    Received r{token, nullptr, 0, int(N), {a..., 0}};
    if (g_on[K]) g_on[K](r);
}
template <int K, size_t N, size_t... I>
void bulk_handler(void *token, void *buf, size_t nbytes, Arg<I>... a) {
    Received r{token, buf, nbytes, int(N), {a..., 0}};
    if (g_on[K]) g_on[K](r);
}
template <int K, size_t N>
amx_handler_fn_t handler_fn() {
    return []<size_t... I>(std::index_sequence<I...>) {
        if constexpr (K == kShortReq || K == kShortRep)
            return reinterpret_cast<amx_handler_fn_t>(&short_handler<K, N, I...>);
        else return reinterpret_cast<amx_handler_fn_t>(&bulk_handler<K, N, I...>);
    }
    (std::make_index_sequence<N>{});
}
template <int K, size_t... N>
std::array<amx_handler_fn_t, 17> handler_table(std::index_sequence<N...>) {
    return {handler_fn<K, N>()...};
}
// Handler index base + N gets the N-argument handler of kind K, N = 0..16.
template <int K>
void set_handlers(ep_t ep, int base) {
    auto t = handler_table<K>(std::make_index_sequence<17>{});
    for (int n = 0; n <= 16; n++) ASSERT_EQ(_AM_SetHandler(ep, handler_t(base + n), t[size_t(n)]), AM_OK);
}
// The handler-index layout every suite uses.
constexpr int kHShortReq = 10, kHShortRep = 30, kHBulkReq = 50, kHBulkRep = 70;
inline void set_all_handlers(ep_t ep) {
    set_handlers<kShortReq>(ep, kHShortReq);
    set_handlers<kShortRep>(ep, kHShortRep);
    set_handlers<kBulkReq>(ep, kHBulkReq);
    set_handlers<kBulkRep>(ep, kHBulkRep);
}

// ---- returned-message handler (handler 0) --------------------------------------------
struct Refusal {
    int count = 0;
    int status = 0;
    op_t opcode = 0;
    int handler = -1;
    tag_t tag = 0;
};
inline Refusal g_refusal;
inline void refusal_handler(int status, op_t opcode, void *token) {
    g_refusal.count++;
    g_refusal.status = status;
    g_refusal.opcode = opcode;
    tag_t t = 0;
    AM_GetMsgTag(token, &t);
    g_refusal.tag = t;
}

// ---- patterns and polling ----------------------------------------------------------------
inline int32_t arg_value(int src, int n, int i, int round) {
    return int32_t(0x5a000000u ^ (uint32_t(src) << 16) ^ (uint32_t(n) << 8) ^ uint32_t(i) ^ (uint32_t(round) << 20));
}
inline uint8_t byte_value(uint32_t seed, size_t i) { return uint8_t((seed * 131u + i * 7u) ^ (i >> 8)); }
inline void fill(void *p, size_t n, uint32_t seed) {
    auto *b = static_cast<uint8_t *>(p);
    for (size_t i = 0; i < n; i++) b[i] = byte_value(seed, i);
}
inline size_t mismatches(const void *p, size_t n, uint32_t seed) {
    auto *b = static_cast<const uint8_t *>(p);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += b[i] != byte_value(seed, i);
    return bad;
}

// Polls eb until done() or the deadline; returns done().
inline bool poll_until(eb_t eb, const std::function<bool()> &done, double seconds = 60) {
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!done()) {
        AM_Poll(eb);
        if (std::chrono::steady_clock::now() > end) return done();
    }
    return true;
}

} // namespace amtest
