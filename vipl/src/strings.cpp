// strings.cpp - readable names for return codes and descriptor status words.
#include <cstdio>
#include <cstring>

#include "vipl.h"

extern "C" {

const char *VipxReturnString(VIP_RETURN rc) {
    static const char *names[] = {"VIP_SUCCESS",
                                  "VIP_NOT_DONE",
                                  "VIP_INVALID_PARAMETER",
                                  "VIP_ERROR_RESOURCE",
                                  "VIP_TIMEOUT",
                                  "VIP_REJECT",
                                  "VIP_INVALID_RELIABILITY_LEVEL",
                                  "VIP_INVALID_MTU",
                                  "VIP_INVALID_QOS",
                                  "VIP_INVALID_PTAG",
                                  "VIP_INVALID_RDMAREAD",
                                  "VIP_DESCRIPTOR_ERROR",
                                  "VIP_INVALID_STATE",
                                  "VIP_ERROR_NAMESERVICE",
                                  "VIP_NO_MATCH",
                                  "VIP_NOT_REACHABLE",
                                  "VIP_ERROR_NOT_SUPPORTED"};
    const int i = static_cast<int>(rc);
    return (i >= 0 && i < static_cast<int>(sizeof names / sizeof names[0])) ? names[i] : "VIP_RETURN(unknown)";
}

const char *VipxStatusString(VIP_UINT32 status, char *buf, VIP_ULONG len) {
    if (!buf || len == 0) return "";
    static const struct {
        VIP_UINT32 bit;
        const char *name;
    } bits[] = {{VIP_STATUS_DONE, "DONE"},
                {VIP_STATUS_FORMAT_ERROR, "FORMAT_ERROR"},
                {VIP_STATUS_PROTECTION_ERROR, "PROTECTION_ERROR"},
                {VIP_STATUS_LENGTH_ERROR, "LENGTH_ERROR"},
                {VIP_STATUS_PARTIAL_ERROR, "PARTIAL_ERROR"},
                {VIP_STATUS_DESC_FLUSHED_ERROR, "DESC_FLUSHED_ERROR"},
                {VIP_STATUS_TRANSPORT_ERROR, "TRANSPORT_ERROR"},
                {VIP_STATUS_RDMA_PROT_ERROR, "RDMA_PROT_ERROR"},
                {VIP_STATUS_REMOTE_DESC_ERROR, "REMOTE_DESC_ERROR"},
                {VIP_STATUS_IMMEDIATE, "IMMEDIATE"}};
    static const char *ops[] = {"OP_SEND",      "OP_RECEIVE", "OP_RDMA_WRITE", "OP_REMOTE_RDMA_WRITE",
                                "OP_RDMA_READ", "OP_5",       "OP_6",          "OP_7"};
    int n = std::snprintf(buf, len, "%s", ops[(status & VIP_STATUS_OP_MASK) >> 16]);
    for (auto &b : bits)
        if ((status & b.bit) && n >= 0 && static_cast<VIP_ULONG>(n) < len)
            n += std::snprintf(buf + n, len - static_cast<VIP_ULONG>(n), "|%s", b.name);
    return buf;
}

} // extern "C"
