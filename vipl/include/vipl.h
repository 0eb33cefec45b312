/*
 * vipl.h - the VI Provider Library user API (VI Architecture Specification 1.0).
 *
 * Names, types, constant values and call signatures follow the specification so
 * that VI programs written against it compile unchanged.  Where the spec leaves a
 * choice to the provider, viastack's choice is documented next to the item and in
 * docs/vipl.md.  Timeouts are in milliseconds; VIP_INFINITE waits forever.
 *
 * Providers: "nicfw" (LANai-style firmware emulator, the default) and "verbs"
 * (libibverbs/librdmacm).  VipOpenNic picks one by device name ("nicfw0",
 * "rxe0", "mlx5_0", ...) or, for a NULL/empty name, by $VIPL_PROVIDER.
 *
 * Thread safety (docs/vipl.md, "Threads"): nicfw and verbs NICs report
 * ThreadSafe = VIP_TRUE: any thread may post to, poll and wait on any VI or CQ,
 * register memory and connect at once; a VI or CQ destroyed while another
 * thread uses it gives that thread VIP_INVALID_PARAMETER (or VIP_INVALID_STATE
 * from a Wait), never a use after free.  A queue with a pending
 * VipSendNotify/VipRecvNotify/VipCQNotify must not also be polled by the
 * application.
 */
#ifndef VIPL_H
#define VIPL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define IN
#define OUT

/* ---- generic types ------------------------------------------------------ */
typedef void *VIP_PVOID;
typedef int VIP_BOOLEAN;
typedef char VIP_CHAR;
typedef unsigned char VIP_UCHAR;
typedef unsigned short VIP_USHORT;
typedef unsigned long VIP_ULONG;
typedef uint64_t VIP_UINT64;
typedef uint32_t VIP_UINT32;
typedef uint16_t VIP_UINT16;
typedef uint8_t VIP_UINT8;

typedef VIP_PVOID VIP_QOS; /* the spec leaves QoS undefined: must be NULL */

/* Names of the vendor headers public VI programs were written against (Giganet
 * cLAN, M-VIA), offered next to the spec's: VIP_LONG, VIP_SHORT,
 * VIP_EVENT_HANDLE, VIP_VI_CALLBACK, VIP_CQ_CALLBACK, the descriptor's
 * Control/Data[] members.  Define VIPL_SPEC_NAMES_ONLY before including this
 * header to get the specification's names alone.  The Control/Data[] members
 * need anonymous unions: C11 or later, GNU C, or C++ (not strict -std=c99). */
#if !defined(VIPL_SPEC_NAMES_ONLY) &&                                                                                  \
    (defined(__cplusplus) || (defined(__GNUC__) && !defined(__STRICT_ANSI__)) ||                                       \
     (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L))
#define VIPL_LEGACY_NAMES_ 1
#else
#define VIPL_LEGACY_NAMES_ 0
#endif
#ifndef VIPL_SPEC_NAMES_ONLY
typedef long VIP_LONG;
typedef short VIP_SHORT;
typedef VIP_PVOID VIP_EVENT_HANDLE;
#endif

#define VIP_TRUE (1)
#define VIP_FALSE (0)

/* Wait forever (timeouts are in milliseconds). */
#define VIP_INFINITE ((VIP_ULONG)0xFFFFFFFFUL)

/* ---- handles ------------------------------------------------------------ */
/* Opaque handles.  A stale or forged handle is detected and rejected with
 * VIP_INVALID_PARAMETER, never dereferenced. */
typedef VIP_PVOID VIP_NIC_HANDLE;
typedef VIP_PVOID VIP_VI_HANDLE;
typedef VIP_PVOID VIP_PROTECTION_HANDLE;
typedef VIP_PVOID VIP_CONN_HANDLE;
typedef VIP_PVOID VIP_CQ_HANDLE;

/* Handle of a registered memory region, as carried in descriptors and, for RDMA,
 * sent to the peer (it names the region in the target NIC's table). */
