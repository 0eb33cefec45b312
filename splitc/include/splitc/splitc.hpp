// splitc.hpp - the C++ embedding of Split-C, a thin typed layer over the
// compiler-rt ABI (splitc_rt.h), in the spirit of UPC++'s global_ptr:
//
//   splitc::global_ptr<T>   (processor, address); p + n keeps the processor
//   splitc::global_ref<T>   what *p yields: converting reads, assigning writes
//   splitc::spread_ptr<T>   p + 1 is the same address on the next processor
//   splitc::spread_array<T> leading dimensions spread cyclically, trailing
//                           dimensions a block on the owner
//   get(dst, p), put(p, v), store(p, v), bulk_*, sync(), store_sync(n), ...
//
// Types are moved as their bytes (T must be trivially copyable).  Scalars of
// 1, 2, 4 or 8 bytes use the scalar calls; anything else the bulk ones.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <type_traits>

#include "splitc_rt.h"

namespace splitc {

inline int procs() { return splitc_procs(); }
inline int myproc() { return splitc_myproc(); }
// log2(procs()) when procs() is a power of two, otherwise -1 (Split-C's PROCSLOG).
inline int procslog() { return splitc_procslog(); }
inline bool on_one() { return splitc_on_one() != 0; }

template <class T>
class global_ref;

namespace detail {
template <class T>
constexpr bool scalar_v = std::is_trivially_copyable_v<T> &&
    (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8) && alignof(T) >= sizeof(T);
template <size_t N>
struct uint_of;
template <>
struct uint_of<1> {
    using type = uint8_t;
};
template <>
struct uint_of<2> {
    using type = uint16_t;
};
template <>
struct uint_of<4> {
    using type = uint32_t;
};
template <>
struct uint_of<8> {
    using type = uint64_t;
};
template <class T>
using bits_t = typename uint_of<sizeof(T)>::type;
template <class T>
bits_t<T> to_bits(const T &v) {
    return std::bit_cast<bits_t<T>>(v);
}
template <class T>
T from_bits(bits_t<T> b) {
    return std::bit_cast<T>(b);
}
} // namespace detail

// ---- global pointers -------------------------------------------------------------
template <class T>
class global_ptr {
    static_assert(std::is_trivially_copyable_v<T>, "global memory holds trivially copyable types");

public:
    using element_type = T;
    global_ptr() : g_{0} {}
    global_ptr(std::nullptr_t) : g_{0} {}
    explicit global_ptr(splitc_gptr_t g) : g_(g) {}
    global_ptr(int proc, T *local) : g_(splitc_toglobal(proc, local)) {}

    splitc_gptr_t raw() const { return g_; }
    int where() const { return splitc_toproc(g_); }
    T *local() const { return static_cast<T *>(splitc_tolocal(g_)); }
    bool is_local() const { return splitc_gptr_is_local(g_) != 0; }
    bool is_null() const { return splitc_gptr_is_null(g_) != 0; }
    explicit operator bool() const { return !is_null(); }

    global_ptr operator+(ptrdiff_t n) const { return global_ptr(splitc_gptr_add(g_, n * ptrdiff_t(sizeof(T)))); }
    global_ptr operator-(ptrdiff_t n) const { return *this + (-n); }
    ptrdiff_t operator-(const global_ptr &o) const {
        return ptrdiff_t(splitc_gptr_diff(g_, o.g_) / ptrdiff_t(sizeof(T)));
    }
    global_ptr &operator+=(ptrdiff_t n) { return *this = *this + n; }
    global_ptr &operator-=(ptrdiff_t n) { return *this = *this - n; }
    global_ptr &operator++() { return *this += 1; }
    global_ptr operator++(int) {
        global_ptr t = *this;
        *this += 1;
        return t;
    }
    global_ptr &operator--() { return *this -= 1; }
    bool operator==(const global_ptr &o) const { return g_.bits == o.g_.bits; }
    bool operator!=(const global_ptr &o) const { return g_.bits != o.g_.bits; }

    global_ref<T> operator*() const { return global_ref<T>(*this); }
    global_ref<T> operator[](ptrdiff_t i) const { return global_ref<T>(*this + i); }

