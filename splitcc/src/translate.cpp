// translate.cpp - lex, parse (with types), emit.
#include "translate.hpp"

#include "emit.hpp"
#include "lexer.hpp"
#include "parser.hpp"

namespace splitcc {

bool translate(const std::string &text, const std::string &name, std::string &out, Diag &diag) {
    try {
        std::vector<Token> toks = lex(text, name, diag);
        Types types;
        Parser parser(toks, types, diag);
        Node *unit = parser.parse_unit();
        if (diag.errors) return false;
        out = emit_c(unit, parser.tokens(), diag);
        return diag.errors == 0;
    } catch (TooManyErrors &) { return false; }
}

} // namespace splitcc