typedef VIP_UINT32 VIP_MEM_HANDLE;

/* ---- network addresses ---------------------------------------------------
 * HostAddress holds HostAddressLen bytes of host (NIC) address followed by
 * DiscriminatorLen bytes of discriminator.  The caller allocates room for both
 * (see VIP_NET_ADDRESS_SIZE); nicfw host addresses are 2 bytes (the rank, little
 * endian); discriminators are at most VIP_MAX_DISCRIMINATOR_LEN bytes here.
 * The layout is M-VIA's and Giganet's (lengths at offsets 0 and 2, bytes from
 * offset 4), so addresses built by their programs' arithmetic are valid here. */
typedef struct {
    VIP_UINT16 HostAddressLen;
    VIP_UINT16 DiscriminatorLen;
    VIP_UINT8 HostAddress[1];
} VIP_NET_ADDRESS;

#define VIP_MAX_DISCRIMINATOR_LEN 64
#define VIP_MAX_HOST_ADDRESS_LEN 64
/* Bytes to allocate for an address with h host bytes and d discriminator bytes. */
#define VIP_NET_ADDRESS_SIZE(h, d) (sizeof(VIP_UINT16) * 2 + (h) + (d))

/* ---- reliability levels (bit values) ----------------------------------- */
typedef VIP_USHORT VIP_RELIABILITY_LEVEL;
#define VIP_SERVICE_UNRELIABLE 0x01
#define VIP_SERVICE_RELIABLE_DELIVERY 0x02
#define VIP_SERVICE_RELIABLE_RECEPTION 0x04

/* ---- NIC attributes ---------------------------------------------------- */
typedef struct {
    VIP_CHAR Name[64];
    VIP_ULONG HardwareVersion;
    VIP_ULONG ProviderVersion;
    VIP_UINT16 NicAddressLen;
    const VIP_UINT8 *LocalNicAddress;
    VIP_BOOLEAN ThreadSafe;
    VIP_UINT16 MaxDiscriminatorLen;
    VIP_ULONG MaxRegisterBytes;
    VIP_ULONG MaxRegisterRegions;
    VIP_ULONG MaxRegisterBlockBytes;
    VIP_ULONG MaxVI;
    VIP_ULONG MaxDescriptorsPerQueue;
    VIP_ULONG MaxSegmentsPerDesc;
    VIP_ULONG MaxCQ;
    VIP_ULONG MaxCQEntries;
    VIP_ULONG MaxTransferSize;
    VIP_ULONG NativeMTU;
    VIP_ULONG MaxPtags;
    VIP_RELIABILITY_LEVEL ReliabilityLevelSupport;
    VIP_RELIABILITY_LEVEL RDMAReadSupport;
} VIP_NIC_ATTRIBUTES;

/* ---- descriptors --------------------------------------------------------- */
#define VIP_DESCRIPTOR_ALIGNMENT 64

typedef union {
    VIP_UINT64 AddressBits;
    VIP_PVOID Address;
} VIP_PVOID64;

/* Control segment.  Next/NextHandle belong to the provider while the descriptor
 * is posted.  Length is the total data length (set by the user for sends, by the
 * provider on completion for receives); Status is written by the provider. */
typedef struct {
    VIP_PVOID64 Next;
    VIP_MEM_HANDLE NextHandle;
    VIP_UINT16 SegCount;
    VIP_UINT16 Control;
    VIP_UINT32 Reserved;
    VIP_UINT32 ImmediateData;
    VIP_UINT32 Length;
    VIP_UINT32 Status;
} VIP_CONTROL_SEGMENT;

/* Address segment: the remote buffer of an RDMA operation. */
typedef struct {
    VIP_PVOID64 Data;
    VIP_MEM_HANDLE Handle;
    VIP_UINT32 Reserved;
} VIP_ADDRESS_SEGMENT;

/* Data segment: one local buffer (gather for sends, scatter for receives). */
typedef struct {
    VIP_PVOID64 Data;
    VIP_MEM_HANDLE Handle;
    VIP_UINT32 Length;
} VIP_DATA_SEGMENT;

