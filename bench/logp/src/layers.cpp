// layers.cpp - the layer registry (see layers.hpp).  Each layer's factory is
// compiled in only with its library (LOGP_HAVE_VIPL / _AM / _FM / _BIP / _SPLITC).
#include "layers.hpp"

namespace logp {

#ifdef LOGP_HAVE_VIPL
std::unique_ptr<Layer> make_vi_layer(const Job &job, const LayerOptions &opt);
ProviderFacts query_vipl_provider(const LayerOptions &opt);
#endif
#ifdef LOGP_HAVE_AM
std::unique_ptr<Layer> make_am_layer(const Job &job, const LayerOptions &opt, int layout);
#endif
#ifdef LOGP_HAVE_FM
std::unique_ptr<Layer> make_fm_layer(const Job &job, const LayerOptions &opt);
#endif
#ifdef LOGP_HAVE_BIP
std::unique_ptr<Layer> make_bip_layer(const Job &job, const LayerOptions &opt);
#endif
#ifdef LOGP_HAVE_SPLITC
std::unique_ptr<Layer> make_splitc_layer(const Job &job, const LayerOptions &opt);
#endif

std::vector<LayerFactory> layer_factories() {
    std::vector<LayerFactory> f;
    LayerFactory vi{"vi", false, "VIPL (vipl/) is not part of this build", nullptr};
#ifdef LOGP_HAVE_VIPL
    vi.built = true;
    vi.make = make_vi_layer;
#endif
    f.push_back(vi);
    LayerFactory am3{"am-v3", false, "AM (am/) is not part of this build", nullptr};
    LayerFactory am1{"am-v1", false, "AM (am/) is not part of this build", nullptr};
#ifdef LOGP_HAVE_AM
    am3.built = am1.built = true;
    am3.make = [](const Job &j, const LayerOptions &o) { return make_am_layer(j, o, 3); };
    am1.make = [](const Job &j, const LayerOptions &o) { return make_am_layer(j, o, 1); };
#endif
    f.push_back(am3);
    f.push_back(am1);
    LayerFactory fm{"fm", false, "Fast Messages (fm/) is not part of this build", nullptr};
#ifdef LOGP_HAVE_FM
    fm.built = true;
    fm.make = make_fm_layer;
#endif
    f.push_back(fm);
    LayerFactory bip{"bip", false, "BIP (bip/) is not part of this build", nullptr};
#ifdef LOGP_HAVE_BIP
    bip.built = true;
    bip.make = make_bip_layer;
#endif
    f.push_back(bip);
    // Split-C last: splitc_finalize ends the job's boot service (main.cpp).
    LayerFactory sc{"splitc", false, "Split-C (compiler-rt/) is not part of this build", nullptr};
#ifdef LOGP_HAVE_SPLITC
    sc.built = true;
    sc.make = make_splitc_layer;
#endif
    f.push_back(sc);
    return f;
}

ProviderFacts query_provider(const LayerOptions &opt) {
#ifdef LOGP_HAVE_VIPL
    return query_vipl_provider(opt);
#else
    (void)opt;
    return {"", "", "VIPL is not part of this build"};
#endif
}

} // namespace logp
