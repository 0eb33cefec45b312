// vfi_getinfo.cpp - the provider entry point and fi_getinfo: what a VI offers
// in libfabric's terms, and the check of an application's hints against it.
//
// One fi_info: FI_EP_MSG (one VI per endpoint), FI_MSG | FI_RMA, VI memory
// registration (FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
// FI_MR_PROV_KEY), 4 bytes of immediate data as CQ data.  libfabric's ofi_rxm
// layers FI_EP_RDM and FI_TAGGED on it.
#include "vfi.hpp"

#include <rdma/providers/fi_log.h>

#include <algorithm>

namespace vfi {

static constexpr uint64_t kCaps = FI_MSG | FI_RMA | FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |
    FI_REMOTE_WRITE | FI_LOCAL_COMM | FI_REMOTE_COMM;
static constexpr uint64_t kTxCaps = FI_MSG | FI_RMA | FI_SEND | FI_READ | FI_WRITE;
static constexpr uint64_t kRxCaps = FI_MSG | FI_RMA | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE;
static constexpr int kMrMode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
static constexpr uint64_t kMsgOrder =
    FI_ORDER_SAS | FI_ORDER_SAW | FI_ORDER_WAS | FI_ORDER_WAW | FI_ORDER_RAW | FI_ORDER_RAS;

static bool refuse(const char *why) {
    FI_INFO(&provider, FI_LOG_CORE, "hints not met: %s\n", why);
    return false;
}

// True if the hints can be met; narrows `info` to what they ask.
static bool apply_hints(const fi_info *h, fi_info *info) {
    if (!h) return true;
    if (h->caps & ~kCaps) return refuse("capabilities beyond FI_MSG | FI_RMA");
    if (h->caps) info->caps = (h->caps & kCaps) | FI_LOCAL_COMM | FI_REMOTE_COMM;
    if (h->addr_format != FI_FORMAT_UNSPEC && h->addr_format != FI_SOCKADDR_IN6)
        return refuse("address format (FI_SOCKADDR_IN6 only)");
    if (h->ep_attr) {
        if (h->ep_attr->type != FI_EP_UNSPEC && h->ep_attr->type != FI_EP_MSG)
            return refuse("endpoint type (FI_EP_MSG only)");
        if (h->ep_attr->max_msg_size > info->ep_attr->max_msg_size) return refuse("max_msg_size");
        if (h->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT || h->ep_attr->tx_ctx_cnt == FI_SHARED_CONTEXT)
            return refuse("shared contexts");
        if (h->ep_attr->rx_ctx_cnt > 1 || h->ep_attr->tx_ctx_cnt > 1)
            return refuse("more than one context per endpoint");
        if (h->ep_attr->protocol != FI_PROTO_UNSPEC) return refuse("protocol");
    }
    if (h->domain_attr) {
        const fi_domain_attr *d = h->domain_attr;
        if (d->name && std::strcmp(d->name, info->domain_attr->name) != 0) return refuse("domain name");
        if (d->data_progress == FI_PROGRESS_AUTO || d->control_progress == FI_PROGRESS_AUTO)
            return refuse("automatic progress (the provider progresses in its calls)");
        int mr = d->mr_mode;
        if (mr == FI_MR_BASIC) {
            if (!(h->mode & FI_LOCAL_MR)) return refuse("FI_MR_BASIC without FI_LOCAL_MR mode");
        } else if ((mr & kMrMode) != kMrMode) {
            return refuse("mr_mode must allow FI_MR_LOCAL|FI_MR_VIRT_ADDR|FI_MR_ALLOCATED|FI_MR_PROV_KEY");
        }
        if (d->cq_data_size > info->domain_attr->cq_data_size)
            return refuse("cq_data_size (4 bytes of immediate data)");
        if (d->mr_key_size > info->domain_attr->mr_key_size) return refuse("mr_key_size");
    }
    if (h->fabric_attr && h->fabric_attr->name && std::strcmp(h->fabric_attr->name, kFabricName) != 0)
        return refuse("fabric name");
    auto narrow_size = [](size_t want, size_t *have) {
        if (want > *have) return false;
        if (want) *have = want;
        return true;
    };
    if (h->tx_attr) {
        if (h->tx_attr->caps & ~kTxCaps) return refuse("tx capabilities");
        if (!narrow_size(h->tx_attr->size, &info->tx_attr->size) ||
            !narrow_size(h->tx_attr->iov_limit, &info->tx_attr->iov_limit) ||
            !narrow_size(h->tx_attr->rma_iov_limit, &info->tx_attr->rma_iov_limit) ||
            !narrow_size(h->tx_attr->inject_size, &info->tx_attr->inject_size))
            return refuse("tx size, iov or inject limits");
        if (h->tx_attr->msg_order & ~kMsgOrder) return refuse("tx message order");
        info->tx_attr->op_flags =
            h->tx_attr->op_flags & (FI_COMPLETION | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE);
    }
    if (h->rx_attr) {
        if (h->rx_attr->caps & ~kRxCaps) return refuse("rx capabilities");
        if (!narrow_size(h->rx_attr->size, &info->rx_attr->size) ||
            !narrow_size(h->rx_attr->iov_limit, &info->rx_attr->iov_limit))
            return refuse("rx size or iov limit");
        if (h->rx_attr->msg_order & ~kMsgOrder) return refuse("rx message order");
        info->rx_attr->op_flags = h->rx_attr->op_flags & FI_COMPLETION;
    }
    // Remote CQ data needs posted receives (a VI's immediate data completes a
    // receive descriptor): an application that does not accept FI_RX_CQ_DATA
    // gets an info without CQ data instead.
    if (h->mode && !(h->mode & FI_RX_CQ_DATA)) {
        info->domain_attr->cq_data_size = 0;
        info->mode &= ~FI_RX_CQ_DATA;
        info->rx_attr->mode &= ~FI_RX_CQ_DATA;
        info->tx_attr->mode &= ~FI_RX_CQ_DATA;
    }
    return true;
}

static fi_info *base_info(Nic *n) {
    fi_info *i = fi_allocinfo();
    if (!i) return nullptr;
    size_t qmax = n->attr.MaxDescriptorsPerQueue ? n->attr.MaxDescriptorsPerQueue : kDefaultQueue;
    size_t segs = n->attr.MaxSegmentsPerDesc ? n->attr.MaxSegmentsPerDesc : 2;
    size_t iov = std::min(kIovLimit, segs - 1); // one segment is the RDMA address segment
    i->caps = kCaps;
    i->mode = FI_RX_CQ_DATA;
    i->addr_format = FI_SOCKADDR_IN6;
    i->tx_attr->caps = kTxCaps;
    i->tx_attr->mode = FI_RX_CQ_DATA;
    i->tx_attr->msg_order = kMsgOrder;
    i->tx_attr->comp_order = FI_ORDER_NONE;
    i->tx_attr->inject_size = kInjectSize;
    // A few send descriptors of each VI carry the provider's credit writes.
    i->tx_attr->size = std::min(kDefaultQueue, qmax - 4);
    i->tx_attr->iov_limit = iov;
    i->tx_attr->rma_iov_limit = 1;
    i->rx_attr->caps = kRxCaps;
    i->rx_attr->mode = FI_RX_CQ_DATA;
    i->rx_attr->msg_order = kMsgOrder;
    i->rx_attr->comp_order = FI_ORDER_NONE;
    i->rx_attr->size = std::min(kDefaultQueue, qmax);
    i->rx_attr->iov_limit = iov;
    i->ep_attr->type = FI_EP_MSG;
    i->ep_attr->protocol = FI_PROTO_UNSPEC;
    i->ep_attr->max_msg_size = n->attr.MaxTransferSize;
    i->ep_attr->tx_ctx_cnt = 1;
    i->ep_attr->rx_ctx_cnt = 1;
    i->domain_attr->name = strdup(n->attr.Name);
    i->domain_attr->threading = FI_THREAD_SAFE;
    i->domain_attr->control_progress = FI_PROGRESS_MANUAL;
    i->domain_attr->data_progress = FI_PROGRESS_MANUAL;
    i->domain_attr->resource_mgmt = FI_RM_ENABLED;
    i->domain_attr->av_type = FI_AV_UNSPEC;
    i->domain_attr->mr_mode = kMrMode;
    i->domain_attr->mr_key_size = sizeof(VIP_MEM_HANDLE);
    i->domain_attr->cq_data_size = sizeof(VIP_UINT32);
    i->domain_attr->cq_cnt = n->attr.MaxCQ;
    i->domain_attr->ep_cnt = n->attr.MaxVI;
    i->domain_attr->tx_ctx_cnt = n->attr.MaxVI;
    i->domain_attr->rx_ctx_cnt = n->attr.MaxVI;
    i->domain_attr->max_ep_tx_ctx = 1;
    i->domain_attr->max_ep_rx_ctx = 1;
    i->domain_attr->mr_iov_limit = 1;
    i->domain_attr->mr_cnt = n->attr.MaxRegisterRegions;
    i->domain_attr->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
    i->fabric_attr->name = strdup(kFabricName);
    i->fabric_attr->prov_version = kProvVersion;
    return i;
}

static int set_addr(void **field, size_t *len, const sockaddr_in6 &a) {
    std::free(*field);
    *field = std::malloc(kAddrLen);
    if (!*field) return -FI_ENOMEM;
    std::memcpy(*field, &a, kAddrLen);
    *len = kAddrLen;
    return 0;
}

int getinfo(uint32_t version, const char *node, const char *service, uint64_t flags, const struct fi_info *hints,
            struct fi_info **out) {
    CtlGuard g;
    *out = nullptr;
    Nic *n = nic();
    if (!n) return -FI_ENODATA;
    fi_info *info = base_info(n);
    if (!info) return -FI_ENOMEM;
    if (!apply_hints(hints, info)) {
        fi_freeinfo(info);
        return -FI_ENODATA;
    }
    int rc = 0;
    sockaddr_in6 a;
    if (flags & FI_SOURCE) {
        if ((rc = resolve(node, service, &a)) == 0) {
            std::vector<uint8_t> host;
            addr_parse(&a, sizeof(a), &host, nullptr);
            if (host != n->host) {
                warn("FI_SOURCE node \"%s\" is not this process's NIC", node ? node : "");
                rc = -FI_ENODATA;
            } else {
                rc = set_addr(&info->src_addr, &info->src_addrlen, a);
            }
        }
    } else {
        if (node || service) {
            if ((rc = resolve(node, service, &a)) == 0) rc = set_addr(&info->dest_addr, &info->dest_addrlen, a);
        }
        if (rc == 0 && hints && hints->dest_addr) {
            if (!addr_parse(hints->dest_addr, hints->dest_addrlen, nullptr, nullptr)) {
                warn("hints->dest_addr is not a viastack address");
                rc = -FI_ENODATA;
            } else if (!node && !service) {
                std::memcpy(&a, hints->dest_addr, kAddrLen);
                rc = set_addr(&info->dest_addr, &info->dest_addrlen, a);
            }
        }
        if (rc == 0) {
            uint16_t port = 0;
            if (hints && hints->src_addr) {
                if (!addr_parse(hints->src_addr, hints->src_addrlen, nullptr, &port)) {
                    warn("hints->src_addr is not a viastack address");
                    rc = -FI_ENODATA;
                }
            }
            if (rc == 0 && addr_make(n->host, port, &a)) rc = set_addr(&info->src_addr, &info->src_addrlen, a);
        }
    }
    if (rc) {
        fi_freeinfo(info);
        return rc == -FI_ENOMEM ? rc : -FI_ENODATA;
    }
    (void)version;
    *out = info;
    return 0;
}

// libfabric calls this from its destructor at process exit, when VIPL's own
// state may already be torn down (its exit handlers close the NIC), so the
// NIC is left to them.
static void cleanup() {}

struct fi_provider provider = {
    .version = kProvVersion,
    .fi_version = FI_VERSION(1, 17),
    .context = {},
    .name = kProvName,
    .getinfo = getinfo,
    .fabric = fabric_open,
    .cleanup = cleanup,
};

} // namespace vfi

extern "C" FI_EXT_INI { return &vfi::provider; }