typedef union {
    VIP_ADDRESS_SEGMENT Remote;
    VIP_DATA_SEGMENT Local;
} VIP_DESCRIPTOR_SEGMENT;

/* A descriptor: the control segment, then SegCount segments: for RDMA
 * operations DS[0].Remote (the address segment) followed by the data segments,
 * for send/receive data segments only.  Allocate it VIP_DESCRIPTOR_ALIGNMENT-
 * aligned in registered memory with room for all its segments; DS[2] is the
 * spec's declared minimum, larger descriptors extend DS past it. */
typedef struct _VIP_DESCRIPTOR {
#if VIPL_LEGACY_NAMES_
    /* Giganet cLAN's headers (without VIPL095) call the control segment
     * "Control" and the segments "Data[]" (data segments only); the same bytes
     * under both names, so programs of either kind compile. */
    union {
        VIP_CONTROL_SEGMENT CS;
        VIP_CONTROL_SEGMENT Control;
    };
    union {
        VIP_DESCRIPTOR_SEGMENT DS[2];
        VIP_DATA_SEGMENT Data[2];
    };
#else
    VIP_CONTROL_SEGMENT CS;
    VIP_DESCRIPTOR_SEGMENT DS[2];
#endif
} VIP_DESCRIPTOR;

/* Control field bits */
#define VIP_CONTROL_OP_SENDRECV 0x0000
#define VIP_CONTROL_OP_RDMAWRITE 0x0001
#define VIP_CONTROL_OP_RDMAREAD 0x0002
#define VIP_CONTROL_OP_RESERVED 0x0003
#define VIP_CONTROL_OP_MASK 0x0003
#define VIP_CONTROL_IMMEDIATE 0x0004
#define VIP_CONTROL_QFENCE 0x0008
#define VIP_CONTROL_RESERVED 0xFFF0

/* Status field bits */
#define VIP_STATUS_DONE 0x00000001
#define VIP_STATUS_FORMAT_ERROR 0x00000002
#define VIP_STATUS_PROTECTION_ERROR 0x00000004
#define VIP_STATUS_LENGTH_ERROR 0x00000008
#define VIP_STATUS_PARTIAL_ERROR 0x00000010
#define VIP_STATUS_DESC_FLUSHED_ERROR 0x00000020
#define VIP_STATUS_TRANSPORT_ERROR 0x00000040
#define VIP_STATUS_RDMA_PROT_ERROR 0x00000080
#define VIP_STATUS_REMOTE_DESC_ERROR 0x00000100
#define VIP_STATUS_ERROR_MASK 0x000001FE

#define VIP_STATUS_OP_SEND 0x00000000
#define VIP_STATUS_OP_RECEIVE 0x00010000
#define VIP_STATUS_OP_RDMA_WRITE 0x00020000
#define VIP_STATUS_OP_REMOTE_RDMA_WRITE 0x00030000
#define VIP_STATUS_OP_RDMA_READ 0x00040000
#define VIP_STATUS_OP_MASK 0x00070000

#define VIP_STATUS_IMMEDIATE 0x00080000
#define VIP_STATUS_RESERVED 0xFFF0FE00

/* ---- VI state and attributes ------------------------------------------- */
typedef enum { VIP_STATE_IDLE, VIP_STATE_CONNECTED, VIP_STATE_CONNECT_PENDING, VIP_STATE_ERROR } VIP_VI_STATE;

typedef struct {
    VIP_RELIABILITY_LEVEL ReliabilityLevel;
    VIP_ULONG MaxTransferSize;
    VIP_QOS QoS;
    VIP_PROTECTION_HANDLE Ptag;
    VIP_BOOLEAN EnableRdmaWrite;
    VIP_BOOLEAN EnableRdmaRead;
} VIP_VI_ATTRIBUTES;