    // Pointer to a member of the remote struct: p.field(&S::x).
    template <class M, class U = T>
    global_ptr<M> field(M U::*m) const {
        auto off = reinterpret_cast<std::uintptr_t>(&(reinterpret_cast<const volatile U *>(64)->*m)) - 64;
        return global_ptr<M>(splitc_gptr_add(g_, int64_t(off)));
    }
    template <class U>
    global_ptr<U> reinterpret() const {
        return global_ptr<U>(g_);
    }

private:
    splitc_gptr_t g_;
};

template <class T>
global_ptr<T> toglobal(int proc, T *p) {
    return global_ptr<T>(proc, p);
}
template <class T>
T *tolocal(global_ptr<T> p) {
    return p.local();
}
template <class T>
int toproc(global_ptr<T> p) {
    return p.where();
}

// ---- the memory operations -------------------------------------------------------
template <class T>
T read(global_ptr<T> p) {
    if constexpr (detail::scalar_v<T>) {
        if constexpr (sizeof(T) == 1) return detail::from_bits<T>(splitc_read_1(p.raw()));
        else if constexpr (sizeof(T) == 2) return detail::from_bits<T>(splitc_read_2(p.raw()));
        else if constexpr (sizeof(T) == 4) return detail::from_bits<T>(splitc_read_4(p.raw()));
        else return detail::from_bits<T>(splitc_read_8(p.raw()));
    } else {
        T v{};
        splitc_bulk_read(&v, p.raw(), sizeof(T));
        return v;
    }
}

template <class T>
void write(global_ptr<T> p, const T &v) {
    if constexpr (detail::scalar_v<T>) {
        if constexpr (sizeof(T) == 1) splitc_write_1(p.raw(), detail::to_bits(v));
        else if constexpr (sizeof(T) == 2) splitc_write_2(p.raw(), detail::to_bits(v));
        else if constexpr (sizeof(T) == 4) splitc_write_4(p.raw(), detail::to_bits(v));
        else splitc_write_8(p.raw(), detail::to_bits(v));
    } else {
        splitc_bulk_write(p.raw(), &v, sizeof(T));
    }
}

// dst := *p, complete at sync().
template <class T>
void get(T &dst, global_ptr<T> p) {
    if constexpr (detail::scalar_v<T>) {
        if constexpr (sizeof(T) == 1) splitc_get_1(&dst, p.raw());
        else if constexpr (sizeof(T) == 2) splitc_get_2(&dst, p.raw());
        else if constexpr (sizeof(T) == 4) splitc_get_4(&dst, p.raw());
        else splitc_get_8(&dst, p.raw());
    } else {
        splitc_bulk_get(&dst, p.raw(), sizeof(T));
    }
}

// *p := v, complete at sync().  A non-scalar v in global memory must not
// change before sync() (it may be sent without a copy).
template <class T>
void put(global_ptr<T> p, const T &v) {
    if constexpr (detail::scalar_v<T>) {
        if constexpr (sizeof(T) == 1) splitc_put_1(p.raw(), detail::to_bits(v));
        else if constexpr (sizeof(T) == 2) splitc_put_2(p.raw(), detail::to_bits(v));
        else if constexpr (sizeof(T) == 4) splitc_put_4(p.raw(), detail::to_bits(v));
        else splitc_put_8(p.raw(), detail::to_bits(v));
    } else {
        splitc_bulk_put(p.raw(), &v, sizeof(T));
    }
}

// *p :- v, counted at the target (store_sync / all_store_sync).
template <class T>
void store(global_ptr<T> p, const T &v) {
    if constexpr (detail::scalar_v<T>) {
        if constexpr (sizeof(T) == 1) splitc_store_1(p.raw(), detail::to_bits(v));
        else if constexpr (sizeof(T) == 2) splitc_store_2(p.raw(), detail::to_bits(v));
        else if constexpr (sizeof(T) == 4) splitc_store_4(p.raw(), detail::to_bits(v));
        else splitc_store_8(p.raw(), detail::to_bits(v));
    } else {
        splitc_bulk_store(p.raw(), &v, sizeof(T));
    }
}

// Bulk forms; counts are in elements of T.
template <class T>
void bulk_read(T *dst, global_ptr<T> src, size_t n) {
    splitc_bulk_read(dst, src.raw(), n * sizeof(T));
}
template <class T>
void bulk_write(global_ptr<T> dst, const T *src, size_t n) {
    splitc_bulk_write(dst.raw(), src, n * sizeof(T));
}
template <class T>
void bulk_get(T *dst, global_ptr<T> src, size_t n) {
    splitc_bulk_get(dst, src.raw(), n * sizeof(T));
}
template <class T>
void bulk_put(global_ptr<T> dst, const T *src, size_t n) {
    splitc_bulk_put(dst.raw(), src, n * sizeof(T));
}
template <class T>
void bulk_store(global_ptr<T> dst, const T *src, size_t n) {
    splitc_bulk_store(dst.raw(), src, n * sizeof(T));
}

// Call it splitc::sync(): with `using namespace splitc` a bare sync() is
// ambiguous with POSIX sync(2) from <unistd.h>.
inline void sync() { splitc_sync(); }
inline void store_sync(size_t nbytes) { splitc_store_sync(nbytes); }
inline void reset_store_sync() { splitc_reset_store_sync(); }
inline void all_store_sync() { splitc_all_store_sync(); }
inline void barrier() { splitc_barrier(); }
inline void poll() { splitc_poll(); }
inline double get_seconds() { return splitc_get_seconds(); }

// ---- global references -------------------------------------------------------------
template <class T>
class global_ref {
public:
    explicit global_ref(global_ptr<T> p) : p_(p) {}
    operator T() const { return read(p_); }
    const global_ref &operator=(const T &v) const {
        write(p_, v);
        return *this;
    }
    const global_ref &operator=(const global_ref &o) const {
        write(p_, T(o));
        return *this;
    }
    const global_ref &operator+=(const T &v) const {
        write(p_, T(read(p_) + v));
        return *this;
    }
    const global_ref &operator-=(const T &v) const {
        write(p_, T(read(p_) - v));
        return *this;
    }
    global_ptr<T> operator&() const { return p_; }

private:
    global_ptr<T> p_;
};

// ---- spread pointers -----------------------------------------------------------------
// stride: bytes between consecutive elements on one processor (sizeof(T), or
// a block size for spread arrays of blocks).
template <class T>
class spread_ptr {
public:
    spread_ptr() : s_{0}, stride_(sizeof(T)) {}
    explicit spread_ptr(splitc_sptr_t s, size_t stride = sizeof(T)) : s_(s), stride_(stride) {}

