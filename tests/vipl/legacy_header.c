/*
 * legacy_header.c - compiled (not run) by ctest in the ways public VI programs
 * include vipl.h: plain, with VIPL095 defined first (the ARMCI VIA port of Global
 * Arrays), with VIP_ERROR_NOT_SUPPORTED predefined as a macro (the same file
 * guards against headers without it), and as C++.  Each use below is a name or
 * layout those programs take from the M-VIA or Giganet cLAN headers.
 */
#include <stddef.h>

#include "vipl.h"

/* VIP_NET_ADDRESS as in M-VIA: two 16-bit lengths, then the bytes. */
typedef char check_addr_host_len[offsetof(VIP_NET_ADDRESS, HostAddressLen) == 0 ? 1 : -1];
typedef char check_addr_disc_len[offsetof(VIP_NET_ADDRESS, DiscriminatorLen) == 2 ? 1 : -1];
typedef char check_addr_bytes[offsetof(VIP_NET_ADDRESS, HostAddress) == 4 ? 1 : -1];
typedef char check_addr_size[sizeof(VIP_NET_ADDRESS) == 6 ? 1 : -1];
typedef char check_addr_elem[sizeof(((VIP_NET_ADDRESS *)0)->HostAddress[0]) == 1 ? 1 : -1];

/* Giganet's descriptor names: Control (the control segment), Data[] (data
 * segments right after it), at the spec's offsets. */
typedef char check_control[offsetof(VIP_DESCRIPTOR, Control) == offsetof(VIP_DESCRIPTOR, CS) ? 1 : -1];
typedef char check_data[offsetof(VIP_DESCRIPTOR, Data) == offsetof(VIP_DESCRIPTOR, DS) ? 1 : -1];
typedef char check_data_size[sizeof(((VIP_DESCRIPTOR *)0)->Data[0]) == sizeof(VIP_DESCRIPTOR_SEGMENT) ? 1 : -1];
typedef char check_desc_size[sizeof(VIP_DESCRIPTOR) == 64 ? 1 : -1];

static void cq_cb(VIP_PVOID ctx, VIP_NIC_HANDLE nic, VIP_VI_HANDLE vi, VIP_BOOLEAN recv) {
    (void)ctx;
    (void)nic;
    (void)vi;
    (void)recv;
}
static void vi_cb(VIP_PVOID ctx, VIP_NIC_HANDLE nic, VIP_VI_HANDLE vi, VIP_DESCRIPTOR *d) {
    (void)ctx;
    (void)nic;
    (void)vi;
    (void)d;
}

int legacy_header_uses(VIP_DESCRIPTOR *d, VIP_RETURN rc);
int legacy_header_uses(VIP_DESCRIPTOR *d, VIP_RETURN rc) {
    VIP_VI_CALLBACK vcb = vi_cb;
    VIP_CQ_CALLBACK ccb = cq_cb;
    VIP_EVENT_HANDLE ev = (VIP_EVENT_HANDLE)0;
    VIP_LONG l = -1;
    VIP_SHORT s = -1;
    d->Control.Control = VIP_CONTROL_OP_SENDRECV;
    d->Control.SegCount = 1;
    d->Control.Length = 8;
    d->Data[0].Data.Address = (VIP_PVOID)0;
    d->Data[0].Handle = 0;
    d->Data[0].Length = 8;
    d->CS.Status = 0;
    d->DS[0].Local.Length = 8;
    (void)vcb;
    (void)ccb;
    (void)ev;
    switch ((int)rc) { /* int: a predefined value may lie outside the enum */
    case VIP_NOT_REACHABLE: return 15 + (int)l + (int)s + 2;
#ifdef LEGACY_PREDEFINED_NOT_SUPPORTED
    case VIP_ERROR_NOT_SUPPORTED: return -1; /* the program's own value */
#else
    case VIP_ERROR_NOT_SUPPORTED: return 16;
#endif
    default: return 0;
    }
}