typedef struct _VIP_MEM_ATTRIBUTES {
    VIP_PROTECTION_HANDLE Ptag;
    VIP_BOOLEAN EnableRdmaWrite;
    VIP_BOOLEAN EnableRdmaRead;
} VIP_MEM_ATTRIBUTES;

/* ---- asynchronous errors (VipErrorCallback) ------------------------------ */
typedef enum _VIP_ERROR_CODE {
    VIP_ERROR_POST_DESC,
    VIP_ERROR_CONN_LOST,
    VIP_ERROR_RECVQ_EMPTY,
    VIP_ERROR_VI_OVERRUN,
    VIP_ERROR_RDMAW_PROT,
    VIP_ERROR_RDMAW_DATA,
    VIP_ERROR_RDMAW_ABORT,
    VIP_ERROR_RDMAR_PROT,
    VIP_ERROR_COMP_PROT,
    VIP_ERROR_RDMA_TRANSPORT,
    VIP_ERROR_CATASTROPHIC
} VIP_ERROR_CODE;

typedef enum _VIP_RESOURCE_CODE {
    VIP_RESOURCE_NIC,
    VIP_RESOURCE_VI,
    VIP_RESOURCE_CQ,
    VIP_RESOURCE_DESCRIPTOR
} VIP_RESOURCE_CODE;

typedef struct _VIP_ERROR_DESCRIPTOR {
    VIP_NIC_HANDLE NicHandle;
    VIP_VI_HANDLE ViHandle;
    VIP_CQ_HANDLE CQHandle;
    VIP_DESCRIPTOR *DescriptorPtr;
    VIP_ULONG OpCode;
    VIP_RESOURCE_CODE ResourceCode;
    VIP_ERROR_CODE ErrorCode;
} VIP_ERROR_DESCRIPTOR;

/* ---- return codes -------------------------------------------------------- */
typedef enum {
    VIP_SUCCESS,
    VIP_NOT_DONE,
    VIP_INVALID_PARAMETER,
    VIP_ERROR_RESOURCE,
    VIP_TIMEOUT,
    VIP_REJECT,
    VIP_INVALID_RELIABILITY_LEVEL,
    VIP_INVALID_MTU,
    VIP_INVALID_QOS,
    VIP_INVALID_PTAG,
    VIP_INVALID_RDMAREAD,
    VIP_DESCRIPTOR_ERROR,
    VIP_INVALID_STATE,
    VIP_ERROR_NAMESERVICE,
    VIP_NO_MATCH,
/* Not in the spec; M-VIA's and Giganet's headers have them with these values
     * and programs switch on them.  A program that defines either as a macro
     * before including this header (as Global Arrays' ARMCI VIA port does for
     * headers without VIP_ERROR_NOT_SUPPORTED) keeps its own definition. */
#ifndef VIP_NOT_REACHABLE
    VIP_NOT_REACHABLE = 15,
#endif
#ifndef VIP_ERROR_NOT_SUPPORTED
    VIP_ERROR_NOT_SUPPORTED = 16,
#endif
} VIP_RETURN;

/* ---- system management ---------------------------------------------------- */
#define VIP_SMI_AUTODISCOVERY ((VIP_ULONG)1)

typedef struct {
    VIP_ULONG NumberOfHops;
    VIP_NET_ADDRESS **ADAddrArray;
    VIP_ULONG NumAdAddrs;
} VIP_AUTODISCOVERY_LIST;

/* ---- NIC ------------------------------------------------------------------ */
VIP_RETURN VipOpenNic(IN const VIP_CHAR *DeviceName, OUT VIP_NIC_HANDLE *NicHandle);
VIP_RETURN VipCloseNic(IN VIP_NIC_HANDLE NicHandle);
VIP_RETURN VipQueryNic(IN VIP_NIC_HANDLE NicHandle, OUT VIP_NIC_ATTRIBUTES *NicAttribs);

