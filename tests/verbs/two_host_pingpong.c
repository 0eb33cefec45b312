/*
 * two_host_pingpong - a VI ping-pong between two hosts with no launcher and no
 * PMIx: the client finds the server through the VIPL name service.
 *
 *   server:  VIPL_VERBS_PORT=18515 two_host_pingpong server [iterations]
 *   client:  two_host_pingpong client HOST:18515 [iterations] [bytes]
 * (both sides must be given the same number of iterations, default 1000)
 *
 * The server listens on the given rdma_cm port (VIPL_VERBS_PORT) and accepts one
 * connection with discriminator "pingpong"; the client resolves HOST:PORT with
 * VipNSGetHostByName, connects (retrying until the server is up), sends
 * `iterations` messages carrying a round counter and checks every echo.  The
 * client prints "RTT/2 = <median> ns" and "pingpong: <n> round trips OK".
 * The device comes from VipOpenNic(NULL): VIPL_PROVIDER=verbs VIPL_VERBS_DEVICE=rxe1.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vipl.h"

#define WAIT_MS 20000
#define MAX_BYTES 4096

static VIP_NIC_HANDLE nic;
static VIP_VI_HANDLE vi;
static uint8_t *mem; /* [0,4K) send data, [4K,8K) receive data, [8K,...) descriptors */
static VIP_MEM_HANDLE mh;

static void die(const char *what, VIP_RETURN rc) {
    fprintf(stderr, "two_host_pingpong: %s: %s\n", what, VipxReturnString(rc));
    exit(1);
}

static VIP_DESCRIPTOR *desc(int i) { return (VIP_DESCRIPTOR *)(mem + 8192 + 64 * i); }

static void post_recv(void) {
    VIP_DESCRIPTOR *d = desc(0);
    memset(d, 0, 64);
    d->CS.SegCount = 1;
    d->DS[0].Local.Data.Address = mem + 4096;
    d->DS[0].Local.Handle = mh;
    d->DS[0].Local.Length = MAX_BYTES;
    VIP_RETURN rc = VipPostRecv(vi, d, mh);
    if (rc != VIP_SUCCESS) die("VipPostRecv", rc);
}

static void send_and_wait(uint32_t len) {
    VIP_DESCRIPTOR *d = desc(1), *done = NULL;
    memset(d, 0, 64);
    d->CS.SegCount = 1;
    d->CS.Length = len;
    d->DS[0].Local.Data.Address = mem;
    d->DS[0].Local.Handle = mh;
    d->DS[0].Local.Length = len;
    VIP_RETURN rc = VipPostSend(vi, d, mh);
    if (rc != VIP_SUCCESS) die("VipPostSend", rc);
    while ((rc = VipSendDone(vi, &done)) == VIP_NOT_DONE) {}
    if (rc != VIP_SUCCESS || (done->CS.Status & VIP_STATUS_ERROR_MASK)) die("send", rc);
}

