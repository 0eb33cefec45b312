// emit.hpp - writes the translated C.  Plain C is copied token for token with
// line markers pointing at the Split-C source; dirty nodes (see ast.hpp) are
// written as calls of the runtime ABI in splitc_rt.h.
#pragma once

#include <string>
#include <vector>

#include "ast.hpp"
#include "lexer.hpp"

namespace splitcc {

std::string emit_c(Node *unit, const std::vector<Token> &toks, Diag &diag);

} // namespace splitcc