/* ---- protection tags and memory --------------------------------------------- */
VIP_RETURN VipCreatePtag(IN VIP_NIC_HANDLE NicHandle, OUT VIP_PROTECTION_HANDLE *Ptag);
VIP_RETURN VipDestroyPtag(IN VIP_NIC_HANDLE NicHandle, IN VIP_PROTECTION_HANDLE Ptag);
VIP_RETURN VipRegisterMem(IN VIP_NIC_HANDLE NicHandle, IN VIP_PVOID VirtualAddress, IN VIP_ULONG Length,
                          IN VIP_MEM_ATTRIBUTES *MemAttribs, OUT VIP_MEM_HANDLE *MemoryHandle);
VIP_RETURN VipDeregisterMem(IN VIP_NIC_HANDLE NicHandle, IN VIP_PVOID VirtualAddress, IN VIP_MEM_HANDLE MemoryHandle);
VIP_RETURN VipQueryMem(IN VIP_NIC_HANDLE NicHandle, IN VIP_PVOID Address, IN VIP_MEM_HANDLE MemHandle,
                       OUT VIP_MEM_ATTRIBUTES *MemAttribs);
VIP_RETURN VipSetMemAttributes(IN VIP_NIC_HANDLE NicHandle, IN VIP_PVOID Address, IN VIP_MEM_HANDLE MemHandle,
                               IN VIP_MEM_ATTRIBUTES *MemAttribs);

/* ---- VIs ---------------------------------------------------------------------- */
VIP_RETURN VipCreateVi(IN VIP_NIC_HANDLE NicHandle, IN VIP_VI_ATTRIBUTES *ViAttribs, IN VIP_CQ_HANDLE SendCQHandle,
                       IN VIP_CQ_HANDLE RecvCQHandle, OUT VIP_VI_HANDLE *ViHandle);
VIP_RETURN VipDestroyVi(IN VIP_VI_HANDLE ViHandle);
VIP_RETURN VipQueryVi(IN VIP_VI_HANDLE ViHandle, OUT VIP_VI_STATE *State, OUT VIP_VI_ATTRIBUTES *ViAttribs,
                      OUT VIP_BOOLEAN *ViSendQEmpty, OUT VIP_BOOLEAN *ViRecvQEmpty);
VIP_RETURN VipSetViAttributes(IN VIP_VI_HANDLE ViHandle, IN VIP_VI_ATTRIBUTES *ViAttribs);

/* ---- connection management: client/server ------------------------------------- */
VIP_RETURN VipConnectWait(IN VIP_NIC_HANDLE NicHandle, IN VIP_NET_ADDRESS *LocalAddr, IN VIP_ULONG Timeout,
                          OUT VIP_NET_ADDRESS *RemoteAddr, OUT VIP_VI_ATTRIBUTES *RemoteViAttribs,
                          OUT VIP_CONN_HANDLE *ConnHandle);
VIP_RETURN VipConnectAccept(IN VIP_CONN_HANDLE ConnHandle, IN VIP_VI_HANDLE ViHandle);
VIP_RETURN VipConnectReject(IN VIP_CONN_HANDLE ConnHandle);
VIP_RETURN VipConnectRequest(IN VIP_VI_HANDLE ViHandle, IN VIP_NET_ADDRESS *LocalAddr, IN VIP_NET_ADDRESS *RemoteAddr,
                             IN VIP_ULONG Timeout, OUT VIP_VI_ATTRIBUTES *RemoteViAttribs);
VIP_RETURN VipDisconnect(IN VIP_VI_HANDLE ViHandle);

/* ---- connection management: peer-to-peer -------------------------------------- */
VIP_RETURN VipConnectPeerRequest(IN VIP_VI_HANDLE ViHandle, IN VIP_NET_ADDRESS *LocalAddr,
                                 IN VIP_NET_ADDRESS *RemoteAddr, IN VIP_ULONG Timeout);
VIP_RETURN VipConnectPeerDone(IN VIP_VI_HANDLE ViHandle, OUT VIP_VI_ATTRIBUTES *RemoteViAttribs);
VIP_RETURN VipConnectPeerWait(IN VIP_VI_HANDLE ViHandle, OUT VIP_VI_ATTRIBUTES *RemoteViAttribs);

