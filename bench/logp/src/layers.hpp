// layers.hpp - the layers logp knows, which of them this build contains, and
// how to bring one up.  A layer whose library was not built is listed with
// status "not built" and never measured (nothing is ever faked).
#pragma once

#include "job.hpp"
#include "layer.hpp"
#include "results.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace logp {

struct LayerOptions {
    std::string device; // VIPL NIC name; "" = $VIPL_PROVIDER / the default provider
};

struct LayerFactory {
    std::string id; // "vi", "am-v3", "am-v1", "fm", "bip", "splitc"
    bool built = false;
    std::string not_built; // why, when !built
    // Collective (both ranks); throws std::runtime_error naming the problem.
    std::function<std::unique_ptr<Layer>(const Job &, const LayerOptions &)> make;
};

std::vector<LayerFactory> layer_factories();

// Provider facts for the report header (opens and closes the NIC; empty
// strings when VIPL is not built or the NIC does not open).
struct ProviderFacts {
    std::string provider, device, error;
};
ProviderFacts query_provider(const LayerOptions &opt);

// Per-layer extras that only some layers have (Split-C's Figure 2 operations).
class SplitcOpsSource {
public:
    virtual ~SplitcOpsSource() = default;
    // Collective: the five operations (read, write, get, put, store) in us per op.
    virtual std::vector<SplitcOp> measure_ops(const Job &job, int iterations, int warmup) = 0;
};

} // namespace logp
