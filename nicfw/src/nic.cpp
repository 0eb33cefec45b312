// nic.cpp - bringing the emulated NIC up: configuration from the environment,
// the NIC of this process, its agent thread (notifications, progress), and the
// asynchronous error path.
#include "nic.hpp"
#include "viastack_log.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace nicfw {

namespace {
std::string env_or(const char *name, const char *def) {
    const char *v = std::getenv(name);
    return (v && *v) ? std::string(v) : std::string(def);
}

uint32_t parse_ns(const std::string &var, const std::string &v) {
    char *end = nullptr;
    const unsigned long x = std::strtoul(v.c_str(), &end, 10);
    if (end == v.c_str() || *end || x > 100000000ul)
        throw std::runtime_error(var + ": '" + v + "' is not a delay in ns (0..100000000)");
    return static_cast<uint32_t>(x);
}

// synthetic:os=NS,or=NS,L=NS,g=NS  (any subset, others 0)
Profile parse_profile(const std::string &v) {
    Profile p;
    p.name = v;
    if (v == "none") return p;
    // Hardware models, per message: the host overheads, wire latency and gap of
    // the seed paper's VI-on-LANai implementations (004, Tables 1 and 2),
    // scaled so that RTT/2 of a 16-byte message lands near the published one.
    if (v == "lanai4") {
        p.send_ns = 8000; p.recv_ns = 8000; p.wire_ns = 16000; p.gap_ns = 12000;
        return p;
    }
    if (v == "lanai7") {
        p.send_ns = 3000; p.recv_ns = 3000; p.wire_ns = 8000; p.gap_ns = 6000;
        return p;
    }
    const std::string pre = "synthetic:";
    if (v.rfind(pre, 0) != 0)
        throw std::runtime_error("VIPL_NICFW_PROFILE: '" + v +
                                 "' is not one of none, lanai4, lanai7, synthetic:os=NS,or=NS,L=NS,g=NS");
    std::string rest = v.substr(pre.size());
    size_t pos = 0;
    while (pos < rest.size()) {
        size_t comma = rest.find(',', pos);
        if (comma == std::string::npos) comma = rest.size();
        const std::string kv = rest.substr(pos, comma - pos);
        const size_t eq = kv.find('=');
        if (eq == std::string::npos) throw std::runtime_error("VIPL_NICFW_PROFILE: '" + kv + "' is not key=ns");
        const std::string k = kv.substr(0, eq);
        const uint32_t ns = parse_ns("VIPL_NICFW_PROFILE", kv.substr(eq + 1));
        if (k == "os") p.send_ns = ns;
        else if (k == "or") p.recv_ns = ns;
        else if (k == "L") p.wire_ns = ns;
        else if (k == "g") p.gap_ns = ns;
        else throw std::runtime_error("VIPL_NICFW_PROFILE: unknown key '" + k + "' (use os, or, L, g)");
        pos = comma + 1;
    }
    return p;
}
} // namespace

Config Config::from_env() {
    Config c;
    const std::string mode = env_or("VIPL_NICFW_MODE", "inline");
    if (mode == "inline") c.mode = Mode::Inline;
    else if (mode == "thread") c.mode = Mode::Thread;
    else throw std::runtime_error("VIPL_NICFW_MODE: '" + mode + "' is not inline or thread");
    const std::string bell = env_or("VIPL_NICFW_DOORBELL", "fifo");
    if (bell == "fifo") c.doorbell = Doorbell::Fifo;
    else if (bell == "emulated") c.doorbell = Doorbell::Emulated;
    else throw std::runtime_error("VIPL_NICFW_DOORBELL: '" + bell + "' is not fifo or emulated");
    const std::string ring = env_or("VIPL_NICFW_RING_KB", "1024");
    char *end = nullptr;
    const unsigned long kb = std::strtoul(ring.c_str(), &end, 10);
    if (end == ring.c_str() || *end || kb < 1024 || kb > 1024 * 1024)
        throw std::runtime_error("VIPL_NICFW_RING_KB: '" + ring + "' is not a size in KiB from 1024 to 1048576");
    c.ring_bytes = kb * 1024;
    const std::string crc = env_or("VIPL_NICFW_CRC", "1");
    if (crc != "0" && crc != "1") throw std::runtime_error("VIPL_NICFW_CRC: '" + crc + "' is not 0 or 1");
    c.crc = crc == "1";
    const std::string prog = env_or("VIPL_NICFW_PROGRESS", "0");
    if (prog != "0" && prog != "1") throw std::runtime_error("VIPL_NICFW_PROGRESS: '" + prog + "' is not 0 or 1");
    c.progress_thread = prog == "1";
    c.profile = parse_profile(env_or("VIPL_NICFW_PROFILE", "none"));
    return c;
}

