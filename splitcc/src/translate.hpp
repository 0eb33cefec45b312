// translate.hpp - one preprocessed Split-C translation unit to C.
#pragma once

#include <string>

#include "diag.hpp"

namespace splitcc {

// Translates preprocessed Split-C (`text`, named `name` in messages) to C.
// Returns false if errors were reported (then `out` is not usable).
bool translate(const std::string &text, const std::string &name, std::string &out, Diag &diag);

} // namespace splitcc
