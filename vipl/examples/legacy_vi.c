/*
 * legacy_vi.c - a VI program written the way the public drivers of the late
 * 1990s were (iometer's VI clients, Global Arrays' ARMCI VIA port, MPICH-NT's
 * and Madeleine's VI drivers, against M-VIA or Giganet cLAN headers):
 *
 *   - opens the NIC by an M-VIA / cLAN device name ("/dev/via_lo" by default),
 *   - finds the server with VipNSGetHostByName(<its host name>, NameIndex),
 *   - zeroes the VI attributes (Ptag NULL) and registers memory with NULL
 *     attributes, trusting the NIC's default protection tag,
 *   - blocks a receive thread in VipRecvWait(VIP_INFINITE) before the receive
 *     it waits for is posted,
 *   - and uses the Giganet names: Control / Data[] descriptor members,
 *     VIP_VI_CALLBACK, VIP_LONG, VIP_NOT_REACHABLE, VIP_ERROR_NOT_SUPPORTED.
 *
 * Rank 0 serves, rank 1 connects; both run under vipl-run (the server's host
 * name is this host's, its rank is NameIndex 0 on it).  The client sends
 * ROUNDS messages, the server echoes each with its own mark; the client checks
 * every echo.  Prints "legacy_vi: N echoes verified" on the client.
 *
 *   vipl-run -n 2 legacy_vi [device]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vipl.h>

#define ROUNDS 100
#define MSG 256
#define TIMEOUT_MS 20000

static void check(VIP_RETURN rc, const char *what) {
    const char *name;
    if (rc == VIP_SUCCESS) return;
    switch (rc) { /* as the drivers did: their own table of names */
    case VIP_NOT_REACHABLE: name = "VIP_NOT_REACHABLE"; break;
    case VIP_ERROR_NOT_SUPPORTED: name = "VIP_ERROR_NOT_SUPPORTED"; break;
    default: name = VipxReturnString(rc); break;
    }
    fprintf(stderr, "legacy_vi: %s failed: %s\n", what, name);
    exit(1);
}

/* Descriptor i and buffer i of one registered block (Giganet's layout names). */
struct block {
    char *base;
    VIP_MEM_HANDLE mh;
};
static VIP_DESCRIPTOR *desc(struct block *b, int i) { return (VIP_DESCRIPTOR *)(b->base + 64 * i); }
static char *buf(struct block *b, int i) { return b->base + 4096 + MSG * i; }

static void fill(struct block *b, int i, VIP_ULONG len) {
    VIP_DESCRIPTOR *d = desc(b, i);
    memset(d, 0, sizeof *d);
    d->Control.Control = VIP_CONTROL_OP_SENDRECV;
    d->Control.SegCount = 1;
    d->Control.Length = (VIP_UINT32)len;
    d->Data[0].Data.Address = buf(b, i);
    d->Data[0].Handle = b->mh;
    d->Data[0].Length = (VIP_UINT32)len;
}

/* The receive thread of cLAN-era drivers: it waits before anything is posted. */
struct waiter {
    VIP_VI_HANDLE vi;
    VIP_DESCRIPTOR *got;
    VIP_RETURN rc;
};
static void *receive_thread(void *arg) {
    struct waiter *w = arg;
    w->rc = VipRecvWait(w->vi, VIP_INFINITE, &w->got);
    return NULL;
}

static int notified;
static void on_send(VIP_PVOID ctx, VIP_NIC_HANDLE nic, VIP_VI_HANDLE vi, VIP_DESCRIPTOR *d) {
    (void)ctx;
    (void)nic;
    (void)vi;
    (void)d;
    __atomic_store_n(&notified, 1, __ATOMIC_RELEASE);
}