/* ---- data transfer ------------------------------------------------------------- */
VIP_RETURN VipPostSend(IN VIP_VI_HANDLE ViHandle, IN VIP_DESCRIPTOR *DescriptorPtr, IN VIP_MEM_HANDLE MemoryHandle);
VIP_RETURN VipSendDone(IN VIP_VI_HANDLE ViHandle, OUT VIP_DESCRIPTOR **DescriptorPtr);
VIP_RETURN VipSendWait(IN VIP_VI_HANDLE ViHandle, IN VIP_ULONG Timeout, OUT VIP_DESCRIPTOR **DescriptorPtr);
VIP_RETURN VipPostRecv(IN VIP_VI_HANDLE ViHandle, IN VIP_DESCRIPTOR *DescriptorPtr, IN VIP_MEM_HANDLE MemoryHandle);
VIP_RETURN VipRecvDone(IN VIP_VI_HANDLE ViHandle, OUT VIP_DESCRIPTOR **DescriptorPtr);
VIP_RETURN VipRecvWait(IN VIP_VI_HANDLE ViHandle, IN VIP_ULONG Timeout, OUT VIP_DESCRIPTOR **DescriptorPtr);

typedef void (*VIP_DESCRIPTOR_NOTIFY_HANDLER)(IN VIP_PVOID Context, IN VIP_NIC_HANDLE NicHandle,
                                              IN VIP_VI_HANDLE ViHandle, IN VIP_DESCRIPTOR *DescriptorPtr);
typedef void (*VIP_CQ_NOTIFY_HANDLER)(IN VIP_PVOID Context, IN VIP_NIC_HANDLE NicHandle, IN VIP_VI_HANDLE ViHandle,
                                      IN VIP_BOOLEAN RecvQueue);
typedef void (*VIP_ERROR_HANDLER)(IN VIP_PVOID Context, IN VIP_ERROR_DESCRIPTOR *ErrorDesc);
#ifndef VIPL_SPEC_NAMES_ONLY
/* Giganet cLAN's names for the two notify handler types. */
typedef VIP_DESCRIPTOR_NOTIFY_HANDLER VIP_VI_CALLBACK;
typedef VIP_CQ_NOTIFY_HANDLER VIP_CQ_CALLBACK;
#endif

/* One-shot: the handler runs once, on a provider thread, with the next completed
 * descriptor (removed from the queue) or CQ entry (removed from the CQ). */
VIP_RETURN VipSendNotify(IN VIP_VI_HANDLE ViHandle, IN VIP_PVOID Context, IN VIP_DESCRIPTOR_NOTIFY_HANDLER Handler);
VIP_RETURN VipRecvNotify(IN VIP_VI_HANDLE ViHandle, IN VIP_PVOID Context, IN VIP_DESCRIPTOR_NOTIFY_HANDLER Handler);

/* ---- completion queues --------------------------------------------------------- */
VIP_RETURN VipCreateCQ(IN VIP_NIC_HANDLE NicHandle, IN VIP_ULONG EntryCount, OUT VIP_CQ_HANDLE *CQHandle);
VIP_RETURN VipDestroyCQ(IN VIP_CQ_HANDLE CQHandle);
VIP_RETURN VipResizeCQ(IN VIP_CQ_HANDLE CQHandle, IN VIP_ULONG EntryCount);
VIP_RETURN VipCQDone(IN VIP_CQ_HANDLE CQHandle, OUT VIP_VI_HANDLE *ViHandle, OUT VIP_BOOLEAN *RecvQueue);
VIP_RETURN VipCQWait(IN VIP_CQ_HANDLE CQHandle, IN VIP_ULONG Timeout, OUT VIP_VI_HANDLE *ViHandle,
                     OUT VIP_BOOLEAN *RecvQueue);
VIP_RETURN VipCQNotify(IN VIP_CQ_HANDLE CQHandle, IN VIP_PVOID Context, IN VIP_CQ_NOTIFY_HANDLER Handler);