    splitc_sptr_t raw() const { return s_; }
    size_t stride() const { return stride_; }
    int where() const { return splitc_sptr_proc(s_); }
    T *local() const { return static_cast<T *>(splitc_sptr_addr(s_)); }
    global_ptr<T> to_global() const { return global_ptr<T>(splitc_sptr_to_gptr(s_)); }
    bool is_null() const { return splitc_gptr_is_null(splitc_sptr_to_gptr(s_)) != 0; }

    spread_ptr operator+(ptrdiff_t n) const { return spread_ptr(splitc_sptr_add(s_, n, stride_), stride_); }
    spread_ptr operator-(ptrdiff_t n) const { return *this + (-n); }
    ptrdiff_t operator-(const spread_ptr &o) const { return ptrdiff_t(splitc_sptr_diff(s_, o.s_, stride_)); }
    spread_ptr &operator+=(ptrdiff_t n) { return *this = *this + n; }
    spread_ptr &operator++() { return *this += 1; }
    spread_ptr operator++(int) {
        spread_ptr t = *this;
        *this += 1;
        return t;
    }
    bool operator==(const spread_ptr &o) const { return s_.bits == o.s_.bits; }
    bool operator!=(const spread_ptr &o) const { return s_.bits != o.s_.bits; }

    global_ref<T> operator*() const { return global_ref<T>(to_global()); }
    global_ref<T> operator[](ptrdiff_t i) const { return *(*this + i); }

private:
    splitc_sptr_t s_;
    size_t stride_;
};

// Collective: nblocks blocks of elems_per_block T; block b on processor b % PROCS.
template <class T>
spread_ptr<T> all_spread_malloc(size_t nblocks, size_t elems_per_block = 1) {
    return spread_ptr<T>(splitc_all_spread_malloc(nblocks, elems_per_block * sizeof(T)), elems_per_block * sizeof(T));
}
template <class T>
void all_spread_free(spread_ptr<T> p) {
    splitc_all_spread_free(p.raw());
}

// ---- spread arrays -------------------------------------------------------------------
// T a[d0]..[dk-1]::[t0]..[tm-1] in Split-C: the spread index (row-major over
// the d's) picks processor (index % PROCS) and row (index / PROCS); the block
// index (row-major over the t's) is an offset inside the owner's block.
// Construction and destruction are collective.
template <class T>
class spread_array {
public:
    static constexpr size_t kMaxDims = 4;

    spread_array(std::initializer_list<size_t> spread_dims, std::initializer_list<size_t> block_dims = {}) {
        if (spread_dims.size() == 0 || spread_dims.size() > kMaxDims || block_dims.size() > kMaxDims) {
            splitc_report_error(SPLITC_ERR_BAD_ARGUMENT, "spread_array: want 1..4 spread and 0..4 block dimensions");
            return;
        }
        for (size_t d : spread_dims) sd_[ns_++] = d, nblocks_ *= d;
        for (size_t d : block_dims) bd_[nb_++] = d, block_elems_ *= d;
        base_ = all_spread_malloc<T>(nblocks_, block_elems_);
    }
    ~spread_array() { release(); }
    spread_array(const spread_array &) = delete;
    spread_array &operator=(const spread_array &) = delete;

