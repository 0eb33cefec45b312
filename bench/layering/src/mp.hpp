// mp.hpp - a small tagged message-passing layer over Fast Messages (fm.h),
// the role MPI-FM plays in Lauria, Pakin and Chien's FM 2.x paper [FM2],
// written twice:
//   mp_fm1.cpp  as an FM 1.x client: the message assembled in one contiguous
//               buffer (header copied in front of the payload) and sent
//               whole; received whole into a staging buffer, then copied
//               into the posted user buffer
//   mp_fm2.cpp  with FM 2.x's features: the header a separate piece
//               (gather), the payload received by FM_receive straight into
//               the posted user buffer once the header has named it (layer
//               interleaving; FM RDMA-writes large payloads there)
// Both: mp_irecv posts a receive (tag, buffer); a message that arrives with
// no receive posted for its tag is staged and copied when one is posted.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <vector>

namespace mp {

struct Layer {
    const char *name;
    // Sends len bytes to dest on tag (returns 0, or an FM error code).
    int (*send)(unsigned dest, int tag, const void *buf, unsigned len);
    // Posts a receive; returns its request number (>= 0) or -1 (too many posted).
    int (*irecv)(int tag, void *buf, unsigned maxlen);
    // Extracts until the request is complete; returns the message length.
    unsigned (*wait)(int req);
};
const Layer &fm1();
const Layer &fm2();
// Registers both variants' FM handlers (every process, before FM_initialize).
void register_handlers();

// The wire header both variants put in front of the payload.
struct Header {
    int32_t tag;
    uint32_t len;
};

// Posted receives and staged (unexpected) messages: the part of the layer
// both variants share.
class Matcher {
public:
    static constexpr int kMaxPosted = 64;
    struct Request {
        int tag = 0;
        uint8_t *buf = nullptr;
        uint32_t maxlen = 0, len = 0;
        bool used = false, done = false;
    };
    int post(int tag, void *buf, uint32_t maxlen) {
        int i = 0;
        while (i < kMaxPosted && req_[i].used) i++;
        if (i == kMaxPosted) return -1;
        Request &r = req_[i];
        r = Request{tag, static_cast<uint8_t *>(buf), maxlen, 0, true, false};
        for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it)
            if (it->tag == tag) {
                complete(r, it->data.data(), uint32_t(it->data.size()));
                unexpected_.erase(it);
                return i;
            }
        posted_.push_back(i);
        return i;
    }
    // The oldest posted receive for tag (taken off the posted list), or null.
    Request *match(int tag) {
        for (auto it = posted_.begin(); it != posted_.end(); ++it)
            if (req_[*it].tag == tag) {
                Request *r = &req_[*it];
                posted_.erase(it);
                return r;
            }
        return nullptr;
    }
    static void complete(Request &r, const void *data, uint32_t len) {
        r.len = len < r.maxlen ? len : r.maxlen;
        std::memcpy(r.buf, data, r.len);
        r.done = true;
    }
    // A message with no receive: staged.  Returns where its len bytes go.
    uint8_t *stage(int tag, uint32_t len) {
        unexpected_.push_back({tag, std::vector<uint8_t>(len)});
        return unexpected_.back().data.data();
    }
    Request &request(int i) { return req_[i]; }
    void release(int i) { req_[i].used = false; }

private:
    struct Staged {
        int tag;
        std::vector<uint8_t> data;
    };
    Request req_[kMaxPosted];
    std::deque<int> posted_;
    std::deque<Staged> unexpected_;
};

} // namespace mp