int main(int argc, char **argv) {
    const char *device = argc > 1 ? argv[1] : "/dev/via_lo";
    const char *rank_env = getenv("VIASTACK_RANK");
    const int rank = rank_env ? atoi(rank_env) : 0;
    VIP_NIC_HANDLE nic;
    VIP_NIC_ATTRIBUTES na;
    VIP_VI_ATTRIBUTES va, remote_va;
    VIP_VI_HANDLE vi;
    struct block b;
    char host[256], back[256];
    VIP_ULONG back_len = sizeof back;
    VIP_LONG echoes = 0;
    VIP_VI_CALLBACK cb = on_send;
    /* room for a host address and a short discriminator, as the drivers sized it */
    union {
        VIP_NET_ADDRESS a;
        char room[VIP_NET_ADDRESS_SIZE(VIP_MAX_HOST_ADDRESS_LEN, 16)];
    } local, remote;
    const char disc[] = "legacy";
    int i;

    check(VipOpenNic(device, &nic), "VipOpenNic");
    check(VipQueryNic(nic, &na), "VipQueryNic");
    check(VipNSInit(nic, NULL), "VipNSInit");

    memset(&va, 0, sizeof va); /* Ptag NULL: the NIC's default tag */
    va.ReliabilityLevel = VIP_SERVICE_RELIABLE_DELIVERY;
    va.MaxTransferSize = MSG;
    check(VipCreateVi(nic, &va, NULL, NULL, &vi), "VipCreateVi (NULL Ptag)");

    if (posix_memalign((void **)&b.base, 4096, 4096 + 2 * MSG)) return 1;
    memset(b.base, 0, 4096 + 2 * MSG);
    check(VipRegisterMem(nic, b.base, 4096 + 2 * MSG, NULL, &b.mh), "VipRegisterMem (NULL attributes)");

    /* Addresses from host names, as GA's armci_make_netaddr does. */
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = 0;
    check(VipNSGetHostByName(nic, host, &local.a, (VIP_ULONG)rank), "VipNSGetHostByName(this host, rank)");
    check(VipNSGetHostByName(nic, host, &remote.a, 0), "VipNSGetHostByName(server host)");
    check(VipNSGetHostByAddr(nic, &remote.a, back, &back_len), "VipNSGetHostByAddr");
    local.a.DiscriminatorLen = remote.a.DiscriminatorLen = sizeof disc - 1;
    memcpy(local.a.HostAddress + local.a.HostAddressLen, disc, sizeof disc - 1);
    memcpy(remote.a.HostAddress + remote.a.HostAddressLen, disc, sizeof disc - 1);

    if (rank == 0) {
        VIP_CONN_HANDLE conn;
        struct waiter w = {vi, NULL, VIP_NOT_DONE};
        pthread_t t;
        /* Receive thread first, blocked on an empty queue ... */
        if (pthread_create(&t, NULL, receive_thread, &w)) return 1;
        check(VipConnectWait(nic, &local.a, TIMEOUT_MS, &remote.a, &remote_va, &conn), "VipConnectWait");
        /* ... then the first receive is posted from this thread. */
        fill(&b, 1, MSG);
        check(VipPostRecv(vi, desc(&b, 1), b.mh), "VipPostRecv");
        check(VipConnectAccept(conn, vi), "VipConnectAccept");
        for (i = 0; i < ROUNDS; i++) {
            VIP_DESCRIPTOR *d;
            if (i > 0) {
                check(VipRecvWait(vi, VIP_INFINITE, &w.got), "VipRecvWait");
            } else {
                pthread_join(t, NULL);
                check(w.rc, "VipRecvWait(VIP_INFINITE) on the receive thread");
            }
            if (w.got != desc(&b, 1) || (w.got->Control.Status & VIP_STATUS_ERROR_MASK)) {
                fprintf(stderr, "legacy_vi: bad receive %d\n", i);
                return 1;
            }
            memcpy(buf(&b, 0), buf(&b, 1), MSG);
            buf(&b, 0)[0] = 'S';
            /* the next receive goes up before the echo: the client's next message
             * may follow the echo at once (a reliable VI breaks on a missing
             * receive) -- and after the last one it catches the disconnect */
            fill(&b, 1, MSG);
            check(VipPostRecv(vi, desc(&b, 1), b.mh), "VipPostRecv");
            fill(&b, 0, MSG);
            check(VipPostSend(vi, desc(&b, 0), b.mh), "VipPostSend");
            check(VipSendWait(vi, TIMEOUT_MS, &d), "VipSendWait");
        }
        /* the client disconnects; wait for it before tearing down */
        {
            VIP_DESCRIPTOR *d;
            VipRecvWait(vi, TIMEOUT_MS, &d);
        }
        printf("legacy_vi: server answered %d messages from %s\n", ROUNDS, back);
    } else {
        VIP_RETURN rc;
        int tries = 0;
        fill(&b, 1, MSG);
        check(VipPostRecv(vi, desc(&b, 1), b.mh), "VipPostRecv");
        /* GA's via_connect_client: retry while the server is not waiting yet */
        while ((rc = VipConnectRequest(vi, &local.a, &remote.a, 1000, &remote_va)) != VIP_SUCCESS) {
            if ((rc != VIP_NO_MATCH && rc != VIP_TIMEOUT && rc != VIP_REJECT) || ++tries > 30)
                check(rc, "VipConnectRequest");
            usleep(10000);
        }
        for (i = 0; i < ROUNDS; i++) {
            VIP_DESCRIPTOR *d;
            int k;
            /* the first send completes through its notify handler: wait for it
             * before the descriptor is used again */
            while (i == 1 && !__atomic_load_n(&notified, __ATOMIC_ACQUIRE)) usleep(1000);
            for (k = 0; k < MSG; k++) buf(&b, 0)[k] = (char)('a' + (i + k) % 26);
            fill(&b, 0, MSG);
            if (i == 0) check(VipSendNotify(vi, NULL, cb), "VipSendNotify");
            check(VipPostSend(vi, desc(&b, 0), b.mh), "VipPostSend");
            if (i > 0) check(VipSendWait(vi, TIMEOUT_MS, &d), "VipSendWait");
            check(VipRecvWait(vi, VIP_INFINITE, &d), "VipRecvWait");
            if (d != desc(&b, 1) || d->Control.Length != MSG || buf(&b, 1)[0] != 'S') {
                fprintf(stderr, "legacy_vi: bad echo %d\n", i);
                return 1;
            }
            for (k = 1; k < MSG; k++)
                if (buf(&b, 1)[k] != (char)('a' + (i + k) % 26)) {
                    fprintf(stderr, "legacy_vi: echo %d differs at byte %d\n", i, k);
                    return 1;
                }
            echoes++;
            if (i + 1 < ROUNDS) {
                fill(&b, 1, MSG);
                check(VipPostRecv(vi, desc(&b, 1), b.mh), "VipPostRecv");
            }
        }
        printf("legacy_vi: %ld echoes verified (server %s)\n", (long)echoes, back);
        check(VipDisconnect(vi), "VipDisconnect");
    }
    VipDisconnect(vi);
    {
        VIP_DESCRIPTOR *d;
        while (VipRecvDone(vi, &d) == VIP_SUCCESS || VipSendDone(vi, &d) == VIP_SUCCESS) {}
    }
    check(VipDestroyVi(vi), "VipDestroyVi");
    check(VipDeregisterMem(nic, b.base, b.mh), "VipDeregisterMem");
    check(VipNSShutdown(nic), "VipNSShutdown");
    check(VipCloseNic(nic), "VipCloseNic");
    free(b.base);
    return 0;
}