static VIP_DESCRIPTOR *recv_spin(void) {
    VIP_DESCRIPTOR *d = NULL;
    VIP_RETURN rc;
    while ((rc = VipRecvDone(vi, &d)) == VIP_NOT_DONE) {}
    if (rc != VIP_SUCCESS || (d->CS.Status & VIP_STATUS_ERROR_MASK)) die("receive", rc);
    return d;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 2 || (strcmp(argv[1], "server") && (strcmp(argv[1], "client") || argc < 3))) {
        fprintf(stderr,
                "usage: two_host_pingpong server [iterations] | "
                "client HOST:PORT [iterations] [bytes]\n");
        return 2;
    }
    const int server = strcmp(argv[1], "server") == 0;
    const int first = server ? 2 : 3; /* the client has HOST:PORT first */
    long iters = argc > first ? atol(argv[first]) : 1000;
    long bytes = argc > first + 1 ? atol(argv[first + 1]) : 16;
    if (iters < 1 || bytes < 4 || bytes > MAX_BYTES) {
        fprintf(stderr, "two_host_pingpong: iterations >= 1, 4 <= bytes <= %d\n", MAX_BYTES);
        return 2;
    }
    VIP_RETURN rc = VipOpenNic(NULL, &nic);
    if (rc != VIP_SUCCESS) die("VipOpenNic", rc);
    VIP_NIC_ATTRIBUTES na;
    VipQueryNic(nic, &na);
    VIP_PROTECTION_HANDLE tag;
    if ((rc = VipCreatePtag(nic, &tag)) != VIP_SUCCESS) die("VipCreatePtag", rc);
    mem = aligned_alloc(4096, 16384);
    memset(mem, 0, 16384);
    VIP_MEM_ATTRIBUTES ma = {tag, VIP_FALSE, VIP_FALSE};
    if ((rc = VipRegisterMem(nic, mem, 16384, &ma, &mh)) != VIP_SUCCESS) die("VipRegisterMem", rc);
    VIP_VI_ATTRIBUTES va = {VIP_SERVICE_RELIABLE_DELIVERY, MAX_BYTES, NULL, tag, VIP_FALSE, VIP_FALSE};
    if ((rc = VipCreateVi(nic, &va, NULL, NULL, &vi)) != VIP_SUCCESS) die("VipCreateVi", rc);
    post_recv(); /* before connecting: the first ping never finds the queue empty */

    _Alignas(8) uint8_t lbuf[VIP_NET_ADDRESS_SIZE(64, 16)], rbuf[VIP_NET_ADDRESS_SIZE(64, 16)];
    VIP_NET_ADDRESS *local = (VIP_NET_ADDRESS *)lbuf, *remote = (VIP_NET_ADDRESS *)rbuf;
    local->HostAddressLen = na.NicAddressLen;
    memcpy(local->HostAddress, na.LocalNicAddress, na.NicAddressLen);
    VIP_VI_ATTRIBUTES ra;
    if (server) {
        local->DiscriminatorLen = 8;
        memcpy(local->HostAddress + local->HostAddressLen, "pingpong", 8);
        VIP_CONN_HANDLE conn;
        if ((rc = VipConnectWait(nic, local, 60000, remote, &ra, &conn)) != VIP_SUCCESS) die("VipConnectWait", rc);
        if ((rc = VipConnectAccept(conn, vi)) != VIP_SUCCESS) die("VipConnectAccept", rc);
        for (long i = 0; i < iters; i++) {
            VIP_DESCRIPTOR *d = recv_spin();
            uint32_t len = d->CS.Length;
            memcpy(mem, mem + 4096, len);
            post_recv();
            send_and_wait(len);
        }
        printf("server: echoed %ld messages\n", iters);
    } else {
        local->DiscriminatorLen = 6;
        memcpy(local->HostAddress + local->HostAddressLen, "client", 6);
        if ((rc = VipNSGetHostByName(nic, argv[2], remote, 0)) != VIP_SUCCESS) die("VipNSGetHostByName", rc);
        remote->DiscriminatorLen = 8;
        memcpy(remote->HostAddress + remote->HostAddressLen, "pingpong", 8);
        uint64_t t0 = now_ns();
        do { /* the server may still be starting */
            rc = VipConnectRequest(vi, local, remote, 2000, &ra);
        } while (rc == VIP_TIMEOUT && now_ns() - t0 < 60ull * 1000000000u);
        if (rc != VIP_SUCCESS) die("VipConnectRequest", rc);
        uint64_t *rtt = malloc(sizeof(uint64_t) * (size_t)iters);
        for (long i = 0; i < iters; i++) {
            uint32_t tagv = (uint32_t)i * 2654435761u;
            memcpy(mem, &tagv, 4);
            memset(mem + 4, (int)(i & 0xff), (size_t)bytes - 4);
            uint64_t a = now_ns();
            send_and_wait((uint32_t)bytes);
            VIP_DESCRIPTOR *d = recv_spin();
            rtt[i] = now_ns() - a;
            uint32_t got;
            memcpy(&got, mem + 4096, 4);
            if (d->CS.Length != (uint32_t)bytes || got != tagv || mem[4096 + bytes - 1] != (uint8_t)(i & 0xff)) {
                fprintf(stderr, "two_host_pingpong: round %ld: bad echo\n", i);
                return 1;
            }
            post_recv();
        }
        qsort(rtt, (size_t)iters, sizeof *rtt, cmp_u64);
        printf("RTT/2 = %llu ns\n", (unsigned long long)(rtt[iters / 2] / 2));
        printf("pingpong: %ld round trips OK\n", iters);
        free(rtt);
    }
    VipDisconnect(vi);
    VIP_DESCRIPTOR *d;
    while (VipSendDone(vi, &d) == VIP_SUCCESS) {}
    while (VipRecvDone(vi, &d) == VIP_SUCCESS) {}
    VipDestroyVi(vi);
    VipDeregisterMem(nic, mem, mh);
    VipDestroyPtag(nic, tag);
    VipCloseNic(nic);
    return 0;
}
