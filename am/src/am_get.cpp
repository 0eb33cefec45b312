// am_get.cpp - AM-2's get transfer (AM_GetXferN): nbytes from the segment of
// the endpoint at translation index `dest`, at source_offset, into the
// caller's segment at dest_offset; then `handler` runs on the caller as a
// reply handler with buf = its segment + dest_offset (docs/am.md, "Get").
//
// It is a layer request the peer answers with a long reply: the requester
// sends kSysGet (a request, so it takes a credit like any request), and the
// peer's layer, judging the source against its current segment, sends the
// data back with the same RDMA-write reply AM_ReplyXfer uses.  A get thus
// costs a short request plus a long reply, and it works on every provider;
// an RDMA read would save the peer's send but needs the peer's segment
// registered for remote reads and a second completion path on the requester.
#include <cstring>

#include "am_internal.hpp"

namespace amvia {

namespace {
// The kSysGet payload.
struct GetDesc {
    uint64_t source_offset;
    uint64_t dest_offset;
    uint64_t nbytes;
    tag_t tag; // the requester's MAP tag, checked as a request's would be
    uint32_t handler;
    uint32_t reserved;
};

op_t get_opcode() { return AM_REQUEST_XFER_M; }
} // namespace

// The peer's side, from run_system_request: reply with the data, or return
// the request (EBADTAG, EBADSEGOFF, EBADLENGTH) to the requester's handler 0.
void serve_get(Token *t, const MsgHeader *m) {
    GetDesc d;
    if (m->nbytes < sizeof d) {
        send_system_reply(t, kSysReturned, uint32_t(EBADARGS) | uint32_t(get_opcode()) << 8);
        return;
    }
    std::memcpy(&d, msg_payload(const_cast<MsgHeader *>(m)), sizeof d);
    ep_t ep = t->ep;
    const tag_t etag = ep->tag;
    int status = 0;
    if (etag != AM_ALL && (etag == AM_NONE || etag != d.tag)) status = EBADTAG;
    else if (!ep->seg_registered || d.source_offset > ep->seglen) status = EBADSEGOFF;
    else if (d.nbytes > ep->seglen - d.source_offset) status = EBADLENGTH;
    if (status) {
        send_system_reply(t, kSysReturned, uint32_t(status) | uint32_t(get_opcode()) << 8);
        return;
    }
    // Answer as a request handler would: the token is live while the reply
    // is made, and polls it needs run replies but queue requests.
    void *const outer = ts.live_token;
    ts.live_token = t;
    ts.handler_depth++;
    const int rc =
        AMVIA_ReplyXfer(t, handler_t(d.handler), static_cast<uint8_t *>(ep->seg) + d.source_offset, size_t(d.nbytes),
                        uintptr_t(d.dest_offset), m->nargs, msg_args(const_cast<MsgHeader *>(m)));
    ts.handler_depth--;
    ts.live_token = outer;
    if (rc != AM_OK && !t->replied)
        send_system_reply(t, kSysReturned, uint32_t(EBADARGS) | uint32_t(get_opcode()) << 8);
}

} // namespace amvia

using namespace amvia;

extern "C" int AMVIA_GetXfer(ep_t ep, int dest, uintptr_t source_offset, handler_t h, uintptr_t dest_offset,
                             size_t nbytes, int nargs, const int32_t *args) {
    static const char *const call = "AM_GetXfer";
    if (g.init_count == 0) return AM_ERR_NOT_INIT;
    if (!valid_ep(ep)) return fail(AM_ERR_BAD_ARG, call, "ep is not an endpoint from AM_AllocateEndpoint");
    if (unsigned(nargs) > AMVIA_MAX_SHORT || (nargs && !args))
        return fail(AM_ERR_BAD_ARG, call, "%d arguments (0..%d, args not NULL)", nargs, AMVIA_MAX_SHORT);
    if (h == 0) return fail(AM_ERR_BAD_ARG, call, "handler 0 is the returned-message handler");
    if (nbytes > AMVIA_MAX_LONG)
        return fail(AM_ERR_BAD_ARG, call, "nbytes %zu exceeds AM_MaxLong() = %d; get it in pieces", nbytes,
                    AMVIA_MAX_LONG);
    if (unsigned(dest) >= ep->xlate.size())
        return fail(AM_ERR_BAD_ARG, call, "dest %d is outside the translation table [0, %zu)", dest, ep->xlate.size());
    if (ts.handler_depth) return fail(AM_ERR_RESOURCE, call, "called from a handler: handlers may not send requests");
    BundleGuard hold(ep->eb);
    const Translation &tr = ep->xlate[size_t(dest)];
    if (!tr.inuse) {
        local_error(ep, EBADENTRY, AM_REQUEST_XFER_M, h, nullptr, 0, nargs, args);
        return fail(AM_ERR_NOT_SENT, call, "translation %d is not mapped: AM_Map it first", dest);
    }
    const GetDesc d{uint64_t(source_offset), uint64_t(dest_offset), uint64_t(nbytes), tr.tag, h, 0};
    const int rc = send_system_request(ep, tr.link, kSysGet, args, nargs, &d, uint32_t(sizeof d));
    if (rc != AM_OK) return fail(rc, call, "the peer at index %d is unreachable", dest);
    return AM_OK;
}
