// verbs_status.cpp - work completion status -> VIPL descriptor status bits.
// The same table is in docs/verbs.md; keep them in step.
#include "verbs_provider.hpp"

namespace vipl::verbs {

uint32_t status_bits(ibv_wc_status s) {
    switch (s) {
    case IBV_WC_SUCCESS: return 0;
    case IBV_WC_LOC_LEN_ERR: return VIP_STATUS_LENGTH_ERROR;
    case IBV_WC_LOC_QP_OP_ERR: return VIP_STATUS_FORMAT_ERROR;
    case IBV_WC_LOC_EEC_OP_ERR: return VIP_STATUS_FORMAT_ERROR;
    case IBV_WC_LOC_PROT_ERR: return VIP_STATUS_PROTECTION_ERROR;
    case IBV_WC_WR_FLUSH_ERR: return VIP_STATUS_DESC_FLUSHED_ERROR;
    case IBV_WC_MW_BIND_ERR: return VIP_STATUS_PROTECTION_ERROR;
    case IBV_WC_BAD_RESP_ERR: return VIP_STATUS_TRANSPORT_ERROR;
    case IBV_WC_LOC_ACCESS_ERR: return VIP_STATUS_PROTECTION_ERROR;
    case IBV_WC_REM_INV_REQ_ERR: return VIP_STATUS_REMOTE_DESC_ERROR;
    case IBV_WC_REM_ACCESS_ERR: return VIP_STATUS_RDMA_PROT_ERROR;
    case IBV_WC_REM_OP_ERR: return VIP_STATUS_REMOTE_DESC_ERROR;
    case IBV_WC_RETRY_EXC_ERR: return VIP_STATUS_TRANSPORT_ERROR;
    case IBV_WC_RNR_RETRY_EXC_ERR: return VIP_STATUS_TRANSPORT_ERROR;
    case IBV_WC_LOC_RDD_VIOL_ERR: return VIP_STATUS_PROTECTION_ERROR;
    case IBV_WC_REM_INV_RD_REQ_ERR: return VIP_STATUS_REMOTE_DESC_ERROR;
    case IBV_WC_REM_ABORT_ERR: return VIP_STATUS_TRANSPORT_ERROR;
    case IBV_WC_INV_EECN_ERR: return VIP_STATUS_TRANSPORT_ERROR;
    case IBV_WC_INV_EEC_STATE_ERR: return VIP_STATUS_TRANSPORT_ERROR;
    case IBV_WC_FATAL_ERR: return VIP_STATUS_TRANSPORT_ERROR;
    case IBV_WC_RESP_TIMEOUT_ERR: return VIP_STATUS_TRANSPORT_ERROR;
    case IBV_WC_GENERAL_ERR: return VIP_STATUS_TRANSPORT_ERROR;
    default: return VIP_STATUS_TRANSPORT_ERROR; // newer statuses (e.g. TM errors)
    }
}

} // namespace vipl::verbs