/* ---- errors, name service, management -------------------------------------------- */
VIP_RETURN VipErrorCallback(IN VIP_NIC_HANDLE NicHandle, IN VIP_PVOID Context, IN VIP_ERROR_HANDLER Handler);

VIP_RETURN VipNSInit(IN VIP_NIC_HANDLE NicHandle, IN VIP_PVOID NSInitInfo);
VIP_RETURN VipNSGetHostByName(IN VIP_NIC_HANDLE NicHandle, IN VIP_CHAR *Name, OUT VIP_NET_ADDRESS *Address,
                              IN VIP_ULONG NameIndex);
VIP_RETURN VipNSGetHostByAddr(IN VIP_NIC_HANDLE NicHandle, IN VIP_NET_ADDRESS *Address, OUT VIP_CHAR *Name,
                              IN OUT VIP_ULONG *NameLen);
VIP_RETURN VipNSShutdown(IN VIP_NIC_HANDLE NicHandle);

VIP_RETURN VipQuerySystemManagementInfo(IN VIP_NIC_HANDLE NicHandle, IN VIP_ULONG InfoType, OUT VIP_PVOID SysManInfo);

/* ---- viastack extensions (not in the spec; prefixed Vipx) ------------------------ */
/* Name of a VIP_RETURN code ("VIP_TIMEOUT"); never NULL. */
const char *VipxReturnString(VIP_RETURN rc);
/* Human-readable decoding of a descriptor Status word into buf; returns buf. */
const char *VipxStatusString(VIP_UINT32 status, char *buf, VIP_ULONG len);
/* This process's NIC address on a nicfw/verbs NIC as an integer rank, or -1. */
int VipxNicRank(VIP_NIC_HANDLE NicHandle);
/* Whether registering memory on this NIC pins the pages mapped at the time
 * (verbs: a real NIC's registration; the fake provider answers as one) rather
 * than naming an address range that cannot go stale (nicfw: a table entry the
 * firmware checks each transfer against).  A layer sizes its defaults by it and
 * keeps memory it registered mapped where it is true.  VIP_INVALID_PARAMETER
 * for a bad handle or a NULL Pins. */
VIP_RETURN VipxRegistrationPins(VIP_NIC_HANDLE NicHandle, VIP_BOOLEAN *Pins);
/* Drive the provider once without waiting (inline firmware step / CQ poll):
 * for programs that compute for long stretches and want one-sided traffic
 * aimed at them served.  Returns VIP_SUCCESS. */
VIP_RETURN VipxProgress(VIP_NIC_HANDLE NicHandle);
/* Memory for data buffers that the NIC moves cheaply (like ucp_mem_map): on
 * nicfw a shared-memory segment the peer's NIC maps once, so a bulk transfer
 * from or into it is one memcpy (docs/nicfw.md, "Data path"); on the other
 * providers page-aligned memory.  Zeroed and page aligned; register it with
 * VipRegisterMem as any memory.  VIP_INVALID_PARAMETER for a bad handle, a NULL
 * Address or Length 0; VIP_ERROR_RESOURCE when no memory is left. */
VIP_RETURN VipxAllocMem(VIP_NIC_HANDLE NicHandle, VIP_ULONG Length, VIP_PVOID *Address);
/* VipxAllocMem at a fixed address: the pages [Address, Address+Length) (Address
 * page aligned), for memory that must sit at the same address in every
 * process of a job (a Split-C heap).  The range is only reserved: a page
 * costs memory once it is touched, so a sparse heap of gigabytes is cheap.
 * Never replaces an existing mapping.  VIP_INVALID_PARAMETER for a bad handle,
 * a NULL or unaligned Address or Length 0; VIP_ERROR_RESOURCE when any page of
 * the range is already mapped or no memory is left. */
VIP_RETURN VipxAllocMemAt(VIP_NIC_HANDLE NicHandle, VIP_PVOID Address, VIP_ULONG Length);
/* Frees memory from VipxAllocMem or VipxAllocMemAt on this NIC (deregister it
 * first, free it before VipCloseNic).  VIP_INVALID_PARAMETER if Address is not
 * such memory. */