NicHw::NicHw(const Config &c, const std::string &job_, int rank_, int nprocs_)
    : cfg(c), job(job_), rank(rank_), nprocs(nprocs_), wire(job_, nprocs_, c.ring_bytes),
      sram_tx(new unsigned char[kMaxTransfer + 64]), sram_rx(new unsigned char[wire.max_payload() + 64]),
      regions(new Region[kMaxRegions + 1]) {
    addr_bytes[0] = static_cast<uint8_t>(rank & 0xff);
    addr_bytes[1] = static_cast<uint8_t>(rank >> 8);
    rx_head = wire.ctl(rank).head.load(std::memory_order_acquire);
    // Every rank of a job has the same configuration, so every consumer of the
    // job's FIFOs sleeps or none does.
    wire.consumers_may_sleep = cfg.mode == Mode::Thread || cfg.progress_thread;
    if (cfg.mode == Mode::Thread) start_thread();
    if (cfg.progress_thread && cfg.mode == Mode::Inline) ensure_agent(true);
}

NicHw::~NicHw() { stop_thread(); }

VIP_RETURN NicHw::check_vi_attr(const vipl::prov::ViAttr &a) const {
    if (a.reliability != VIP_SERVICE_UNRELIABLE && a.reliability != VIP_SERVICE_RELIABLE_DELIVERY &&
        a.reliability != VIP_SERVICE_RELIABLE_RECEPTION)
        return VIP_INVALID_RELIABILITY_LEVEL;
    if (a.max_transfer == 0 || a.max_transfer > kMaxTransfer) return VIP_INVALID_MTU;
    if (a.qos != nullptr) return VIP_INVALID_QOS;
    if (!a.ptag || static_cast<PtagImpl *>(a.ptag)->hw != this) return VIP_INVALID_PTAG;
    if (a.rdma_read && a.reliability == VIP_SERVICE_UNRELIABLE) return VIP_INVALID_RDMAREAD;
    return VIP_SUCCESS;
}

// ---------------------------------------------------------------- errors
void NicHw::report_error(ViImpl *vi, CqImpl *cq, VIP_DESCRIPTOR *d, VIP_RESOURCE_CODE rc, VIP_ERROR_CODE ec) {
    vipl::prov::Nic *handle = vi ? vi->owner : cq ? cq->owner : owner;
    VIP_ERROR_DESCRIPTOR e{};
    e.NicHandle = handle ? handle->api_handle : nullptr;
    e.ViHandle = vi ? vi->api_handle : nullptr;
    e.CQHandle = cq ? cq->api_handle : nullptr;
    e.DescriptorPtr = d;
    e.OpCode = d ? (d->CS.Control & VIP_CONTROL_OP_MASK) : 0;
    e.ResourceCode = rc;
    e.ErrorCode = ec;
    std::lock_guard<std::mutex> g(err_mu);
    err_queue.push_back(QueuedError{e, handle});
    errors_pending.store(true, std::memory_order_release);
}

static const char *error_name(VIP_ERROR_CODE c) {
    static const char *names[] = {"POST_DESC",  "CONN_LOST",  "RECVQ_EMPTY", "VI_OVERRUN",
                                  "RDMAW_PROT", "RDMAW_DATA", "RDMAW_ABORT", "RDMAR_PROT",
                                  "COMP_PROT",  "RDMA_TRANSPORT", "CATASTROPHIC"};
    return (c >= 0 && c <= VIP_ERROR_CATASTROPHIC) ? names[c] : "?";
}

