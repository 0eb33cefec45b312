/*
 * vi_client_server - the VI client/server connection model.
 *
 *   vipl-run -n N vi_client_server          (N >= 2; rank 0 serves, the others are clients)
 *
 * The server waits for connection requests on the discriminator "vi-demo-service"
 * with VipConnectWait, looks at the attributes of the VI that asks (they come with
 * the request), and either rejects it (VipConnectReject) or accepts it onto a VI
 * of its own (VipConnectAccept).  Its rule: clients must offer a MaxTransferSize
 * of at least MIN_MTU bytes.
 *
 * Each client finds the server with the name service (VipNSGetHostByName "node0"),
 * first asks with a VI whose MaxTransferSize is too small (and is rejected with
 * VIP_REJECT), then with a proper VI, which is accepted.  The client says hello,
 * the server answers, the client says goodbye, and both disconnect.
 */
#include <unistd.h>

#include "vi_example.h"

#define SERVICE "vi-demo-service"
#define MIN_MTU 1024
#define MSG 128

struct endpoint {
    VIP_VI_HANDLE vi;
    VIP_DESCRIPTOR *desc; /* [0],[1] receives, [2] send */
    char *buf;            /* [0..MSG) recv 0, [MSG..2MSG) recv 1, [2MSG..3MSG) send */
    VIP_MEM_HANDLE mh;
};

static void post_recv(struct endpoint *e, int i) {
    VIP_DESCRIPTOR *d = &e->desc[i];
    memset(&d->CS, 0, sizeof d->CS);
    d->CS.SegCount = 1;
    d->CS.Length = MSG;
    d->DS[0].Local.Data.Address = e->buf + i * MSG;
    d->DS[0].Local.Handle = e->mh;
    d->DS[0].Local.Length = MSG;
    CHECK(VipPostRecv(e->vi, d, e->mh));
}

static void send_text(struct endpoint *e, const char *text) {
    VIP_DESCRIPTOR *d = &e->desc[2], *done;
    char *out = e->buf + 2 * MSG;
    snprintf(out, MSG, "%s", text);
    VIP_UINT32 len = (VIP_UINT32)strlen(out) + 1;
    memset(&d->CS, 0, sizeof d->CS);
    d->CS.SegCount = 1;
    d->CS.Length = len;
    d->DS[0].Local.Data.Address = out;
    d->DS[0].Local.Handle = e->mh;
    d->DS[0].Local.Length = len;
    CHECK(VipPostSend(e->vi, d, e->mh));
    CHECK(VipSendWait(e->vi, 10000, &done));
    check_status(done, "send");
}

static const char *recv_text(struct endpoint *e) {
    VIP_DESCRIPTOR *d;
    CHECK(VipRecvWait(e->vi, 10000, &d));
    check_status(d, "receive");
    char *text = d->DS[0].Local.Data.Address;
    text[MSG - 1] = '\0';
    return text;
}

/* A VI with the given MaxTransferSize, its descriptors and buffers in registered memory. */
static void make_endpoint(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE ptag, VIP_ULONG mtu, VIP_RELIABILITY_LEVEL level,
                          struct endpoint *e) {
    VIP_VI_ATTRIBUTES va = {level, mtu, NULL, ptag, VIP_FALSE, VIP_FALSE};
    VIP_MEM_ATTRIBUTES ma = {ptag, VIP_FALSE, VIP_FALSE};
    uint8_t *mem = alloc_pages(4096);
    e->desc = (VIP_DESCRIPTOR *)mem;
    e->buf = (char *)mem + 1024;
    CHECK(VipRegisterMem(nic, mem, 4096, &ma, &e->mh));
    CHECK(VipCreateVi(nic, &va, NULL, NULL, &e->vi));
}

static void free_endpoint(VIP_NIC_HANDLE nic, struct endpoint *e) {
    teardown_vi(e->vi);
    VipDeregisterMem(nic, e->desc, e->mh);
    free(e->desc);
}

