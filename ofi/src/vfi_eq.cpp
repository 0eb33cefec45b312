// vfi_eq.cpp - event queues: FI_CONNREQ (with the request's info and data),
// FI_CONNECTED, FI_SHUTDOWN, error entries (FI_ECONNREFUSED with the
// reject's data), and whatever the application writes with fi_eq_write.
#include "vfi.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

namespace vfi {

void Eq::push(EqEntry e) {
    q.push_back(std::move(e));
    wait.signal_if(true);
}

void Eq::drop_fid(fid_t f) {
    for (auto it = q.begin(); it != q.end();) {
        if (it->fid == f) {
            if (it->info) fi_freeinfo(it->info);
            it = q.erase(it);
        } else {
            ++it;
        }
    }
    wait.signal_if(!q.empty());
}

static int eq_close(struct fid *fid) {
    Eq *e = reinterpret_cast<Eq *>(fid);
    CtlGuard g;
    register_eq(e, false);
    for (auto &x : e->q)
        if (x.info) fi_freeinfo(x.info);
    e->wait.close_fd();
    delete e;
    return 0;
}

static int eq_control(struct fid *fid, int cmd, void *arg) {
    Eq *e = reinterpret_cast<Eq *>(fid);
    CtlGuard g;
    return e->wait.control(cmd, arg);
}

static ssize_t eq_read(struct fid_eq *eqf, uint32_t *event, void *buf, size_t len, uint64_t flags) {
    Eq *e = reinterpret_cast<Eq *>(eqf);
    CtlGuard g;
    if (e->q.empty()) progress_cm();
    if (e->q.empty()) return -FI_EAGAIN;
    EqEntry &x = e->q.front();
    if (x.error) return -FI_EAVAIL;
    size_t need;
    if (x.event == FI_CONNREQ || x.event == FI_CONNECTED || x.event == FI_SHUTDOWN) {
        need = sizeof(fi_eq_cm_entry) + x.data.size();
        if (!buf || len < need) return -FI_ETOOSMALL;
        auto *cm = static_cast<fi_eq_cm_entry *>(buf);
        cm->fid = x.fid;
        cm->info = x.info;
        std::memcpy(cm->data, x.data.data(), x.data.size());
    } else { // written by the application: its bytes
        need = x.data.size();
        if (!buf || len < need) return -FI_ETOOSMALL;
        std::memcpy(buf, x.data.data(), need);
    }
    if (event) *event = x.event;
    if (!(flags & FI_PEEK)) {
        e->q.pop_front(); // the info now belongs to the reader
        e->wait.signal_if(!e->q.empty());
    }
    return ssize_t(need);
}

static ssize_t eq_readerr(struct fid_eq *eqf, struct fi_eq_err_entry *buf, uint64_t flags) {
    Eq *e = reinterpret_cast<Eq *>(eqf);
    CtlGuard g;
    if (!buf) return -FI_EINVAL;
    if (e->q.empty() || !e->q.front().error) return -FI_EAGAIN;
    EqEntry &x = e->q.front();
    e->last_err_data = x.data;
    void *user_err_data = buf->err_data;
    size_t user_err_size = buf->err_data_size;
    buf->fid = x.fid;
    buf->context = x.context;
    buf->data = 0;
    buf->err = x.err;
    buf->prov_errno = -x.err;
    if (user_err_data && user_err_size) { // the caller's buffer (API >= 1.5)
        size_t n = std::min(user_err_size, e->last_err_data.size());
        std::memcpy(user_err_data, e->last_err_data.data(), n);
        buf->err_data_size = n;
    } else {
        buf->err_data = e->last_err_data.empty() ? nullptr : e->last_err_data.data();
        buf->err_data_size = e->last_err_data.size();
    }
    if (!(flags & FI_PEEK)) {
        if (x.info) fi_freeinfo(x.info);
        e->q.pop_front();
        e->wait.signal_if(!e->q.empty());
    }
    return sizeof(*buf);
}

static ssize_t eq_write(struct fid_eq *eqf, uint32_t event, const void *buf, size_t len, uint64_t flags) {
    Eq *e = reinterpret_cast<Eq *>(eqf);
    if ((!buf && len) || flags & ~FI_PEEK) return -FI_EINVAL;
    CtlGuard g;
    EqEntry x;
    x.event = event;
    x.data.assign(static_cast<const uint8_t *>(buf), static_cast<const uint8_t *>(buf) + len);
    if (len >= sizeof(fi_eq_entry)) {
        x.fid = static_cast<const fi_eq_entry *>(buf)->fid;
        x.context = static_cast<const fi_eq_entry *>(buf)->context;
    }
    e->push(std::move(x));
    return ssize_t(len);
}

static ssize_t eq_sread(struct fid_eq *eqf, uint32_t *event, void *buf, size_t len, int timeout, uint64_t flags) {
    auto start = std::chrono::steady_clock::now();
    for (unsigned spin = 0;; spin++) {
        ssize_t rc = eq_read(eqf, event, buf, len, flags);
        if (rc != -FI_EAGAIN) return rc;
        if (timeout >= 0 && std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(timeout))
            return -FI_EAGAIN;
        // Connection set-up is not latency critical: yield after a short spin.
        if (spin > 64) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
}

static const char *eq_strerror(struct fid_eq *, int prov_errno, const void *, char *buf, size_t len) {
    const char *s = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);
    if (buf && len) {
        std::snprintf(buf, len, "%s", s);
        return buf;
    }
    return s;
}

static struct fi_ops eq_fi_ops = {sizeof(struct fi_ops), eq_close, no_bind,   eq_control,
                                  no_ops_open,           no_tostr, no_ops_set};
static struct fi_ops_eq eq_ops = {sizeof(struct fi_ops_eq), eq_read, eq_readerr, eq_write, eq_sread, eq_strerror};

int eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **out, void *context) {
    if (!attr || !out) return -FI_EINVAL;
    if (attr->flags & ~uint64_t(FI_WRITE)) return -FI_EINVAL;
    Eq *e = new Eq;
    switch (attr->wait_obj) {
    case FI_WAIT_NONE: break;
    case FI_WAIT_UNSPEC:
    case FI_WAIT_FD:
        e->wait.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (e->wait.fd < 0) {
            delete e;
            return -FI_ENOMEM;
        }
        break;
    default: delete e; return -FI_ENOSYS; // wait sets and mutex/cond waits: not offered
    }
    e->wait.wait_obj = attr->wait_obj == FI_WAIT_UNSPEC ? FI_WAIT_FD : attr->wait_obj;
    e->fabric = reinterpret_cast<Fabric *>(fabric);
    e->eq.fid.fclass = FI_CLASS_EQ;
    e->eq.fid.context = context;
    e->eq.fid.ops = &eq_fi_ops;
    e->eq.ops = &eq_ops;
    register_eq(e, true);
    *out = &e->eq;
    return 0;
}

} // namespace vfi