VIP_RETURN VipxFreeMem(VIP_NIC_HANDLE NicHandle, VIP_PVOID Address);

/* Connection private data and a connect that does not block (what libfabric's
 * connection model needs: fi_connect / fi_accept / fi_reject carry data, and
 * fi_connect returns at once; docs/vipl.md, "Connection extensions").
 *
 * Bytes of private data a connection request, accept or reject may carry.  On
 * verbs a request's data shares rdma_cm's 56 bytes with VIPL's own header and
 * the two discriminators: there Len + both discriminators (one over 20 bytes
 * counts 16) must not exceed 43 (docs/verbs.md); accepts and rejects carry 56
 * on every provider. */
#define VIPX_CM_DATA_MAX 56

/* VipConnectRequest that does not wait: sends the request with Len bytes of
 * private data (Data may be NULL when Len is 0) and returns.  VIP_SUCCESS: the
 * request is under way (VipQueryVi: VIP_STATE_CONNECT_PENDING).  Errors as
 * VipConnectRequest, plus VIP_INVALID_PARAMETER for Len > VIPX_CM_DATA_MAX or
 * Data NULL with Len > 0.  Timeout (ms, VIP_INFINITE) bounds the wait for the
 * answer, as for VipConnectRequest. */
VIP_RETURN VipxConnectRequestStart(VIP_VI_HANDLE ViHandle, VIP_NET_ADDRESS *LocalAddr, VIP_NET_ADDRESS *RemoteAddr,
                                   VIP_ULONG Timeout, const void *Data, VIP_ULONG Len);

/* Progress and result of VipxConnectRequestStart; never waits.
 *  VIP_NOT_DONE    still pending;
 *  VIP_SUCCESS     connected: RemoteViAttribs filled, the accept's private data
 *                  copied to Data (at most *Len bytes; *Len set to the length the
 *                  accept carried);
 *  VIP_REJECT      rejected: the reject's private data in Data/ *Len; VI idle again;
 *  VIP_TIMEOUT     no answer within Timeout; VI idle again;
 *  other errors    as VipConnectRequest (e.g. VIP_INVALID_RELIABILITY_LEVEL), VI idle;
 *  VIP_INVALID_STATE  no request was started on this VI (or its result was
 *                  already handed back).
 * RemoteViAttribs, Data and Len may be NULL. */
VIP_RETURN VipxConnectRequestDone(VIP_VI_HANDLE ViHandle, VIP_VI_ATTRIBUTES *RemoteViAttribs, void *Data,
                                  VIP_ULONG *Len);

/* VipConnectWait that also returns the request's private data (Data/ *Len as
 * above; may be NULL).  Timeout 0 polls: VIP_TIMEOUT at once when no request
 * is waiting. */
VIP_RETURN VipxConnectWaitData(VIP_NIC_HANDLE NicHandle, VIP_NET_ADDRESS *LocalAddr, VIP_ULONG Timeout,
                               VIP_NET_ADDRESS *RemoteAddr, VIP_VI_ATTRIBUTES *RemoteViAttribs,
                               VIP_CONN_HANDLE *ConnHandle, void *Data, VIP_ULONG *Len);

/* VipConnectAccept / VipConnectReject carrying Len bytes of private data to the
 * requester (VIP_INVALID_PARAMETER for Len > VIPX_CM_DATA_MAX or Data NULL with
 * Len > 0; the connection handle stays usable then). */
VIP_RETURN VipxConnectAcceptData(VIP_CONN_HANDLE ConnHandle, VIP_VI_HANDLE ViHandle, const void *Data, VIP_ULONG Len);
VIP_RETURN VipxConnectRejectData(VIP_CONN_HANDLE ConnHandle, const void *Data, VIP_ULONG Len);

#ifdef __cplusplus
}
#endif
#endif /* VIPL_H */