    // Collective; also done by the destructor while the runtime is up.
    void release() {
        if (!base_.is_null() && splitc_initialized()) all_spread_free(base_);
        base_ = spread_ptr<T>();
    }

    size_t blocks() const { return nblocks_; }
    size_t block_elems() const { return block_elems_; }
    size_t size() const { return nblocks_ * block_elems_; }
    // Spread pointer over whole blocks (p + 1: next block, next processor).
    spread_ptr<T> blocks_begin() const { return base_; }
    // Blocks this processor owns and its k-th one, locally.
    size_t local_blocks() const {
        size_t P = size_t(procs()), me = size_t(myproc());
        return nblocks_ / P + (me < nblocks_ % P ? 1 : 0);
    }
    T *local_block(size_t k) const { return base_.local() + k * block_elems_; }
    // Spread index of this processor's k-th block.
    size_t global_block_index(size_t k) const { return k * size_t(procs()) + size_t(myproc()); }

    // Element by full index: spread indices first, then block indices.
    template <class... I>
    global_ptr<T> ptr(I... idx) const {
        static_assert(sizeof...(I) >= 1 && sizeof...(I) <= 2 * kMaxDims, "bad number of indices");
        size_t ix[] = {size_t(idx)...};
        if (sizeof...(I) != ns_ + nb_) return bad("spread_array: wrong number of indices");
        size_t s = 0, b = 0;
        for (size_t i = 0; i < ns_; ++i) {
            if (ix[i] >= sd_[i]) return bad("spread_array: spread index out of bounds");
            s = s * sd_[i] + ix[i];
        }
        for (size_t i = 0; i < nb_; ++i) {
            if (ix[ns_ + i] >= bd_[i]) return bad("spread_array: block index out of bounds");
            b = b * bd_[i] + ix[ns_ + i];
        }
        return (base_ + ptrdiff_t(s)).to_global() + ptrdiff_t(b);
    }
    template <class... I>
    global_ref<T> operator()(I... idx) const {
        return global_ref<T>(ptr(idx...));
    }
    // Owner of a spread index.
    int owner_of_block(size_t s) const { return int(s % size_t(procs())); }

private:
    static global_ptr<T> bad(const char *msg) {
        splitc_report_error(SPLITC_ERR_BAD_ARGUMENT, msg);
        return global_ptr<T>();
    }
    std::array<size_t, kMaxDims> sd_{}, bd_{};
    size_t ns_ = 0, nb_ = 0, nblocks_ = 1, block_elems_ = 1;
    spread_ptr<T> base_;
};

// ---- collectives -------------------------------------------------------------------------
inline long all_reduce_to_one_add(long v) { return splitc_all_reduce_to_one_add(v); }
inline long all_reduce_to_one_max(long v) { return splitc_all_reduce_to_one_max(v); }
inline long all_reduce_to_one_min(long v) { return splitc_all_reduce_to_one_min(v); }
inline double all_reduce_to_one_dadd(double v) { return splitc_all_reduce_to_one_dadd(v); }
inline double all_reduce_to_one_dmax(double v) { return splitc_all_reduce_to_one_dmax(v); }
inline double all_reduce_to_one_dmin(double v) { return splitc_all_reduce_to_one_dmin(v); }
inline long all_reduce_to_all_add(long v) { return splitc_all_reduce_to_all_add(v); }
inline long all_reduce_to_all_max(long v) { return splitc_all_reduce_to_all_max(v); }
inline long all_reduce_to_all_min(long v) { return splitc_all_reduce_to_all_min(v); }
inline double all_reduce_to_all_dadd(double v) { return splitc_all_reduce_to_all_dadd(v); }
inline double all_reduce_to_all_dmax(double v) { return splitc_all_reduce_to_all_dmax(v); }
inline double all_reduce_to_all_dmin(double v) { return splitc_all_reduce_to_all_dmin(v); }
inline long all_bcast(long v) { return splitc_all_bcast(v); }
inline double all_bcast_d(double v) { return splitc_all_bcast_d(v); }

// RAII start-up for programs and tests that have their own main().
class session {
public:
    session(int &argc, char **&argv) : ok_(splitc_init(&argc, &argv) == 0) {}
    ~session() { splitc_finalize(); }
    bool ok() const { return ok_; }
    session(const session &) = delete;
    session &operator=(const session &) = delete;

private:
    bool ok_;
};

} // namespace splitc
