// fm_coroutine.cpp - handler multithreading: user-level contexts on pooled
// stacks, one per handler whose message spans several packets.  A context is
// made once and then reused: its entry function loops, running one handler
// per resume-from-start, so starting a handler costs one switch.
// The switch on x86-64 is fm_ctx_switch below: the callee-saved registers,
// MXCSR and the x87 control word pushed on the old stack, the stack pointer
// swapped, popped from the new one - no system call.  glibc's swapcontext
// also saves and restores the signal mask with rt_sigprocmask, a system call
// per switch (two per suspend + resume), and in this VM a system call costs
// microseconds: it made every multi-packet message several times slower than
// a one-packet one (docs/fm.md, "Bandwidth dips").  Handlers run with the
// signal mask of the thread that extracts (FM never changes it).  Elsewhere,
// and under ThreadSanitizer (which must be told about fiber switches it
// cannot see in swapcontext's stead), makecontext/swapcontext remain.
// A guard page under each stack turns an overflow into a fault, not silent
// corruption of the neighbouring heap.
// Under AddressSanitizer every switch is announced to it (start before
// swapcontext with the stack being entered, finish after it with the stack
// left), so it knows which stack is live and checks handlers that run on
// these stacks like any other code.
#include <sys/mman.h>
#include <unistd.h>

#include "fm_internal.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define FM_ASAN_FIBERS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FM_ASAN_FIBERS 1
#endif
#endif
#ifdef FM_ASAN_FIBERS
#include <sanitizer/common_interface_defs.h>
#endif

#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#if defined(__has_feature)
#if !__has_feature(thread_sanitizer)
#define FM_HAND_SWITCH 1
#endif
#else
#define FM_HAND_SWITCH 1
#endif
#endif

#ifdef FM_HAND_SWITCH
// fm_ctx_switch(save, to): saves the current context on its stack, stores
// its stack pointer in *save, and resumes the context whose stack pointer is
// `to` (saved by an earlier fm_ctx_switch, or laid out by co_create).
extern "C" void fm_ctx_switch(void **save, void *to);
asm(R"(
    .pushsection .text
    .globl fm_ctx_switch
    .hidden fm_ctx_switch
    .type fm_ctx_switch, @function
fm_ctx_switch:
    .cfi_startproc
    endbr64
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .cfi_endproc
    .size fm_ctx_switch, .-fm_ctx_switch
    .popsection
)");
#endif

namespace fm {
namespace {

#ifdef FM_ASAN_FIBERS
inline void switch_start(void **fake_save, const void *bottom, size_t size) {
    __sanitizer_start_switch_fiber(fake_save, bottom, size);
}
inline void switch_finish(void *fake_save, const void **bottom_old, size_t *size_old) {
    __sanitizer_finish_switch_fiber(fake_save, bottom_old, size_old);
}
#else
inline void switch_start(void **, const void *, size_t) {}
inline void switch_finish(void *, const void **, size_t *) {}
#endif

size_t page_size() {
    static const size_t p = size_t(sysconf(_SC_PAGESIZE));
    return p;
}

// Entry of every coroutine: runs the handler of co->in, says it finished,
// returns to the resumer; resumed again (by co_resume after co_get handed the
// context to a new message) it runs the next handler.
void entry() {
    Coroutine *co = g.starting;
    switch_finish(nullptr, &co->caller_bottom, &co->caller_size);
    for (;;) {
        Inbound *in = co->in;
        in->fn(in, in->sender);
        co->finished = true;
        switch_start(&co->asan_fake, co->caller_bottom, co->caller_size);
#ifdef FM_HAND_SWITCH
        fm_ctx_switch(&co->sp, co->caller_sp);
#else
        swapcontext(&co->ctx, &co->caller);
#endif
        switch_finish(co->asan_fake, &co->caller_bottom, &co->caller_size);
    }
}

Coroutine *co_create() {
    auto *co = new Coroutine();
    const size_t guard = page_size();
    co->stack_size = (g.stack_size + guard - 1) / guard * guard;
    void *mem = mmap(nullptr, co->stack_size + guard, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        delete co;
        return nullptr;
    }
    mprotect(mem, guard, PROT_NONE);
    co->stack = mem;
#ifdef FM_HAND_SWITCH
    // The first fm_ctx_switch to it pops this frame: MXCSR and x87 control
    // word (their defaults), six registers, and returns into entry() with
    // the stack aligned as after a call (the return address above it is 0:
    // entry never returns).
    auto *top =
        reinterpret_cast<uint64_t *>((reinterpret_cast<uintptr_t>(mem) + guard + co->stack_size) & ~uintptr_t(15));
    top[-1] = 0;
    top[-2] = reinterpret_cast<uint64_t>(&entry);
    for (int i = 3; i <= 8; i++) top[-i] = 0;              // rbp rbx r12 r13 r14 r15
    top[-9] = uint64_t(0x1F80) | (uint64_t(0x037F) << 32); // MXCSR, x87 control word
    co->sp = &top[-9];
#else
    getcontext(&co->ctx);
    co->ctx.uc_stack.ss_sp = static_cast<char *>(mem) + guard;
    co->ctx.uc_stack.ss_size = co->stack_size;
    co->ctx.uc_link = nullptr; // entry never returns
    makecontext(&co->ctx, entry, 0);
#endif
    // The first resume enters entry(), which reads g.starting once.
    co->finished = true; // "not started": co_resume sets g.starting for it
    return co;
}

} // namespace

Coroutine *co_get() {
    if (!g.free_co.empty()) {
        Coroutine *co = g.free_co.back();
        g.free_co.pop_back();
        return co;
    }
    return co_create();
}

void co_put(Coroutine *co) {
    co->in = nullptr;
    g.free_co.push_back(co);
}

void co_resume(Coroutine *co) {
    if (co->finished) {
        // A fresh message: entry() (first time) or its loop (later) picks up co->in.
        co->finished = false;
        g.starting = co;
    }
    void *fake = nullptr;
    switch_start(&fake, static_cast<char *>(co->stack) + page_size(), co->stack_size);
#ifdef FM_HAND_SWITCH
    fm_ctx_switch(&co->caller_sp, co->sp);
#else
    swapcontext(&co->caller, &co->ctx);
#endif
    switch_finish(fake, nullptr, nullptr);
}

void co_suspend(Coroutine *co) {
    switch_start(&co->asan_fake, co->caller_bottom, co->caller_size);
#ifdef FM_HAND_SWITCH
    fm_ctx_switch(&co->sp, co->caller_sp);
#else
    swapcontext(&co->ctx, &co->caller);
#endif
    switch_finish(co->asan_fake, &co->caller_bottom, &co->caller_size);
}

void co_free_all() {
    for (Coroutine *co : g.free_co) {
        munmap(co->stack, co->stack_size + page_size());
        delete co;
    }
    g.free_co.clear();
}

} // namespace fm