static void serve(VIP_NIC_HANDLE nic, const VIP_NIC_ATTRIBUTES *attr, VIP_PROTECTION_HANDLE ptag,
                  VIP_RELIABILITY_LEVEL level, int clients) {
    VIP_NET_ADDRESS *local = make_address(attr->LocalNicAddress, attr->NicAddressLen, SERVICE);
    VIP_NET_ADDRESS *remote = make_address(attr->LocalNicAddress, 0, "");
    int accepted = 0, rejected = 0;
    while (accepted < clients) {
        VIP_VI_ATTRIBUTES client_attr;
        VIP_CONN_HANDLE conn;
        CHECK(VipConnectWait(nic, local, 20000, remote, &client_attr, &conn));
        if (client_attr.MaxTransferSize < MIN_MTU) {
            printf("server: rejected a client VI with MaxTransferSize %lu (< %d)\n",
                   (unsigned long)client_attr.MaxTransferSize, MIN_MTU);
            CHECK(VipConnectReject(conn));
            rejected++;
            continue;
        }
        struct endpoint e;
        make_endpoint(nic, ptag, client_attr.MaxTransferSize, level, &e);
        post_recv(&e, 0); /* hello */
        post_recv(&e, 1); /* goodbye */
        CHECK(VipConnectAccept(conn, e.vi));
        accepted++;
        const char *hello = recv_text(&e);
        printf("server: accepted; client says: %s\n", hello);
        int who = -1;
        sscanf(hello, "hello from rank %d", &who);
        char reply[MSG];
        snprintf(reply, sizeof reply, "welcome rank %d", who);
        send_text(&e, reply);
        printf("server: client says: %s\n", recv_text(&e));
        free_endpoint(nic, &e);
    }
    printf("server: %d accepted, %d rejected\n", accepted, rejected);
    free(local);
    free(remote);
}

static void client(VIP_NIC_HANDLE nic, const VIP_NIC_ATTRIBUTES *attr, VIP_PROTECTION_HANDLE ptag,
                   VIP_RELIABILITY_LEVEL level) {
    int rank = vipl_boot_rank();
    /* Find the server by name; the discriminator selects the service on that NIC. */
    VIP_NET_ADDRESS *server = make_address(attr->LocalNicAddress, 0, "");
    char name[] = "node0";
    CHECK(VipNSGetHostByName(nic, name, server, 0));
    server->DiscriminatorLen = (VIP_UINT16)strlen(SERVICE);
    memcpy(server->HostAddress + server->HostAddressLen, SERVICE, strlen(SERVICE));
    char disc[32];
    snprintf(disc, sizeof disc, "client-%d", rank);
    VIP_NET_ADDRESS *local = make_address(attr->LocalNicAddress, attr->NicAddressLen, disc);

    for (int attempt = 0; attempt < 2; attempt++) {
        VIP_ULONG mtu = attempt == 0 ? 64 : MIN_MTU * 4;
        if (mtu > attr->MaxTransferSize) mtu = attr->MaxTransferSize;
        struct endpoint e;
        make_endpoint(nic, ptag, mtu, level, &e);
        if (attempt == 1) post_recv(&e, 0); /* the server's welcome, posted before connecting */
        VIP_VI_ATTRIBUTES server_attr;
        VIP_RETURN rc;
        int tries = 0;
        do /* the server may be busy with another client: retry on timeout */
            rc = VipConnectRequest(e.vi, local, server, 500, &server_attr);
        while ((rc == VIP_TIMEOUT || rc == VIP_NO_MATCH) && ++tries < 60);
        if (attempt == 0) {
            if (rc != VIP_REJECT) die_rc("VipConnectRequest with a small MaxTransferSize (expected VIP_REJECT)", rc);
            printf("client %d: request with MaxTransferSize %lu rejected (%s)\n", rank, (unsigned long)mtu,
                   VipxReturnString(rc));
            free_endpoint(nic, &e);
            continue;
        }
        if (rc != VIP_SUCCESS) die_rc("VipConnectRequest", rc);
        char hello[MSG];
        snprintf(hello, sizeof hello, "hello from rank %d", rank);
        send_text(&e, hello);
        printf("client %d: server says: %s\n", rank, recv_text(&e));
        send_text(&e, "goodbye");
        free_endpoint(nic, &e);
    }
    free(server);
    free(local);
}

int main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    if (vipl_boot_init() != VIPL_BOOT_OK || vipl_boot_size() < 2) {
        fprintf(stderr,
                "vi_client_server needs two or more processes: "
                "vipl-run -n 2 vi_client_server\n");
        return 1;
    }
    VIP_NIC_HANDLE nic;
    VIP_NIC_ATTRIBUTES attr;
    VIP_PROTECTION_HANDLE ptag;
    CHECK(VipOpenNic(NULL, &nic));
    CHECK(VipQueryNic(nic, &attr));
    CHECK(VipNSInit(nic, NULL));
    CHECK(VipCreatePtag(nic, &ptag));
    VIP_RELIABILITY_LEVEL level = best_level(&attr);

    if (vipl_boot_rank() == 0) serve(nic, &attr, ptag, level, vipl_boot_size() - 1);
    else client(nic, &attr, ptag, level);
    fflush(stdout);

    vipl_boot_barrier();
    VipDestroyPtag(nic, ptag);
    VipNSShutdown(nic);
    VipCloseNic(nic);
    vipl_boot_finalize();
    return 0;
}