// Runs the error callback outside the firmware, from a host call or the agent,
// so a handler may itself call VIPL.
void NicHw::deliver_errors() {
    static thread_local bool delivering = false;
    if (delivering) return;
    delivering = true;
    std::vector<QueuedError> q;
    {
        std::lock_guard<std::mutex> g(err_mu);
        q.swap(err_queue);
        errors_pending.store(false, std::memory_order_relaxed);
    }
    for (auto &qe : q) {
        VIP_ERROR_HANDLER h = nullptr;
        VIP_PVOID ctx = nullptr;
        bool live = false;
        {
            std::lock_guard<std::mutex> g(err_mu);
            for (auto *lh : live_handles) live = live || lh == qe.handle;
            for (auto &sk : err_sinks)
                if (sk.handle == qe.handle) {
                    h = sk.h;
                    ctx = sk.ctx;
                }
        }
        if (!live) continue; // the handle was closed: nobody to tell
        if (h) h(ctx, &qe.e);
        else if (qe.e.ErrorCode != VIP_ERROR_CONN_LOST)
            // The line carries "[rank R] " from the facility (the job's rank).
            viastack::log::error(viastack::log::Layer::nicfw,
                                 "asynchronous error VIP_ERROR_{} on {} (register VipErrorCallback to handle it)",
                                 error_name(qe.e.ErrorCode), qe.e.ViHandle ? "a VI" : "the NIC");
    }
    delivering = false;
}

// ---------------------------------------------------------------- agent thread
// Runs one-shot notify handlers and, in inline mode with VIPL_NICFW_PROGRESS=1,
// serves the NIC while the host computes (RDMA aimed at us, Acks).
void NicHw::ensure_agent(bool step) {
    // Called from the host thread, never while it is inside step().
    if (step && cfg.mode == Mode::Inline) shared_step.store(true, std::memory_order_seq_cst);
    if (agent_thread.joinable()) return;
    agent_running.store(true);
    agent_thread = std::thread([this] {
        while (!stop.load(std::memory_order_relaxed)) {
            if (cfg.mode == Mode::Inline && shared_step.load(std::memory_order_relaxed)) locked_step();
            struct Fire {
                NotifySlot *slot;
                ViImpl *vi;
                CqImpl *cq;
                VIP_DESCRIPTOR *d;
                bool recv;
            };
            std::vector<Fire> fire;
            bool armed = false;
            {
                std::lock_guard<std::mutex> g(notify_mu);
                for (size_t i = 0; i < notify_vis.size();) {
                    ViImpl *vi = notify_vis[i];
                    bool keep = false;
                    for (int q = 0; q < 2; ++q) {
                        NotifySlot &s = q ? vi->notify_recv : vi->notify_send;
                        if (!s.armed.load()) continue;
                        VIP_DESCRIPTOR *d = nullptr;
                        if (vi->done(q ? vi->host_rq : vi->host_sq, &d) == VIP_SUCCESS) {
                            s.armed.store(false);
                            fire.push_back(Fire{&s, vi, nullptr, d, q == 1});
                        } else {
                            keep = true;
                        }
                    }
                    if (keep) { ++i; armed = true; }
                    else notify_vis.erase(notify_vis.begin() + static_cast<long>(i));
                }
                for (size_t i = 0; i < notify_cqs.size();) {
                    CqImpl *cq = notify_cqs[i];
                    vipl::prov::Vi *v = nullptr;
                    bool recv = false;
                    if (cq->notify_slot.armed.load() && cq->done(&v, &recv) == VIP_SUCCESS) {
                        cq->notify_slot.armed.store(false);
                        fire.push_back(Fire{&cq->notify_slot, static_cast<ViImpl *>(v), cq, nullptr, recv});
                    }
                    if (cq->notify_slot.armed.load()) { ++i; armed = true; }
                    else notify_cqs.erase(notify_cqs.begin() + static_cast<long>(i));
                }
            }
            for (auto &f : fire) {
                if (f.cq) {
                    VIP_NIC_HANDLE nh = f.cq->owner ? f.cq->owner->api_handle : nullptr;
                    f.slot->cq_handler(f.slot->ctx, nh, f.vi ? f.vi->api_handle : nullptr, f.recv);
                } else {
                    VIP_NIC_HANDLE nh = f.vi->owner ? f.vi->owner->api_handle : nullptr;
                    f.slot->desc_handler(f.slot->ctx, nh, f.vi->api_handle, f.d);
                }
            }
            if (errors_pending.load(std::memory_order_relaxed)) deliver_errors();
            if (!fire.empty()) continue;
            timespec ts{0, armed ? 50000L : (cfg.progress_thread ? 200000L : 100000L)};
            nanosleep(&ts, nullptr);
        }
    });
}

} // namespace nicfw
